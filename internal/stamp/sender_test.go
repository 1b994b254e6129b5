package stamp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// quick is a session of 20 packets that waits long enough for replies
// on a loaded machine: those that come end it early.
var quick = Session{Count: 20, Interval: time.Millisecond, Timeout: 10 * time.Second}

func synced(f Format) ErrorEstimate {
	return ErrorEstimate{Synchronized: true, Format: f, Multiplier: 1}
}
func unsynced(f Format) ErrorEstimate { return ErrorEstimate{Format: f, Multiplier: 1} }

// Our sender against our reflector on IPv4 and IPv6 loopback, in both
// modes and formats: every packet back, in order, with its times.
func TestSessionLoopback(t *testing.T) {
	for _, fam := range families {
		for _, c := range []struct {
			name   string
			key    []byte
			format Format
			size   int
		}{
			{"unauthenticated NTP", nil, NTP, 0},
			{"authenticated PTP padded", vectorKey, PTP, 200},
		} {
			t.Run(fam.network+" "+c.name, func(t *testing.T) {
				_, addr, _ := serve(t, fam.network, fam.ip, ReflectorConfig{Key: c.key, Format: c.format, Clock: synced})
				s := quick
				s.Key, s.Format, s.Size, s.Network, s.Clock = c.key, c.format, c.size, fam.network, synced
				res, err := s.Run(context.Background(), addr)
				if err != nil {
					t.Fatal(err)
				}
				if res.Replies != 20 || len(res.Packets) != 20 || res.Duplicates+res.Reordered+res.Invalid != 0 || !res.Synchronized ||
					res.Remote.Addr() != netip.MustParseAddr(fam.ip) || res.Target != addr {
					t.Fatalf("%+v", res)
				}
				if l := res.Loss; !l.OneWay || l.RoundTrip+l.Forward+l.Backward != 0 || l.Counted != 20 {
					t.Errorf("loss %+v", l)
				}
				for i, p := range res.Packets {
					// One clock: the one-way delays are the round trip's
					// halves, none negative, and a loopback round trip
					// is well under the generous bound.
					if p.Seq != uint32(i) || p.ReflectorSeq != uint32(i) || p.RTT < 0 || p.RTT > 5*time.Second ||
						p.Forward < 0 || p.Backward < 0 || p.Forward+p.Backward != p.RTT || !p.Synchronized {
						t.Errorf("packet %d: %+v", i, p)
					}
					if p.SenderTTL != 255 || p.ReplyTTL != 255 {
						t.Errorf("packet %d: TTL %d there, %d back; want 255 on loopback", i, p.SenderTTL, p.ReplyTTL)
					}
				}
			})
		}
	}
}

// A reflector on a dual-stack socket answers IPv4 senders, and records
// their TTL too.
func TestSessionDualStackReflector(t *testing.T) {
	_, addr, _ := serve(t, "udp", "::", ReflectorConfig{})
	_, port, _ := net.SplitHostPort(addr)
	res, err := quick.Run(context.Background(), net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		t.Fatal(err)
	}
	if res.Replies != 20 || res.Packets[0].SenderTTL != 255 {
		t.Errorf("%d replies, TTL %d", res.Replies, res.Packets[0].SenderTTL)
	}
}

