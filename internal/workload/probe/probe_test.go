package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
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
