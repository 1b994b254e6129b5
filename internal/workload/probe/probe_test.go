package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// loopbackReflector runs a reflector on loopback, at addr; stop ends it
// (as the test's end does) and returns how many probes it reflected.
func loopbackReflector(t *testing.T) (r *Reflector, addr string, stop func() int) {
	t.Helper()
	r, err := NewReflector(bind.Local{Addr: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	reflected := make(chan int, 1)
	go func() {
		n, _ := r.Run(ctx, 5*time.Second)
		reflected <- n
	}()
	return r, fmt.Sprintf("127.0.0.1:%d", r.Port), func() int {
		cancel()
		return <-reflected
	}
}

func TestProbeLoopback(t *testing.T) {
	r, addr, stop := loopbackReflector(t)
	spec := Spec{Count: 50, Interval: 2 * time.Millisecond, Size: 64, Timeout: 200 * time.Millisecond}
	res, err := Run(context.Background(), spec, addr, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if reflected := stop(); len(res) != 50 || reflected != 50 {
		t.Fatalf("%d results, want 50", len(res))
	}
	for _, p := range res {
		if p.Lost() {
			t.Fatalf("probe %d lost on loopback", p.Seq)
		}
		// Loopback: a round trip is well under a millisecond, never negative,
		// and the one-way delays (one clock) add up to no more than it.
		if p.RTT() <= 0 || p.RTT() > 5*time.Millisecond || p.Forward() < 0 || p.Back() < 0 || p.Forward()+p.Back() > p.RTT()+time.Microsecond {
			t.Errorf("probe %d: rtt %v, forward %v, back %v", p.Seq, p.RTT(), p.Forward(), p.Back())
		}
	}
}

// A prober pointed at a socket that is not a reflector of its test sends
// greetings only, never the train.
func TestProbeToStrangerSendsOnlyGreetings(t *testing.T) {
	silent, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	got := make(chan []int, 1)
	go func() {
		var sizes []int
		buf := make([]byte, MaxSize)
		for {
			silent.SetReadDeadline(time.Now().Add(3 * time.Second))
			n, _, err := silent.ReadFrom(buf)
			if err != nil {
				got <- sizes
				return
			}
			sizes = append(sizes, n)
		}
	}()
	spec := Spec{Count: 1000, Interval: time.Millisecond, Size: 64, Timeout: 50 * time.Millisecond}
	_, err = Run(context.Background(), spec, silent.LocalAddr().String(), token.New())
	if !errors.Is(err, token.ErrNotListener) {
		t.Errorf("probing a stranger: %v, want ErrNotListener", err)
	}
	sizes := <-got
	if len(sizes) == 0 || len(sizes) > 20 {
		t.Errorf("the stranger received %d datagrams, want a few greetings", len(sizes))
	}
	for _, n := range sizes {
		if n != token.MessageLen {
			t.Errorf("the stranger received a %d-byte datagram: not a greeting", n)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Spec{Count: 10, Interval: 10 * time.Millisecond, Size: 64, Timeout: time.Second}
	tests := []struct {
		mod  func(*Spec)
		want string
	}{
		{func(*Spec) {}, ""},
		{func(s *Spec) { s.Count = 0 }, "count 0"},
		{func(s *Spec) { s.Interval = 0 }, "interval"},
		{func(s *Spec) { s.Size = 8 }, "size 8"},
		{func(s *Spec) { s.Count = 100000; s.Interval = time.Second }, "over the agent's limit"},
		// 2 x 2^62 ns overflowed the old check and passed the 1 h limit.
		{func(s *Spec) { s.Count = 2; s.Interval = 1 << 62 }, "over the agent's limit"},
		{func(s *Spec) { s.Count = 1; s.Interval = time.Millisecond; s.Timeout = 1<<63 - 1 }, "over the agent's limit"},
	}
	for _, tt := range tests {
		s := ok
		tt.mod(&s)
		err := s.Validate(limits.Limits{MaxDuration: time.Hour})
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", s, err, tt.want)
		}
	}
}

func TestClockStep(t *testing.T) {
	tests := []struct {
		name       string
		wall, mono time.Duration
		want       time.Duration
	}{
		{"no step", time.Second, time.Second, 0},
		{"slewed 0.5 ms over 1 s", time.Second + 500*time.Microsecond, time.Second, 0},
		{"slewed over an hour", time.Hour + 1500*time.Millisecond, time.Hour, 0},
		{"stepped 2 s forward", 3 * time.Second, time.Second, 2 * time.Second},
		{"stepped 50 ms back", 950 * time.Millisecond, time.Second, -50 * time.Millisecond},
	}
	for _, tc := range tests {
		if got := ClockStep(tc.wall, tc.mono); got != tc.want {
			t.Errorf("%s: ClockStep = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestProbeNumberedLoopback: the reflector numbers the probes it receives,
// one session, so a clean round has no loss either way.
func TestProbeNumberedLoopback(t *testing.T) {
	r, addr, stop := loopbackReflector(t)
	spec := Spec{Count: 30, Interval: 2 * time.Millisecond, Size: NumberedLen, Timeout: time.Second}
	res, err := Run(context.Background(), spec, addr, r.Token)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res {
		if p.Lost() || p.ReflectorCount != uint32(p.Seq+1) || p.ReflectorSession == 0 || p.ReflectorSession != res[0].ReflectorSession {
			t.Errorf("probe %d: count %d, session %d (first %d); want count %d in one session", p.Seq, p.ReflectorCount, p.ReflectorSession, res[0].ReflectorSession, p.Seq+1)
		}
	}
	l := Summarise("a", "b", spec, res, ClockAgreement{Shared: true}).Loss
	if l.Forward == nil || l.Back == nil || l.Forward.Lost != 0 || l.Forward.Of != 30 || l.Back.Lost != 0 || l.Note != "" {
		t.Errorf("loss %+v", l)
	}
}

// relay passes datagrams between a prober and the reflector at to, but
// for the probes drop names (by sequence number, on the way there or
// back), and returns its address.
func relay(t *testing.T, to string, drop func(back bool, seq uint64) bool) string {
	t.Helper()
	in, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	raddr, err := net.ResolveUDPAddr("udp4", to)
	if err != nil {
		t.Fatal(err)
	}
	out, err := net.DialUDP("udp4", nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); out.Close() })
	dropped := func(b []byte, back bool) bool {
		r, ok := decodeReply(b) // a probe reads as a reply too
		return ok && drop(back, r.Seq)
	}
	var prober atomic.Pointer[net.UDPAddr]
	go func() {
		buf := make([]byte, MaxSize)
		for {
			n, from, err := in.ReadFromUDP(buf)
			if err != nil {
				return
			}
			prober.Store(from)
			if !dropped(buf[:n], false) {
				out.Write(buf[:n])
			}
		}
	}()
	go func() {
		buf := make([]byte, MaxSize)
		for {
			n, err := out.Read(buf)
			if err != nil {
				return
			}
			if p := prober.Load(); p != nil && !dropped(buf[:n], true) {
				in.WriteToUDP(buf[:n], p)
			}
		}
	}()
	return in.LocalAddr().String()
}

// TestProbeLossEachWayLoopback: probes dropped on the way there and
// replies dropped on the way back are told apart.
func TestProbeLossEachWayLoopback(t *testing.T) {
	r, addr, stop := loopbackReflector(t)
	there, back := map[uint64]bool{3: true, 10: true, 11: true}, map[uint64]bool{5: true, 20: true}
	via := relay(t, addr, func(b bool, seq uint64) bool {
		if b {
			return back[seq]
		}
		return there[seq]
	})
	spec := Spec{Count: 40, Interval: 2 * time.Millisecond, Size: 64, Timeout: time.Second}
	res, err := Run(context.Background(), spec, via, r.Token)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	l := Summarise("a", "b", spec, res, ClockAgreement{Shared: true}).Loss
	if l.Forward == nil || l.Back == nil {
		t.Fatalf("no one-way loss: %s", l.Note)
	}
	if l.Forward.Lost != 3 || l.Forward.Of != 40 || l.Back.Lost != 2 || l.Back.Of != 37 || l.Roundtrip.Lost != 5 {
		t.Errorf("forward %d of %d, back %d of %d, round trip %d; want 3 of 40, 2 of 37, 5",
			l.Forward.Lost, l.Forward.Of, l.Back.Lost, l.Back.Of, l.Roundtrip.Lost)
	}
}

// oldReflector answers probes as a reflector of an older agent did:
// both times stamped, nothing counted, the rest returned as it came.
func oldReflector(t *testing.T) (addr string, tok token.Token) {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tok = token.New()
	admitted := token.NewAdmitted(tok)
	go func() {
		buf := make([]byte, MaxSize)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if admitted.Greeting(c, buf[:n], from.AddrPort()) || !admitted.Allows(from.AddrPort()) || n < HeaderLen || [4]byte(buf[:4]) != magic {
				continue
			}
			binary.BigEndian.PutUint64(buf[20:], uint64(time.Now().UnixNano()))
			binary.BigEndian.PutUint64(buf[28:], uint64(time.Now().UnixNano()))
			c.WriteToUDP(buf[:n], from)
		}
	}()
	return c.LocalAddr().String(), tok
}

// TestProbeOlderReflector: a reflector that does not number what it
// receives still answers; the loss is round trip only, and says so.
func TestProbeOlderReflector(t *testing.T) {
	addr, tok := oldReflector(t)
	spec := Spec{Count: 20, Interval: 2 * time.Millisecond, Size: 64, Timeout: time.Second}
	res, err := Run(context.Background(), spec, addr, tok)
	if err != nil {
		t.Fatal(err)
	}
	s := Summarise("a", "b", spec, res, ClockAgreement{Shared: true})
	if s.Received != 20 || s.Loss.Forward != nil || s.Loss.Back != nil || s.Loss.Note != noteUnnumbered || s.Loss.Roundtrip.Of != 20 {
		t.Errorf("received %d, loss %+v; want 20, round trip only with its note", s.Received, s.Loss)
	}
}
