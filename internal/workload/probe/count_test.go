package probe

import (
	"encoding/binary"
	"math"
	"net/netip"
	"testing"
)

// TestSessionCount: a session counts the distinct probes it receives;
// duplicates within the window are not counted, probes older than it are.
func TestSessionCount(t *testing.T) {
	for _, c := range []struct {
		name string
		seqs []uint64
		want uint32
	}{
		{"in order", []uint64{0, 1, 2, 3}, 4},
		{"reordered", []uint64{1, 0, 3, 2}, 4},
		{"duplicates", []uint64{0, 1, 1, 0, 2, 2}, 3},
		{"a duplicate at the window's edge", []uint64{0, dedupWindow - 1, 0}, 2},
		{"older than the window: counted", []uint64{0, dedupWindow, 0}, 3},
		{"a jump past the window forgets it", []uint64{5, 5 + 3*dedupWindow, 5 + 3*dedupWindow - 1, 5 + 3*dedupWindow}, 3},
		{"the largest sequence number", []uint64{math.MaxUint64 - 1, math.MaxUint64, math.MaxUint64, 0}, 3},
	} {
		var s session
		for _, q := range c.seqs {
			s.receive(q)
		}
		if s.count != c.want {
			t.Errorf("%s: count %d, want %d", c.name, s.count, c.want)
		}
	}
	// The count is bounded: it stays at its largest value.
	s := session{count: math.MaxUint32 - 1}
	s.receive(1)
	s.receive(2)
	if s.count != math.MaxUint32 {
		t.Errorf("count %d past its bound, want %d", s.count, uint32(math.MaxUint32))
	}
}

// TestCounterSessions: each sender has its own count and number; past
// maxSessions the sender unused the longest is forgotten, and comes back
// as a new session.
func TestCounterSessions(t *testing.T) {
	c := newCounter()
	next := uint32(0)
	c.newID = func() uint32 { next++; return next }
	addr := func(i int) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), uint16(1000+i)) }
	if n, id := c.receive(addr(0), 0); n != 1 || id != 1 {
		t.Fatalf("first probe: count %d, session %d", n, id)
	}
	if n, id := c.receive(addr(1), 0); n != 1 || id != 2 {
		t.Fatalf("another sender: count %d, session %d", n, id)
	}
	if n, _ := c.receive(addr(0), 1); n != 2 {
		t.Fatalf("the first sender's second probe: count %d", n)
	}
	for i := 2; i <= maxSessions; i++ {
		c.receive(addr(i), 0)
	}
	if len(c.sessions) != maxSessions {
		t.Fatalf("%d sessions, want at most %d", len(c.sessions), maxSessions)
	}
	if _, ok := c.sessions[addr(1)]; ok {
		t.Fatal("the sender unused the longest is still counted")
	}
	if n, id := c.receive(addr(1), 1); n != 1 || id == 2 {
		t.Errorf("a forgotten sender: count %d, session %d; want a new session", n, id)
	}
}

// probeBytes is a probe of size bytes with sequence number seq, as Run
// sends it.
func probeBytes(seq uint64, size int) []byte {
	b := make([]byte, size)
	copy(b, magic[:])
	binary.BigEndian.PutUint64(b[4:], seq)
	binary.BigEndian.PutUint64(b[12:], 7)
	return b
}

func TestReflectAndDecode(t *testing.T) {
	c := newCounter()
	c.newID = func() uint32 { return 42 }
	from := netip.MustParseAddrPort("10.0.0.1:4000")
	now := func() int64 { return 300 }
	for i, size := range []int{NumberedLen, 64, HeaderLen} {
		b := probeBytes(uint64(i), size)
		if !c.reflect(b, from, 200, now) {
			t.Fatalf("a %d-byte probe was not reflected", size)
		}
		r, ok := decodeReply(b)
		want := reply{Seq: uint64(i), ReflectRx: 200, ReflectTx: 300, Count: uint32(i + 1), Session: 42}
		if size < NumberedLen {
			want.Count, want.Session = 0, 0
		}
		if !ok || r != want {
			t.Errorf("%d bytes: reply %+v, want %+v", size, r, want)
		}
	}
	for _, b := range [][]byte{nil, probeBytes(0, HeaderLen-1), append([]byte("WLP2"), probeBytes(0, NumberedLen)[4:]...)} {
		if c.reflect(b, from, 1, now) {
			t.Errorf("%q was reflected", b)
		}
		if _, ok := decodeReply(b); ok {
			t.Errorf("%q was read as a reply", b)
		}
	}
}

// FuzzReflect gives the reflector's counter and the prober's decoder any
// datagrams from two senders: nothing panics, only probes are reflected
// and read back, what is read back is what was stamped, and no count is
// past the datagrams a sender sent.
func FuzzReflect(f *testing.F) {
	f.Add(probeBytes(0, NumberedLen), probeBytes(1, 64), false)
	f.Add(probeBytes(math.MaxUint64, NumberedLen), probeBytes(math.MaxUint64-2000, NumberedLen), true)
	f.Add([]byte("WLP1"), []byte{}, false)
	f.Fuzz(func(t *testing.T, a, b []byte, sameSender bool) {
		c := newCounter()
		from := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:1")}
		if sameSender {
			from[1] = from[0]
		}
		sent := map[netip.AddrPort]uint32{}
		for i, d := range [][]byte{a, b, a, b} {
			buf := append([]byte(nil), d...)
			isProbe := len(d) >= HeaderLen && [4]byte(d[:4]) == magic
			if got := c.reflect(buf, from[i%2], 11, func() int64 { return 12 }); got != isProbe {
				t.Fatalf("reflected %v, want %v, of %q", got, isProbe, d)
			}
			r, ok := decodeReply(buf)
			if ok != isProbe {
				t.Fatalf("read as a reply %v, want %v", ok, isProbe)
			}
			if !ok {
				continue
			}
			sent[from[i%2]]++
			if r.ReflectRx != 11 || r.ReflectTx != 12 || r.Seq != binary.BigEndian.Uint64(d[4:]) {
				t.Fatalf("reply %+v of %q", r, d)
			}
			if len(d) >= NumberedLen && (r.Count == 0 || r.Count > sent[from[i%2]] || r.Session == 0) {
				t.Fatalf("count %d, session %d after %d probes", r.Count, r.Session, sent[from[i%2]])
			}
		}
		if len(c.sessions) > maxSessions {
			t.Fatalf("%d sessions", len(c.sessions))
		}
	})
}
