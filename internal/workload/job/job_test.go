package job

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/testsupport"
)

func TestBurnUsesCPUTime(t *testing.T) {
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before := cpu()
	Burn(20 * time.Millisecond)
	if used := cpu() - before; used < 19*time.Millisecond {
		t.Errorf("Burn(20ms) used %v of CPU", used)
	}
	Burn(0) // returns at once
}

// TestServeBoundsConnections: past its limit of connections at once,
// Serve closes a new connection instead of handling it, and it handles
// new ones again once a handler has returned.
func TestServeBoundsConnections(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	var handled atomic.Int64
	served := make(chan struct{})
	go func() {
		Serve(ctx, ln, 2, func(c net.Conn) {
			handled.Add(1)
			<-release
		})
		close(served)
	}()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer func() { free(); cancel(); <-served }()
	strangers := testsupport.DialStrangers(t, ln.Addr().String(), 5)
	strangers.WaitClosed(t, 3)
	for end := time.Now().Add(10 * time.Second); handled.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d connections handled, want 2", handled.Load())
		}
	}
	if n, closed := handled.Load(), strangers.Closed(); n != 2 || closed != 3 {
		t.Errorf("%d connections handled at once and %d closed, want the limit of 2 and 3", n, closed)
	}
	free()
	// The handlers return soon after: a connection is then handled again
	// (one that comes first is closed as over the limit: dial again).
	for end := time.Now().Add(10 * time.Second); handled.Load() < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no connection is handled after the handlers returned")
		}
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
}
