package testsupport

import (
	"errors"
	"net"
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
	s := &Strangers{n: n}
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("stranger %d of %d: %v", i+1, n, err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			var b [1]byte
			if _, err := c.Read(b[:]); err != nil && !errors.Is(err, net.ErrClosed) {
				s.closed.Add(1) // the listener closed it: EOF or a reset
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
	for end := time.Now().Add(10 * time.Second); s.Closed() < int64(n); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after 10 s, the listener has closed %d of %d silent connections, want at least %d", s.Closed(), s.n, n)
		}
	}
}
