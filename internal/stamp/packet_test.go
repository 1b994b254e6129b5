package stamp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// vectorKey is the HMAC key of the authenticated test vectors: 00 01 ... 1f.
var vectorKey = func() []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}()

// readVector reads a hand-built packet of testdata: hex, with a comment
// after # on each line.
func readVector(t testing.TB, name string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(src), "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// The vectors' times: 2026-11-26T03:00:00Z and fractions of it.
var vectorTime = time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)

func at(d time.Duration, f Format) Timestamp { return NewTimestamp(vectorTime.Add(d), f) }

var (
	syncedNTP   = ErrorEstimate{Synchronized: true, Format: NTP, Scale: 22, Multiplier: 1}
	unsyncedPTP = ErrorEstimate{Format: PTP, Multiplier: 1}
	padding     = []byte("wanlab-stamp-padding")
)

var senderVectors = []struct {
	file string
	key  []byte
	want SenderPacket
}{
	{"sender-unauth-ntp.hex", nil, SenderPacket{Seq: 42, Timestamp: at(500*time.Millisecond, NTP), ErrorEstimate: syncedNTP}},
	{"sender-unauth-ptp-padded.hex", nil, SenderPacket{Seq: 7, Timestamp: at(123456, PTP), ErrorEstimate: unsyncedPTP, Padding: padding}},
	{"sender-auth-ntp.hex", vectorKey, SenderPacket{Seq: 42, Timestamp: at(500*time.Millisecond, NTP), ErrorEstimate: syncedNTP}},
}

var reflectorVectors = []struct {
	file string
	key  []byte
	want ReflectorPacket
}{
	{"reflector-unauth-ntp.hex", nil, ReflectorPacket{
		Seq: 5, Timestamp: at(750*time.Millisecond, NTP), ErrorEstimate: syncedNTP, ReceiveTimestamp: at(625*time.Millisecond, NTP),
		SenderSeq: 42, SenderTimestamp: at(500*time.Millisecond, NTP), SenderErrorEstimate: syncedNTP, SenderTTL: 61}},
	{"reflector-unauth-ptp-padded.hex", nil, ReflectorPacket{
		Seq: 7, Timestamp: at(200000, PTP), ErrorEstimate: unsyncedPTP, ReceiveTimestamp: at(100000, PTP),
		SenderSeq: 7, SenderTimestamp: at(123456, PTP), SenderErrorEstimate: unsyncedPTP, SenderTTL: 255, Padding: padding}},
	{"reflector-auth-ntp.hex", vectorKey, ReflectorPacket{
		Seq: 5, Timestamp: at(750*time.Millisecond, NTP), ErrorEstimate: syncedNTP, ReceiveTimestamp: at(625*time.Millisecond, NTP),
		SenderSeq: 42, SenderTimestamp: at(500*time.Millisecond, NTP), SenderErrorEstimate: syncedNTP, SenderTTL: 61}},
}

// TestVectors checks each hand-built packet both ways: encoding its
// fields gives its bytes, decoding its bytes gives its fields.
func TestVectors(t *testing.T) {
	for _, v := range senderVectors {
		checkVector(t, v.file, v.key, v.want, DecodeSender)
	}
	for _, v := range reflectorVectors {
		checkVector(t, v.file, v.key, v.want, DecodeReflector)
	}
}

// appender is a packet kind with its public encoding.
type appender interface {
	packet
	Append(dst, key []byte) ([]byte, error)
}

func checkVector[P appender](t *testing.T, file string, key []byte, want P, decode func(b, key []byte) (P, error)) {
	t.Run(file, func(t *testing.T) {
		wire := readVector(t, file)
		if n := BaseLenOf(key) + len(want.padding()); len(wire) != n {
			t.Fatalf("the vector has %d octets, want %d", len(wire), n)
		}
		got, err := want.Append(nil, key)
		if err != nil || !bytes.Equal(got, wire) {
			t.Fatalf("encoded: %v\n%x\nwant\n%x", err, got, wire)
		}
		p, err := decode(wire, key)
		if err != nil || !reflect.DeepEqual(p, want) {
			t.Fatalf("decoded %+v, %v; want %+v", p, err, want)
		}
	})
}

