package token

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// greetings records when a UDP sender writes each datagram.
type greetings struct {
	net.Conn
	mu sync.Mutex
	at []time.Time
}

func (g *greetings) Write(b []byte) (int, error) {
	g.mu.Lock()
	g.at = append(g.at, time.Now())
	g.mu.Unlock()
	return g.Conn.Write(b)
}

func (g *greetings) sent() []time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]time.Time(nil), g.at...)
}

// TestGreetUDPIsBounded: a UDP sender toward a silent port sent 50
// greetings over its 10 s wait, and toward a closed port greeted again at
// each ICMP refusal (millions of times on loopback); then at most 6 within
// 3.1 s, so that at 30% loss each way about 2% of probe starts failed. It
// greets maxGreetings (12) times spread over its wait, never sooner than
// its backoff says, whatever the peer does; it still greets a listener
// that missed the first greetings, and ends with its context.
func TestGreetUDPIsBounded(t *testing.T) {
	tok := New()
	// peer returns the address of a peer that answers greeting number
	// answer with the proof (0: never), or of a closed port.
	peer := func(t *testing.T, answer int, closed bool) string {
		pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		if closed {
			pc.Close()
			return pc.LocalAddr().String()
		}
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 2048)
			for got := 1; ; got++ {
				n, from, err := pc.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				if got == answer && n == MessageLen {
					pc.WriteToUDPAddrPort(tok.ack(), from)
				}
			}
		}()
		return pc.LocalAddr().String()
	}
	for _, tc := range []struct {
		name        string
		answer      int  // the greeting the peer answers (0: none)
		closed      bool // nothing listens: ICMP refusals come back
		wait        time.Duration
		cancel      time.Duration // when the context ends (0: never)
		wantErr     error         // nil: the proof arrives
		least, most int
	}{
		// 12 greetings, the twelfth due at 4.03 s of a 5 s wait: a stall of
		// the sender on a loaded machine may leave it no time, so 11 pass
		// too (the unbounded sender sent dozens, or millions).
		{"silent port", 0, false, 5 * time.Second, 0, ErrNotListener, 11, 12},
		{"closed port", 0, true, 5 * time.Second, 0, ErrNotListener, 11, 12},
		{"answers the third", 3, false, 10 * time.Second, 0, nil, 3, 3},
		{"cancelled", 0, false, time.Minute, 500 * time.Millisecond, context.Canceled, 1, maxGreetings},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each mostly waits
			c, err := net.Dial("udp4", peer(t, tc.answer, tc.closed))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			g := &greetings{Conn: c}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			}
			began := time.Now()
			err = GreetUDP(ctx, g, tok, tc.wait)
			took := time.Since(began)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("GreetUDP: %v, want %v", err, tc.wantErr)
			}
			sent := g.sent()
			if n := len(sent); n < tc.least || n > tc.most {
				t.Errorf("%d greetings, want %d to %d", n, tc.least, tc.most)
			}
			// Nothing hastens a greeting: each leaves no sooner than the
			// schedule says (a few ms of slack for the timer).
			schedule := greetSchedule(tc.wait)
			for i := 1; i < len(sent) && i < len(schedule); i++ {
				if early := schedule[i] - sent[i].Sub(sent[0]); early > 5*time.Millisecond {
					t.Errorf("greeting %d left %v before its time", i+1, early)
				}
			}
			if tc.cancel > 0 && took > tc.cancel+3*time.Second {
				t.Errorf("GreetUDP returned %v after its context ended", took-tc.cancel)
			}
		})
	}
}

// TestGreetSchedule: the greetings back off from 100 ms, at most 1 s and a
// twelfth of the wait apart, at most 12 of them, all within the wait.
func TestGreetSchedule(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, v := range v {
			d = append(d, time.Duration(v)*time.Millisecond)
		}
		return d
	}
	for _, tc := range []struct {
		wait time.Duration
		want []time.Duration
	}{
		{50 * time.Millisecond, ms(0)},
		{500 * time.Millisecond, ms(0, 100, 200, 300, 400)},
		{2400 * time.Millisecond, ms(0, 100, 300, 500, 700, 900, 1100, 1300, 1500, 1700, 1900, 2100)},
		{10 * time.Second, ms(0, 100, 300, 700, 1500, 2333, 3167, 4000, 4833, 5667, 6500, 7333)},
		{time.Minute, ms(0, 100, 300, 700, 1500, 2500, 3500, 4500, 5500, 6500, 7500, 8500)},
	} {
		got := greetSchedule(tc.wait)
		if len(got) != len(tc.want) {
			t.Errorf("wait %v: %d greetings at %v, want %d at %v", tc.wait, len(got), got, len(tc.want), tc.want)
			continue
		}
		for i := range got {
			if d := got[i] - tc.want[i]; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("wait %v: greeting %d at %v, want %v", tc.wait, i+1, got[i], tc.want[i])
			}
		}
	}
}
