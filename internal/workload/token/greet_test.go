package token

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// greetings counts the datagrams a UDP sender writes.
type greetings struct {
	net.Conn
	n atomic.Int64
}

func (g *greetings) Write(b []byte) (int, error) {
	g.n.Add(1)
	return g.Conn.Write(b)
}

// TestGreetUDPIsBounded: a UDP sender toward a silent port sent 50
// greetings over its 10 s wait, and toward a closed port greeted again at
// each ICMP refusal (millions of times on loopback). It greets at most
// maxGreetings times, backing off, whatever the peer does; it still greets
// a listener that missed the first greetings, and ends with its context.
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
		name    string
		answer  int  // the greeting the peer answers (0: none)
		closed  bool // nothing listens: ICMP refusals come back
		wait    time.Duration
		cancel  time.Duration // when the context ends (0: never)
		wantErr error         // nil: the proof arrives
		most    int64
	}{
		{"silent port", 0, false, 4 * time.Second, 0, ErrNotListener, maxGreetings},
		{"closed port", 0, true, 3 * time.Second, 0, ErrNotListener, maxGreetings},
		{"answers the third", 3, false, 10 * time.Second, 0, nil, 3},
		{"cancelled", 0, false, time.Minute, 500 * time.Millisecond, context.Canceled, maxGreetings},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			if n := g.n.Load(); n < 1 || n > tc.most {
				t.Errorf("%d greetings, want 1 to %d", n, tc.most)
			}
			if tc.cancel > 0 && took > tc.cancel+3*time.Second {
				t.Errorf("GreetUDP returned %v after its context ended", took-tc.cancel)
			}
		})
	}
}
