package stamp

import (
	"bytes"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// Fuzz inputs pick a packet kind and mode with their low bits.
const (
	fuzzReflector     = 1
	fuzzAuthenticated = 2
)

// fieldOctets marks the octets of a layout that hold fields (the HMAC
// apart): those a re-encoding must give back as they were.
func fieldOctets(l layout) []bool {
	m := make([]bool, l.base)
	mark := func(at, n int) {
		for i := at; i < at+n; i++ {
			m[i] = true
		}
	}
	mark(0, 4)
	mark(l.ts, 8)
	mark(l.errEst, 2)
	if l.rxTS != 0 {
		mark(l.rxTS, 8)
		mark(l.sSeq, 4)
		mark(l.sTS, 8)
		mark(l.sErrEst, 2)
		mark(l.ttl, 1)
	}
	return m
}

// FuzzDecode gives both decoders, in both modes, and a reflector's
// handling of a sender's packet, any bytes. Nothing panics; a packet
// that decodes encodes back to its own fields and padding (its MBZ
// zeroed), and to its very bytes when its MBZ were zero; a reflector's
// reply decodes, as long as the packet was, or as the base packet.
func FuzzDecode(f *testing.F) {
	for _, v := range senderVectors {
		f.Add(readVector(f, v.file), byte(authBit(v.key)))
	}
	for _, v := range reflectorVectors {
		f.Add(readVector(f, v.file), byte(fuzzReflector|authBit(v.key)))
	}
	keyOf := func(which byte) []byte {
		if which&fuzzAuthenticated != 0 {
			return vectorKey
		}
		return nil
	}
	reflectors := map[bool]*Reflector{}
	for _, auth := range []bool{false, true} {
		var key []byte
		if auth {
			key = vectorKey
		}
		r, err := NewReflector(ReflectorConfig{Key: key, MaxRate: 1e12, Burst: 1 << 30, MaxTotalRate: 1e12, TotalBurst: 1 << 30, Clock: unsynced})
		if err != nil {
			f.Fatal(err)
		}
		reflectors[auth] = r
	}
	from := netip.MustParseAddrPort("192.0.2.1:40000")
	f.Fuzz(func(t *testing.T, b []byte, which byte) {
		key := keyOf(which)
		l, _ := layoutOf(which&fuzzReflector != 0, key)
		var again []byte
		var err error
		if which&fuzzReflector != 0 {
			var p ReflectorPacket
			if p, err = DecodeReflector(b, key); err == nil {
				again, err = p.Append(nil, key)
				if err != nil {
					t.Fatalf("a decoded packet does not encode: %v", err)
				}
				q, err := DecodeReflector(again, key)
				if err != nil || !reflect.DeepEqual(q, p) {
					t.Fatalf("re-encoded, decoded %+v %v, want %+v", q, err, p)
				}
			}
		} else {
			var p SenderPacket
			if p, err = DecodeSender(b, key); err == nil {
				again, err = p.Append(nil, key)
				if err != nil {
					t.Fatalf("a decoded packet does not encode: %v", err)
				}
				q, err := DecodeSender(again, key)
				if err != nil || !reflect.DeepEqual(q, p) {
					t.Fatalf("re-encoded, decoded %+v %v, want %+v", q, err, p)
				}
			}
		}
		if again != nil {
			if len(again) != len(b) || !bytes.Equal(again[l.base:], b[l.base:]) {
				t.Fatalf("re-encoded to %d octets, %x; want %d, %x", len(again), again, len(b), b)
			}
			canonical := true
			for i, field := range fieldOctets(l) {
				switch {
				case l.authenticated && i >= hmacCovered:
				case field && again[i] != b[i]:
					t.Fatalf("octet %d re-encoded %#x, was %#x", i, again[i], b[i])
				case !field && b[i] != 0:
					canonical = false
				}
			}
			if canonical && !bytes.Equal(again, b) {
				t.Fatalf("a packet with its MBZ zero re-encoded to\n%x\nnot\n%x", again, b)
			}
		}
		if which&fuzzReflector != 0 {
			return
		}
		r := reflectors[key != nil]
		reply, err := r.reflect(nil, b, from, arrival{at: time.Now(), ttl: 64})
		if err != nil {
			return
		}
		p, err := DecodeReflector(reply, key)
		if want := max(len(b), BaseLenOf(key)); err != nil || len(reply) != want || p.SenderTTL != 64 {
			t.Fatalf("reply of %d octets (want %d): %+v %v", len(reply), want, p, err)
		}
	})
}

func authBit(key []byte) int {
	if len(key) > 0 {
		return fuzzAuthenticated
	}
	return 0
}
