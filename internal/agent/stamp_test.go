package agent

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/stamp"
)

// TestServeSTAMP runs the agent's STAMP reflector on loopback: a sender
// from a network it names gets every reply; one from a network it does
// not name gets none, and the refusal is audited.
func TestServeSTAMP(t *testing.T) {
	for _, c := range []struct {
		name    string
		from    string
		replies int
	}{
		{"named", "127.0.0.0/8", 5},
		{"not named", "192.0.2.0/24", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var (
				mu      sync.Mutex
				entries []audit.Entry
			)
			srv := &Server{Host: "a", Audit: func(e audit.Entry) { mu.Lock(); entries = append(entries, e); mu.Unlock() }}
			conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- srv.ServeSTAMP(ctx, conn, STAMP{From: []netip.Prefix{netip.MustParsePrefix(c.from)}})
			}()
			res, err := stamp.Session{Count: 5, Interval: 20 * time.Millisecond, Timeout: 2 * time.Second, ReflectorStateful: true}.Run(context.Background(), conn.LocalAddr().String())
			if c.replies == 0 && !errors.Is(err, stamp.ErrNoReply) {
				t.Errorf("a sender the reflector does not answer: %v, want no reply", err)
			}
			if c.replies > 0 && err != nil {
				t.Fatal(err)
			}
			if res.Replies != c.replies {
				t.Errorf("%d replies, want %d", res.Replies, c.replies)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("ServeSTAMP after its context ended: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			refused := len(entries) > 0 && entries[0].Decision == "refuse" && entries[0].Method == "stamp" && strings.Contains(entries[0].Reason, "not among those")
			if refused != (c.replies == 0) {
				t.Errorf("audit: %+v", entries)
			}
		})
	}
	if err := (&Server{}).ServeSTAMP(context.Background(), &net.UDPConn{}, STAMP{}); err == nil {
		t.Error("a reflector that names no network started")
	}
}
