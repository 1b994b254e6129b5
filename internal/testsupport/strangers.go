package testsupport

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Strangers are plain TCP connections to a test's port that never send
// anything, as an attacker's flood of them would be.
type Strangers struct {
	n      int
	closed atomic.Int64
}

// DialStrangers opens n silent connections to addr; they close when the
// test ends.
func DialStrangers(t testing.TB, addr string, n int) *Strangers {
	t.Helper()
	return DialStrangersFrom(t, addr, "", n)
}

// DialStrangersFrom opens n silent connections to addr from the local
// address from ("" for any), such as 127.0.0.2: another host than the
// test's own on loopback. They close when the test ends.
func DialStrangersFrom(t testing.TB, addr, from string, n int) *Strangers {
	t.Helper()
	d := dialerFrom(t, from)
	s := &Strangers{n: n}
	for i := range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("stranger %d of %d: %v", i+1, n, err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			if closedByPeer(c) {
				s.closed.Add(1)
			}
		}()
	}
	return s
}

// Closed is how many of the strangers the listener has closed.
func (s *Strangers) Closed() int64 { return s.closed.Load() }

// WaitClosed waits up to 10 s until the listener has closed at least n of
// the strangers.
func (s *Strangers) WaitClosed(t testing.TB, n int) {
	t.Helper()
	if got, ok := waitCount(&s.closed, int64(n)); !ok {
		t.Fatalf("after 10 s, the listener has closed %d of %d silent connections, want at least %d", got, s.n, n)
	}
}

// Flood is a continuous flood of silent connections: a fixed number kept
// open at once, each re-dialled as soon as the listener closes it.
type Flood struct {
	dialled, closed atomic.Int64
}

// FloodStrangers keeps n silent connections open to addr from the local
// address from ("" for any), dialling a new one whenever the listener
// closes one, until the test ends.
func FloodStrangers(t testing.TB, addr, from string, n int) *Flood {
	t.Helper()
	d := dialerFrom(t, from)
	f := &Flood{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					// The listener's backlog is full, or it is gone:
					// try again shortly.
					select {
					case <-ctx.Done():
					case <-time.After(time.Millisecond):
					}
					continue
				}
				f.dialled.Add(1)
				stop := context.AfterFunc(ctx, func() { c.Close() })
				if closedByPeer(c) {
					f.closed.Add(1)
				}
				stop()
				c.Close()
			}
		}()
	}
	return f
}

// Dialled is how many connections the flood has opened.
func (f *Flood) Dialled() int64 { return f.dialled.Load() }

// Closed is how many of the flood's connections the listener has closed.
func (f *Flood) Closed() int64 { return f.closed.Load() }

// WaitClosed waits up to 10 s until the listener has closed at least n of
// the flood's connections: it is full of them and turns new ones away.
func (f *Flood) WaitClosed(t testing.TB, n int) {
	t.Helper()
	if got, ok := waitCount(&f.closed, int64(n)); !ok {
		t.Fatalf("after 10 s, the listener has closed %d of the flood's connections, want at least %d", got, n)
	}
}

func dialerFrom(t testing.TB, from string) *net.Dialer {
	t.Helper()
	d := &net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		ip := net.ParseIP(from)
		if ip == nil {
			t.Fatalf("strangers from %q: not an IP address", from)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	return d
}

// closedByPeer reads c until it fails and reports whether the peer closed
// it (EOF or a reset), not this side.
func closedByPeer(c net.Conn) bool {
	var b [1]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			return !errors.Is(err, net.ErrClosed)
		}
	}
}

// waitCount waits up to 10 s until n reaches want; it reports n's value
// and whether it did.
func waitCount(n *atomic.Int64, want int64) (int64, bool) {
	for end := time.Now().Add(10 * time.Second); n.Load() < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			return n.Load(), false
		}
	}
	return n.Load(), true
}

// ReadWatch is a listener whose connections report when their owner first
// sets a read deadline on one of them, as a test's listener does to read
// what follows the token (a stream's header, a worker's hello).
type ReadWatch struct {
	net.Listener
	once    sync.Once
	reading chan struct{}
}

// WatchReads wraps ln.
func WatchReads(ln net.Listener) *ReadWatch {
	return &ReadWatch{Listener: ln, reading: make(chan struct{})}
}

// Accept accepts a connection that reports its read deadlines.
func (w *ReadWatch) Accept() (net.Conn, error) {
	c, err := w.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, w: w}, nil
}

// Wait waits up to 10 s until a read deadline was set on a connection.
func (w *ReadWatch) Wait(t testing.TB) {
	t.Helper()
	select {
	case <-w.reading:
	case <-time.After(10 * time.Second):
		t.Fatal("after 10 s, the listener's owner has read nothing from a connection that presented the token")
	}
}

type watchedConn struct {
	net.Conn
	w *ReadWatch
}

func (c *watchedConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() {
		c.w.once.Do(func() { close(c.w.reading) })
	}
	return c.Conn.SetReadDeadline(t)
}