// The vectors' timestamps read back as the times they were made of.
func TestVectorTimes(t *testing.T) {
	p, err := DecodeReflector(readVector(t, "reflector-unauth-ntp.hex"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ts   Timestamp
		f    Format
		want time.Duration
	}{{p.SenderTimestamp, NTP, 500 * time.Millisecond}, {p.ReceiveTimestamp, NTP, 625 * time.Millisecond}, {p.Timestamp, NTP, 750 * time.Millisecond}} {
		if got, err := c.ts.Time(c.f); err != nil || !got.Equal(vectorTime.Add(c.want)) {
			t.Errorf("%#x: %v %v, want %v", uint64(c.ts), got, err, vectorTime.Add(c.want))
		}
	}
	q, err := DecodeSender(readVector(t, "sender-unauth-ptp-padded.hex"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := q.Timestamp.Time(q.ErrorEstimate.Format); !got.Equal(vectorTime.Add(123456)) {
		t.Errorf("PTP timestamp: %v", got)
	}
}

// Bad packets are refused with their errors, and MBZ fields are ignored
// on receipt (RFC 8762: zeroed on transmission, ignored on receipt).
func TestDecodeErrors(t *testing.T) {
	unauth := readVector(t, "sender-unauth-ntp.hex")
	auth := readVector(t, "sender-auth-ntp.hex")
	refl := readVector(t, "reflector-auth-ntp.hex")
	with := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	ptpBadNanos := bytes.Clone(readVector(t, "sender-unauth-ptp-padded.hex"))
	copy(ptpBadNanos[8:12], []byte{0x3b, 0x9a, 0xca, 0x00}) // 1e9 ns
	for _, c := range []struct {
		name      string
		b, key    []byte
		reflector bool
		want      error
	}{
		{"empty", nil, nil, false, ErrTruncated},
		{"one short", unauth[:BaseLen-1], nil, false, ErrTruncated},
		{"unauthenticated packet in authenticated mode", unauth, vectorKey, false, ErrTruncated},
		{"too long", make([]byte, MaxPacketLen+1), nil, false, ErrTooLong},
		{"wrong key", auth, []byte("another key"), false, ErrAuth},
		{"altered sequence number", with(auth, 3, 43), vectorKey, false, ErrAuth},
		{"altered MBZ under the HMAC", with(auth, 50, 1), vectorKey, false, ErrAuth},
		{"altered HMAC", with(auth, 100, 0), vectorKey, false, ErrAuth},
		{"reflector packet, wrong key", refl, []byte("x"), true, ErrAuth},
		{"reflector packet truncated", refl[:AuthBaseLen-1], vectorKey, true, ErrTruncated},
		{"PTP timestamp of 1e9 ns", ptpBadNanos, nil, false, ErrMalformed},
		{"key too long", auth, make([]byte, MaxKeyLen+1), false, ErrKey},
		{"MBZ set", with(unauth, 20, 0xff), nil, false, nil},
		{"padding after the HMAC", append(bytes.Clone(auth), 1, 2, 3), vectorKey, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.reflector {
				_, err = DecodeReflector(c.b, c.key)
			} else {
				_, err = DecodeSender(c.b, c.key)
			}
			if !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		p    SenderPacket
		key  []byte
		want error
	}{
		{"scale over 63", SenderPacket{ErrorEstimate: ErrorEstimate{Scale: 64, Multiplier: 1}}, nil, ErrMalformed},
		{"PTP nanoseconds", SenderPacket{Timestamp: 1e9, ErrorEstimate: ErrorEstimate{Format: PTP, Multiplier: 1}}, nil, ErrMalformed},
		{"too long", SenderPacket{Padding: make([]byte, MaxPacketLen)}, nil, ErrTooLong},
		{"key too long", SenderPacket{}, make([]byte, MaxKeyLen+1), ErrKey},
	} {
		dst := []byte("kept")
		got, err := c.p.Append(dst, c.key)
		if !errors.Is(err, c.want) || string(got) != "kept" {
			t.Errorf("%s: %q, %v; want %v and dst untouched", c.name, got, err, c.want)
		}
	}
	r := ReflectorPacket{SenderErrorEstimate: ErrorEstimate{Scale: 70}}
	if _, err := r.Append(nil, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("reflector packet with a sender's scale of 70: %v", err)
	}
}

// Append appends: what dst held stays, the packet follows.
func TestAppendAppends(t *testing.T) {
	p := senderVectors[0].want
	got, err := p.Append([]byte{9, 9}, nil)
	if err != nil || len(got) != 2+BaseLen || got[0] != 9 || !bytes.Equal(got[2:], readVector(t, "sender-unauth-ntp.hex")) {
		t.Fatalf("%x %v", got, err)
	}
}