// Loss injected on each way is told apart by the reflector's numbers.
func TestSessionLossEachWay(t *testing.T) {
	d := map[uint32]action{}
	lose := func(seqs ...uint32) map[uint32]action {
		m := map[uint32]action{}
		for _, s := range seqs {
			m[s] = drop
		}
		return m
	}
	for _, c := range []struct {
		name              string
		forward, backward map[uint32]action
		stateless, known  bool
		want              Loss
	}{
		{"both ways", lose(3, 7), lose(5, 11), false, false,
			Loss{Sent: 20, RoundTrip: 4, OneWay: true, Counted: 20, Forward: 2, Backward: 2}},
		{"the first on the way there", lose(0, 1), d, false, false,
			Loss{Sent: 20, RoundTrip: 2, OneWay: true, Counted: 20, Forward: 2}},
		{"the last on the way back", d, lose(18, 19), false, false,
			Loss{Sent: 20, RoundTrip: 2, OneWay: true, Counted: 18, Note: "x"}},
		{"the last on the way there", lose(19), d, false, false,
			Loss{Sent: 20, RoundTrip: 1, OneWay: true, Counted: 19, Note: "x"}},
		{"back only, reflector not known stateful", d, lose(4), false, false,
			Loss{Sent: 20, RoundTrip: 1, Note: "x"}},
		{"back only, reflector known stateful", d, lose(4), false, true,
			Loss{Sent: 20, RoundTrip: 1, OneWay: true, Counted: 20, Backward: 1}},
		{"stateless reflector", lose(3), lose(9), true, false,
			Loss{Sent: 20, RoundTrip: 2, Note: "x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each waits out its timeout for the replies lost
			_, addr, _ := serve(t, "udp4", "127.0.0.1", ReflectorConfig{Stateless: c.stateless})
			r := newRelay(t, addr, false, rules(c.forward, c.backward))
			s := quick
			s.Timeout, s.ReflectorStateful = 2*time.Second, c.known
			res, err := s.Run(context.Background(), r.addr)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Loss
			if (got.Note != "") != (c.want.Note != "") {
				t.Errorf("note %q", got.Note)
			}
			got.Note, c.want.Note = "", ""
			if got != c.want {
				t.Errorf("loss %+v, want %+v", got, c.want)
			}
			for seq := range uint32(20) {
				lost := c.forward[seq] == drop || c.backward[seq] == drop
				if res.Packets[seq].Lost() != lost {
					t.Errorf("packet %d: lost %v, want %v", seq, !lost, lost)
				}
			}
		})
	}
}

// Duplicated and reordered replies are counted, and change no loss.
func TestSessionDuplicatesAndReordering(t *testing.T) {
	_, addr, _ := serve(t, "udp4", "127.0.0.1", ReflectorConfig{})
	r := newRelay(t, addr, false, rules(map[uint32]action{2: duplicate}, map[uint32]action{4: duplicate, 6: hold}))
	res, err := quick.Run(context.Background(), r.addr)
	if err != nil {
		t.Fatal(err)
	}
	// Packet 2 duplicated on the way there: the reflector answers both,
	// so two replies to it (one a duplicate), and its count is one ahead.
	if res.Duplicates != 2 || res.Packets[4].Duplicates != 1 || res.Packets[2].Duplicates != 1 {
		t.Errorf("duplicates %d (packet 2: %d, 4: %d)", res.Duplicates, res.Packets[2].Duplicates, res.Packets[4].Duplicates)
	}
	if res.Reordered != 1 || !res.Packets[6].Reordered {
		t.Errorf("reordered %d (packet 6: %v)", res.Reordered, res.Packets[6].Reordered)
	}
	if l := res.Loss; !l.OneWay || l.RoundTrip+l.Forward+l.Backward != 0 {
		t.Errorf("loss %+v", l)
	}
}

// fake answers each datagram on a loopback socket with what answer
// makes of it (nothing, or some datagrams), until the test ends.
func fake(t *testing.T, answer func(req []byte) [][]byte) string {
	t.Helper()
	c := listen(t, "udp4", "127.0.0.1")
	go func() {
		buf := make([]byte, MaxPacketLen)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			for _, b := range answer(buf[:n]) {
				c.WriteToUDPAddrPort(b, from)
			}
		}
	}()
	return c.LocalAddr().String()
}

