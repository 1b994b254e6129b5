package stamp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

// families are the loopbacks the socket tests run on; IPv6's is skipped
// where the host has none.
var families = []struct{ network, ip string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}}

// listen opens a UDP socket on a loopback, or skips the test.
func listen(t *testing.T, network, ip string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP(network, &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Skipf("no %s loopback here: %v", network, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// audits gathers a reflector's refusals.
type audits struct {
	mu   sync.Mutex
	seen []Refusal
}

func (a *audits) add(r Refusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, r)
}

func (a *audits) all() []Refusal {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}

// serve runs a reflector of cfg on a loopback until the test ends, and
// returns its address and refusals (told at once: the reflector's
// audit interval is a second, so each reason's first comes at once).
func serve(t *testing.T, network, ip string, cfg ReflectorConfig) (*Reflector, string, *audits) {
	t.Helper()
	conn := listen(t, network, ip)
	a := &audits{}
	if cfg.Audit == nil {
		cfg.Audit = a.add
	}
	r, err := NewReflector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, conn) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
	})
	return r, conn.LocalAddr().String(), a
}

// client is a test's Session-Sender socket, connected to addr, sending
// with TTL 255 as the package's sender does.
func client(t *testing.T, network, addr string) *net.UDPConn {
	t.Helper()
	raddr, err := net.ResolveUDPAddr(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP(network, nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := prepare(c); err != nil {
		t.Fatal(err)
	}
	return c
}

// exchange sends b on c and returns the reply (nil after wait without one).
func exchange(t *testing.T, c *net.UDPConn, b []byte, wait time.Duration) []byte {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, MaxPacketLen)
	n, err := c.Read(buf)
	if timeout(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func senderPacket(t *testing.T, seq uint32, padding int, key []byte, f Format) []byte {
	t.Helper()
	p := SenderPacket{Seq: seq, Timestamp: NewTimestamp(time.Now(), f), ErrorEstimate: ErrorEstimate{Format: f, Multiplier: 1}, Padding: make([]byte, padding)}
	for i := range p.Padding {
		p.Padding[i] = byte(i)
	}
	b, err := p.Append(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A reflector copies the sender's fields, stamps its own times, records
// the TTL, sends the padding back, and numbers each session's replies
// from 0 (stateful) or copies the sender's number (stateless): on IPv4
// and IPv6, in both modes.
func TestReflectorReplies(t *testing.T) {
	for _, fam := range families {
		for _, c := range []struct {
			name      string
			key       []byte
			stateless bool
			format    Format
		}{
			{"stateful", nil, false, NTP},
			{"stateless", nil, true, NTP},
			{"authenticated PTP", vectorKey, false, PTP},
		} {
			t.Run(fam.network+" "+c.name, func(t *testing.T) {
				_, addr, _ := serve(t, fam.network, fam.ip, ReflectorConfig{Key: c.key, Stateless: c.stateless, Format: c.format})
				cl := client(t, fam.network, addr)
				for i, seq := range []uint32{10, 11, 13} {
					sent := senderPacket(t, seq, 20, c.key, NTP)
					b := exchange(t, cl, sent, 10*time.Second)
					if len(b) != len(sent) {
						t.Fatalf("reply of %d octets to %d: want a symmetric size", len(b), len(sent))
					}
					r, err := DecodeReflector(b, c.key)
					if err != nil {
						t.Fatal(err)
					}
					q, _ := DecodeSender(sent, c.key)
					wantSeq := uint32(i)
					if c.stateless {
						wantSeq = seq
					}
					if r.Seq != wantSeq || r.SenderSeq != seq || r.SenderTimestamp != q.Timestamp || r.SenderErrorEstimate != q.ErrorEstimate ||
						string(r.Padding) != string(q.Padding) || r.ErrorEstimate.Format != c.format || r.SenderTTL != 255 {
						t.Fatalf("reply %d: %+v", i, r)
					}
					rx, err1 := r.ReceiveTimestamp.Time(c.format)
					tx, err2 := r.Timestamp.Time(c.format)
					if err1 != nil || err2 != nil || tx.Before(rx) || time.Since(rx).Abs() > time.Minute {
						t.Fatalf("reply %d: received %v, sent %v (%v, %v)", i, rx, tx, err1, err2)
					}
				}
			})
		}
	}
}

// A TWAMP-light sender's packet shorter than the base packet (at least
// its 14 octets of fields) is answered with the base packet (RFC 8762
// section 4.6); shorter still is refused.
func TestReflectorTWAMPLight(t *testing.T) {
	r, addr, a := serve(t, "udp4", "127.0.0.1", ReflectorConfig{})
	cl := client(t, "udp4", addr)
	full := senderPacket(t, 5, 0, nil, NTP)
	for _, n := range []int{14, 41} {
		b := exchange(t, cl, full[:n], 10*time.Second)
		if rp, err := DecodeReflector(b, nil); err != nil || len(b) != BaseLen || rp.SenderSeq != 5 {
			t.Fatalf("%d octets: reply of %d, %v", n, len(b), err)
		}
	}
	if b := exchange(t, cl, full[:13], 300*time.Millisecond); b != nil {
		t.Fatalf("13 octets answered: %x", b)
	}
	waitFor(t, func() bool { return len(a.all()) == 1 }, "the refusal's audit")
	if got := a.all()[0]; !errors.Is(got.Err, ErrTruncated) || got.Count != 1 || got.From != cl.LocalAddr().(*net.UDPAddr).AddrPort() {
		t.Errorf("audit: %+v", got)
	}
	if s := r.Stats(); s.Reflected != 2 || s.Refused != 1 {
		t.Errorf("stats %+v", s)
	}
}

// waitFor waits for cond, up to a generous deadline.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10 s", what)
		}
	}
}

// A reflector refuses what it must, and tells its audit why.
func TestReflectorRefusals(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     ReflectorConfig
		key     []byte
		clients int // each sends 3 packets
		replies int
		want    error
	}{
		{"wrong key", ReflectorConfig{Key: vectorKey}, []byte("another key"), 1, 0, ErrAuth},
		{"unauthenticated to authenticated", ReflectorConfig{Key: vectorKey}, nil, 1, 0, ErrTruncated},
		{"rate", ReflectorConfig{MaxRate: 0.001, Burst: 2}, nil, 1, 2, ErrRateLimit},
		{"sessions", ReflectorConfig{MaxSessions: 2}, nil, 3, 6, ErrSessionLimit},
		{"sessions of one address", ReflectorConfig{MaxAddrSessions: 2}, nil, 3, 6, ErrAddrSessionLimit},
		{"all sources' rate", ReflectorConfig{MaxTotalRate: 0.001, TotalBurst: 2}, nil, 2, 2, ErrTotalRateLimit},
		{"source not allowed", ReflectorConfig{Allow: func(a netip.Addr) bool { return !a.IsLoopback() }}, nil, 1, 0, ErrNotAllowed},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, addr, a := serve(t, "udp4", "127.0.0.1", c.cfg)
			replies := 0
			for range c.clients {
				cl := client(t, "udp4", addr)
				for seq := range uint32(3) {
					wait := 10 * time.Second
					if replies >= c.replies {
						wait = 200 * time.Millisecond // none is due
					}
					if exchange(t, cl, senderPacket(t, seq, 0, c.key, NTP), wait) != nil {
						replies++
					}
				}
			}
			if replies != c.replies {
				t.Errorf("%d replies, want %d", replies, c.replies)
			}
			waitFor(t, func() bool { return len(a.all()) > 0 }, "audit")
			if got := a.all()[0]; !errors.Is(got.Err, c.want) || got.Count != 1 {
				t.Errorf("audit: %+v, want %v", got, c.want)
			}
			if s := r.Stats(); s.Reflected != uint64(c.replies) || s.Refused != uint64(3*c.clients-c.replies) {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

// The audit hears of a flood once a second a reason, with its count,
// and of the rest when the reflector stops.
func TestAuditorAggregates(t *testing.T) {
	var got []Refusal
	a := auditor{report: func(r Refusal) { got = append(got, r) }, interval: time.Second, pending: map[error]*pendingRefusal{}}
	from := netip.MustParseAddrPort("192.0.2.1:862")
	t0 := time.Unix(1000, 0)
	for i := range 10 {
		a.refuse(ErrRateLimit, from, ErrRateLimit, t0.Add(time.Duration(i)*200*time.Millisecond))
	}
	a.refuse(ErrAuth, from, ErrAuth, t0)
	a.flush()
	counts := map[error][]int{}
	for _, r := range got {
		counts[r.Err] = append(counts[r.Err], r.Count)
	}
	// Rate: the first at once, 5 at 1 s, 4 more at the flush.
	if !slices.Equal(counts[ErrRateLimit], []int{1, 5, 4}) || !slices.Equal(counts[ErrAuth], []int{1}) {
		t.Errorf("reports %v", counts)
	}
}

// The tables forget idle entries to make room, and refuse when none is
// idle.
func TestTableBounded(t *testing.T) {
	tb := newTable[int, int](2, time.Minute)
	t0 := time.Unix(1000, 0)
	get := func(k int, at time.Time) error { _, err := tb.get(k, at); return err }
	if get(1, t0) != nil || get(2, t0) != nil {
		t.Fatal("no room for two")
	}
	if err := get(3, t0.Add(time.Second)); !errors.Is(err, ErrSessionLimit) {
		t.Fatalf("a third while none is idle: %v", err)
	}
	if get(1, t0.Add(2*time.Second)) != nil {
		t.Fatal("a known key refused")
	}
	if get(3, t0.Add(61*time.Second)) != nil || len(tb.m) != 2 {
		t.Fatalf("no room made of the idle entry: %d entries", len(tb.m))
	}
}

// One address's sessions are bounded, whatever room the table has, and
// those forgotten as idle make room again.
func TestTableGroups(t *testing.T) {
	tb := newTable[netip.AddrPort, uint32](100, time.Minute).grouped(sessionAddr, 2)
	t0 := time.Unix(1000, 0)
	get := func(s string, at time.Time) error { _, err := tb.get(netip.MustParseAddrPort(s), at); return err }
	for _, s := range []string{"192.0.2.1:1000", "[::ffff:192.0.2.1]:1001", "192.0.2.2:1000"} {
		if err := get(s, t0); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := get("192.0.2.1:1002", t0.Add(time.Second)); !errors.Is(err, ErrAddrSessionLimit) {
		t.Fatalf("a third session of one address: %v", err)
	}
	if err := get("192.0.2.1:1002", t0.Add(2*time.Minute)); err != nil || tb.groups[netip.MustParseAddr("192.0.2.1")] != 1 {
		t.Fatalf("after the idle ones went: %v, groups %v", err, tb.groups)
	}
}

// The defaults bound one address's sessions below the table's: a sender
// with many source ports does not fill it (the review's 1,024).
func TestReflectorDefaults(t *testing.T) {
	r, err := NewReflector(ReflectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if r.cfg.MaxAddrSessions != DefaultMaxAddrSessions || DefaultMaxAddrSessions >= DefaultMaxSessions || r.cfg.MaxTotalRate != DefaultMaxTotalRate {
		t.Errorf("config %+v", r.cfg)
	}
	now := time.Unix(1000, 0)
	from := netip.MustParseAddr("192.0.2.1")
	for port := range uint16(DefaultMaxSessions) {
		_, err := r.sessions.get(netip.AddrPortFrom(from, 1024+port), now)
		if port < DefaultMaxAddrSessions && err != nil || port >= DefaultMaxAddrSessions && !errors.Is(err, ErrAddrSessionLimit) {
			t.Fatalf("session from port %d: %v", 1024+port, err)
		}
	}
	if _, err := r.sessions.get(netip.MustParseAddrPort("192.0.2.2:1024"), now); err != nil {
		t.Errorf("another sender refused: %v", err)
	}
}

// A second source address still gets sessions when the first has all its
// own, on the wire.
func TestReflectorAddrSessions(t *testing.T) {
	r, addr, a := serve(t, "udp4", "127.0.0.1", ReflectorConfig{MaxAddrSessions: 1})
	first := client(t, "udp4", addr)
	if exchange(t, first, senderPacket(t, 0, 0, nil, NTP), 10*time.Second) == nil {
		t.Fatal("no reply to the first session")
	}
	if exchange(t, client(t, "udp4", addr), senderPacket(t, 0, 0, nil, NTP), 200*time.Millisecond) != nil {
		t.Fatal("a second session of 127.0.0.1 answered")
	}
	raddr, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	other, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.ParseIP("127.0.0.2")}, raddr)
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	defer other.Close()
	if exchange(t, other, senderPacket(t, 0, 0, nil, NTP), 10*time.Second) == nil {
		t.Fatal("no reply to another address")
	}
	waitFor(t, func() bool { return len(a.all()) > 0 }, "audit")
	if got := a.all()[0]; !errors.Is(got.Err, ErrAddrSessionLimit) {
		t.Errorf("audit %+v", got)
	}
	if s := r.Stats(); s.Reflected != 2 || s.Refused != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestNewReflectorChecks(t *testing.T) {
	for _, cfg := range []ReflectorConfig{
		{Key: make([]byte, MaxKeyLen+1)}, {MaxSessions: -1}, {MaxSessions: MaxSessions + 1},
		{MaxRate: -1}, {Burst: -1}, {SessionIdle: -time.Second}, {Format: 2},
		{MaxAddrSessions: -1}, {MaxAddrSessions: MaxSessions + 1}, {MaxTotalRate: -1}, {TotalBurst: -1},
	} {
		if _, err := NewReflector(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
