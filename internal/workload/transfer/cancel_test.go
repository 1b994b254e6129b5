package transfer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// TestFileWorkEndsWithItsContext: making a file to send, and hashing one,
// went on after the controller was gone (up to the agent's byte limit of
// 1 TiB). Both stop within a chunk of their context's end.
func TestFileWorkEndsWithItsContext(t *testing.T) {
	small := newFile(t, "small")
	if err := MakeFile(context.Background(), small, 4<<20); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// cancelAfter is when ctx is cancelled (0: before the call).
		cancelAfter time.Duration
		run         func(context.Context) error
	}{
		// A gigabyte takes seconds to make: cancelled as it begins.
		{"make", time.Millisecond, func(ctx context.Context) error { return MakeFile(ctx, newFile(t, "big"), 1<<30) }},
		{"hash", 0, func(ctx context.Context) error { _, err := hashFile(ctx, small, 4<<20); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelAfter == 0 {
				cancel()
			} else {
				time.AfterFunc(tc.cancelAfter, cancel)
			}
			began := time.Now()
			err := tc.run(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: %v, want an error wrapping %v", err, context.Canceled)
			}
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("returned after %v", took)
			}
		})
	}
}

// cancelAfterRead is a listener whose connections end ctx once the token
// and a stream's header have been read from them, and return those bytes
// only after the receiver has acted on ctx's end (set a deadline or
// closed the connection).
type cancelAfterRead struct {
	net.Listener
	cancel context.CancelFunc
}

func (l *cancelAfterRead) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &cancelConn{Conn: c, cancel: l.cancel, acted: make(chan struct{})}, nil
}

type cancelConn struct {
	net.Conn
	cancel    context.CancelFunc
	read      int
	cancelled atomic.Bool
	once      sync.Once
	acted     chan struct{}
}

func (c *cancelConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read += n
	if c.read >= token.MessageLen+headerLen && !c.cancelled.Load() {
		c.cancelled.Store(true)
		c.cancel()
		select {
		case <-c.acted:
		case <-time.After(5 * time.Second):
		}
	}
	return n, err
}

// act records that the receiver acted on ctx's end.
func (c *cancelConn) act() {
	if c.cancelled.Load() {
		c.once.Do(func() { close(c.acted) })
	}
}

func (c *cancelConn) SetDeadline(t time.Time) error { c.act(); return c.Conn.SetDeadline(t) }

func (c *cancelConn) Close() error { c.act(); return c.Conn.Close() }

// TestStreamEndsWithItsContextAfterItsHeader: a receiver ended a stream
// with its context by setting a deadline, which the stream cleared once
// its header was read: a context that ended then left the stream reading
// on, for as long as its sender kept it open. It is closed instead.
func TestStreamEndsWithItsContextAfterItsHeader(t *testing.T) {
	r, err := Listen(Spec{Streams: 1, Block: 64 << 10}, bind.Local{Addr: "127.0.0.1"}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.ln = &cancelAfterRead{Listener: r.ln, cancel: cancel}
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, newFile(t, "dst"))
		done <- err
	}()
	// A sender that sends its header and then holds the stream open.
	c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", r.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := token.Greet(c, r.Token, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(header{total: 1 << 20, length: 1 << 20}.encode()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("a receiver stopped after a stream's header reports no error")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the receiver still reads a stream 3 s after its context ended")
	}
}
