package icmpecho

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

var testCookie = [cookieLen]byte{1, 2, 3, 4, 5, 6, 7, 8}

// reply builds an echo reply as a host returns it (v6: without the
// checksum, which the kernel checks).
func reply(t testing.TB, v6 bool, id, seq int, data []byte) []byte {
	t.Helper()
	m := icmp.Message{Type: ipv4.ICMPTypeEchoReply, Body: &icmp.Echo{ID: id, Seq: seq, Data: data}}
	if v6 {
		m.Type = ipv6.ICMPTypeEchoReply
	}
	b, err := m.Marshal(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withIPv4Header puts an IPv4 header (with options of opts bytes) before
// an ICMP message, as a raw IPv4 socket reads it.
func withIPv4Header(msg []byte, opts int) []byte {
	h := make([]byte, 20+opts)
	h[0] = 0x40 | byte((20+opts)/4)
	binary.BigEndian.PutUint16(h[2:], uint16(len(h)+len(msg)))
	h[9] = protoICMP
	return append(h, msg...)
}

func TestRequestAndReply(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		b, err := request(v6, 0x1234, 0xfffe, testCookie, 56)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 8+56 {
			t.Fatalf("request of %d bytes", len(b))
		}
		if !v6 && checksum(b) != 0 {
			t.Error("an IPv4 request's checksum is wrong")
		}
		if _, err := decodeReply(b, v6); !errors.Is(err, errNotReply) {
			t.Errorf("v6 %v: a request decoded as a reply: %v", v6, err)
		}
		m, err := icmp.ParseMessage(map[bool]int{false: protoICMP, true: protoICMPv6}[v6], b)
		if err != nil {
			t.Fatal(err)
		}
		data := m.Body.(*icmp.Echo).Data
		cases := map[string][]byte{"bare": reply(t, v6, 0x1234, 0xfffe, data)}
		if !v6 {
			cases["ip header"] = withIPv4Header(cases["bare"], 0)
			cases["ip options"] = withIPv4Header(cases["bare"], 8)
			cases["padding"] = append(withIPv4Header(cases["bare"], 0), 0, 0, 0)
		}
		for name, in := range cases {
			r, err := decodeReply(in, v6)
			if err != nil || r.id != 0x1234 || r.seq != 0xfffe || !r.ours(testCookie) || !bytes.Equal(r.data, data) {
				t.Errorf("v6 %v, %s: %+v, %v", v6, name, r, err)
			}
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := reply(t, false, 1, 2, testCookie[:])
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff
	badCode := reply(t, false, 1, 2, testCookie[:])
	badCode[1] = 3
	binary.BigEndian.PutUint16(badCode[2:], 0)
	binary.BigEndian.PutUint16(badCode[2:], checksum(badCode))
	tests := []struct {
		name string
		in   []byte
		v6   bool
		want error
	}{
		{"empty", nil, false, errTruncated},
		{"short", good[:5], false, errTruncated},
		{"short v6", []byte{129, 0, 0}, true, errTruncated},
		{"header only", withIPv4Header(nil, 0), false, errTruncated},
		{"ihl too small", append([]byte{0x41}, good...), false, errTruncated},
		{"ihl past the end", []byte{0x4f, 0, 0, 0}, false, errTruncated},
		{"checksum", corrupt, false, errChecksum},
		{"code", badCode, false, errNotReply},
		{"request", reply(t, true, 1, 2, nil)[:0:0], true, errTruncated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeReply(tc.in, tc.v6); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	if (echoReply{data: testCookie[:4]}).ours(testCookie) {
		t.Error("a short reply's data passed as the cookie")
	}
}

// FuzzDecodeReply: a reply decoder given anything neither panics nor
// returns data it did not receive.
func FuzzDecodeReply(f *testing.F) {
	f.Add(reply(f, false, 7, 9, testCookie[:]), false)
	f.Add(withIPv4Header(reply(f, false, 7, 9, testCookie[:]), 4), false)
	f.Add(reply(f, true, 7, 9, append(testCookie[:], 0xaa)), true)
	f.Add([]byte{0x45, 0, 0, 0x14}, false)
	f.Add([]byte{0x4f}, false)
	f.Fuzz(func(t *testing.T, b []byte, v6 bool) {
		r, err := decodeReply(b, v6)
		if err != nil {
			return
		}
		if len(r.data) > len(b) || r.id < 0 || r.id > 0xffff || r.seq < 0 || r.seq > 0xffff {
			t.Fatalf("decoded %+v from %d bytes", r, len(b))
		}
		if !v6 && b[0]>>4 != 4 && checksum(b) != 0 {
			t.Fatal("an IPv4 reply with a bad checksum passed")
		}
	})
}