// reflectWith answers a sender's packet as a reflector of key would,
// then lets change alter the reply.
func reflectWith(t *testing.T, req, key []byte, change func(*ReflectorPacket)) []byte {
	p, err := DecodeSender(req, key)
	if err != nil {
		return nil
	}
	now := NewTimestamp(time.Now(), NTP)
	r := ReflectorPacket{Seq: p.Seq, Timestamp: now, ReceiveTimestamp: now, ErrorEstimate: unsynced(NTP), SenderSeq: p.Seq,
		SenderTimestamp: p.Timestamp, SenderErrorEstimate: p.ErrorEstimate, SenderTTL: 64}
	if change != nil {
		change(&r)
	}
	b, err := r.Append(nil, key)
	if err != nil {
		t.Error(err)
	}
	return b
}

// Replies that are malformed, truncated, of another session or of
// another key are not taken; with none valid the error says why.
func TestSessionInvalidReplies(t *testing.T) {
	for _, c := range []struct {
		name    string
		answer  func(req []byte) [][]byte
		key     []byte
		replies int
		want    error
	}{
		{"truncated", func(req []byte) [][]byte { return [][]byte{req[:20]} }, nil, 0, ErrTruncated},
		{"wrong key", func(req []byte) [][]byte {
			p, _ := DecodeSender(req, vectorKey)
			q, _ := SenderPacket{Seq: p.Seq, Timestamp: p.Timestamp, ErrorEstimate: p.ErrorEstimate}.Append(nil, []byte("x"))
			return [][]byte{reflectWith(t, q, []byte("x"), nil)}
		}, vectorKey, 0, ErrAuth},
		{"bad PTP timestamp", func(req []byte) [][]byte {
			b := reflectWith(t, req, nil, nil)
			b[12] |= 0x40 // Z=1, with NTP's fraction for nanoseconds
			b[8], b[9] = 0xff, 0xff
			return [][]byte{b}
		}, nil, 0, ErrMalformed},
		{"another session's", func(req []byte) [][]byte {
			return [][]byte{reflectWith(t, req, nil, func(r *ReflectorPacket) { r.SenderTimestamp++ })}
		}, nil, 0, ErrMalformed},
		{"garbage among good replies", func(req []byte) [][]byte {
			return [][]byte{[]byte("junk"), reflectWith(t, req, nil, nil), make([]byte, MaxPacketLen)}
		}, nil, 20, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := fake(t, c.answer)
			s := quick
			s.Key = c.key
			if c.replies == 0 {
				s.Timeout = 300 * time.Millisecond
			}
			res, err := s.Run(context.Background(), addr)
			if res.Replies != c.replies || len(res.Packets) != 20 {
				t.Fatalf("%d replies of %d packets, want %d", res.Replies, len(res.Packets), c.replies)
			}
			if c.want == nil {
				if err != nil || res.Invalid < 20 || !errors.Is(res.FirstInvalid, ErrTruncated) {
					t.Errorf("%v; invalid %d, first %v", err, res.Invalid, res.FirstInvalid)
				}
				return
			}
			if !errors.Is(err, ErrNoReply) || !errors.Is(err, c.want) || !strings.Contains(err.Error(), addr) || res.Invalid == 0 {
				t.Errorf("%v (%d invalid), want %v naming %s", err, res.Invalid, c.want, addr)
			}
		})
	}
}

// A silent reflector, or none at all, is a clear error naming the
// target, after the timeout.
func TestSessionNoReflector(t *testing.T) {
	silent := listen(t, "udp4", "127.0.0.1") // reads nothing
	closed := listen(t, "udp4", "127.0.0.1")
	gone := closed.LocalAddr().String()
	closed.Close()
	for _, c := range []struct{ addr, says string }{
		{silent.LocalAddr().String(), "within 300ms of the last of 20 packets"},
		{gone, "port unreachable"},
	} {
		s := quick
		s.Timeout = 300 * time.Millisecond
		res, err := s.Run(context.Background(), c.addr)
		if !errors.Is(err, ErrNoReply) || !strings.Contains(err.Error(), c.addr) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrNoReply saying %q", c.addr, err, c.says)
		}
		if len(res.Packets) != 20 || res.Loss.RoundTrip != 20 || res.Loss.OneWay {
			t.Errorf("%s: %d packets, loss %+v", c.addr, len(res.Packets), res.Loss)
		}
	}
}

// Authenticated mode with a key the reflector does not hold: it refuses
// every packet (audited), and the sender hears nothing.
func TestSessionWrongKey(t *testing.T) {
	_, addr, a := serve(t, "udp4", "127.0.0.1", ReflectorConfig{Key: vectorKey})
	s := quick
	s.Key, s.Timeout = []byte("not the reflector's key"), 300*time.Millisecond
	_, err := s.Run(context.Background(), addr)
	if !errors.Is(err, ErrNoReply) {
		t.Errorf("%v, want ErrNoReply", err)
	}
	waitFor(t, func() bool { return len(a.all()) > 0 }, "audit")
	if r := a.all()[0]; !errors.Is(r.Err, ErrAuth) {
		t.Errorf("audit %+v, want ErrAuth", r)
	}
}

// The sender's clock and the reflector's must both claim
// synchronisation for the one-way delays to count.
func TestSessionSynchronized(t *testing.T) {
	for _, c := range []struct {
		local, remote func(Format) ErrorEstimate
		want          bool
	}{{synced, synced, true}, {synced, unsynced, false}, {unsynced, synced, false}} {
		_, addr, _ := serve(t, "udp4", "127.0.0.1", ReflectorConfig{Clock: c.remote})
		s := quick
		s.Count, s.Clock = 3, c.local
		res, err := s.Run(context.Background(), addr)
		remote := c.remote(NTP).Synchronized
		if err != nil || res.Synchronized != c.want || res.Packets[0].Synchronized != c.want || res.Packets[0].ReflectorSynchronized != remote {
			t.Errorf("%v: synchronised %v, want %v", err, res.Synchronized, c.want)
		}
	}
}

// A session cut short by its context returns what it sent.
func TestSessionCancelled(t *testing.T) {
	addr := fake(t, func([]byte) [][]byte { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	s := quick
	s.Count, s.Interval = 1000, 10*time.Millisecond
	time.AfterFunc(50*time.Millisecond, cancel)
	res, err := s.Run(ctx, addr)
	if !errors.Is(err, context.Canceled) || len(res.Packets) == 0 || len(res.Packets) >= 1000 {
		t.Errorf("%v, %d packets", err, len(res.Packets))
	}
}

func TestSessionValidate(t *testing.T) {
	ok := Session{Count: 1, Interval: time.Millisecond, Timeout: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, change := range []func(*Session){
		func(s *Session) { s.Count = 0 },
		func(s *Session) { s.Count = MaxCount + 1 },
		func(s *Session) { s.Interval = time.Microsecond },
		func(s *Session) { s.Interval = 2 * time.Hour },
		func(s *Session) { s.Timeout = 0 },
		func(s *Session) { s.Timeout = 2 * time.Minute },
		func(s *Session) { s.Size = BaseLen - 1 },
		func(s *Session) { s.Size, s.Key = BaseLen, []byte("k") }, // below the authenticated base
		func(s *Session) { s.Size = MaxPacketLen + 1 },
		func(s *Session) { s.Key = make([]byte, MaxKeyLen+1) },
		func(s *Session) { s.Format = 2 },
		func(s *Session) { s.Network = "tcp" },
	} {
		s := ok
		change(&s)
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
		if _, err := s.Run(context.Background(), "127.0.0.1:9"); err == nil {
			t.Errorf("%+v: ran", s)
		}
	}
}

func TestWithPort(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1:5000": "192.0.2.1:5000", "192.0.2.1": "192.0.2.1:862", "host.example": "host.example:862",
		"[2001:db8::1]:9": "[2001:db8::1]:9", "[2001:db8::1]": "[2001:db8::1]:862", "2001:db8::1": "[2001:db8::1]:862",
	} {
		if got := withPort(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
