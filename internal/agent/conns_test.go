package agent

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/pki"
)

// TestHandshakeFloodFromManyAddresses: the handshakes were one pool of 64
// for all strangers, 8 per address, so 8 addresses filled it and every new
// connection, controllers' included, was closed. A full pool makes room by
// closing a handshake past its grace: a flood from one address more than
// fills it, and a controller still connects.
func TestHandshakeFloodFromManyAddresses(t *testing.T) {
	dir := tlsLab(t, "ctl")
	// A handshake's time far longer than the controller's dial: only
	// making room lets it in.
	srv := &Server{handshakeWait: time.Minute}
	addr, _ := serveTLS(t, srv, dir, "rules:\n  - {name: ops, identities: [cn:ctl]}\n")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var mu sync.Mutex
	open := 0
	const addresses = maxHandshakes/maxHandshakesPerSource + 1
	for a := 2; a < 2+addresses; a++ {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(a))}, Timeout: 5 * time.Second}
		for range maxHandshakesPerSource {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if c, err := d.DialContext(ctx, "tcp4", addr); err == nil {
						mu.Lock()
						open++
						mu.Unlock()
						stop := context.AfterFunc(ctx, func() { c.Close() })
						c.Read(make([]byte, 1)) // silent until the agent closes it
						stop()
						c.Close()
					}
					select { // redial, as a flood would, but gently
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond):
					}
				}
			}()
		}
	}
	// The flood fills the handshakes, and more, before the controller dials.
	if !eventually(20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return open >= maxHandshakes+2*maxHandshakesPerSource }) {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the flood opened only %d connections", open)
	}
	c := controller(t, dir, "ctl", addr)
	if c.Info.GetGrant().GetRule() != "ops" {
		t.Errorf("the controller's hello during the flood: %+v", c.Info)
	}
}

// pipeConn is a connection from addr that is never read.
type pipeConn struct {
	net.Conn
	addr net.Addr
}

func (p pipeConn) RemoteAddr() net.Addr { return p.addr }
func (p pipeConn) Close() error         { return nil }

// TestHandshakeEvictionSparesAController: on a tie of addresses' counts
// the oldest handshake made room, so 80 addresses with one silent
// connection each, re-dialled, pushed out a controller's handshake under
// way. One that has sent nothing makes room before one midway, and one
// midway is safe for a grace.
func TestHandshakeEvictionSparesAController(t *testing.T) {
	now := time.Unix(1e9, 0)
	g := newConnGuard(&Server{})
	g.now = func() time.Time { now = now.Add(10 * time.Millisecond); return now }
	from := func(a int) net.Conn {
		return pipeConn{addr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(a>>8), byte(a)), Port: 40000}}
	}
	silent := func(a int) { g.admit(from(a)) } // refused or not: a flood redials
	for a := 2; a < 2+maxHandshakes; a++ {
		silent(a)
	}
	ctl, err := g.admit(from(1000))
	if err != nil {
		t.Fatalf("a controller's connection: %v", err)
	}
	ctl.read.Add(300) // its ClientHello: it is midway
	admitted := 0
	for i := range 3 * maxHandshakes {
		if c, err := g.admit(from(2 + i%80)); err == nil && c != nil {
			admitted++
		}
		g.mu.Lock()
		evicted := ctl.evicted
		g.mu.Unlock()
		if evicted {
			t.Fatalf("the controller's handshake, %v old, was closed to make room for a silent one", now.Sub(ctl.accepted))
		}
	}
	if admitted < maxHandshakes {
		t.Errorf("only %d of the flood's redials were let in: the pool made no room", admitted)
	}

	// Handshakes midway all: none makes room within its grace.
	g = newConnGuard(&Server{})
	g.now = func() time.Time { return now }
	for a := 2; a < 2+maxHandshakes; a++ {
		c, err := g.admit(from(a))
		if err != nil {
			t.Fatal(err)
		}
		c.read.Add(1)
	}
	if _, err := g.admit(from(1000)); err == nil {
		t.Error("a handshake midway, in its grace, was closed to make room")
	}
	now = now.Add(handshakeGrace)
	if _, err := g.admit(from(1000)); err != nil {
		t.Errorf("after the grace: %v", err)
	}
}

// TestPortChecksAreNotRefusals: a port check (connect, close, no byte
// sent) was audited as "TLS handshake failed: EOF", which filled the
// audit log of every agent a lab waited for. It has no line; a connection
// that sends bytes that are no handshake still has one.
func TestPortChecksAreNotRefusals(t *testing.T) {
	dir := tlsLab(t, "ctl")
	addr, audit := serveTLS(t, &Server{}, dir, "rules:\n  - {name: ops, identities: [cn:ctl]}\n")
	for range 5 {
		c, err := net.DialTimeout("tcp4", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	// Bytes that are no TLS: audited.
	c, err := net.DialTimeout("tcp4", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
	c.Read(make([]byte, 64))
	c.Close()
	audit.wait(t, "the connection that sent no handshake", 1, func(e auditEntry) bool {
		return e.Decision == "tls" && strings.Contains(e.Reason, "TLS handshake failed")
	})
	controller(t, dir, "ctl", addr)
	if n := audit.count(func(e auditEntry) bool { return e.Decision == "tls" }); n != 1 {
		audit.mu.Lock()
		defer audit.mu.Unlock()
		t.Errorf("%d tls lines, want the one of the connection that sent bytes: %+v", n, audit.entries)
	}
}

// TestControllerFromAnotherCA: a controller whose certificate was not
// signed by a CA of its tls.ca was refused before it dialled, which broke
// deployments whose agents trust another CA than the one that signed the
// controller's. It dials; the agent's refusal is said, with the hint of
// the certificate's issuer, and the agent audits its handshake.
func TestControllerFromAnotherCA(t *testing.T) {
	dir := tlsLab(t)
	other := filepath.Join(t.TempDir(), "other")
	if err := pki.Init(other, "another lab's CA"); err != nil {
		t.Fatal(err)
	}
	if err := pki.Issue(other, "ctl", pki.Controller, pki.Options{}); err != nil {
		t.Fatal(err)
	}
	addr, audit := serveTLS(t, &Server{}, dir, "rules:\n  - {name: ops, identities: [cn:ctl]}\n")
	f := labFiles(other, "ctl")
	f.CA = filepath.Join(dir, pki.CACert)
	config, err := pki.ClientConfig(f)
	if err != nil {
		t.Fatalf("the controller's configuration with a certificate of another CA: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = agentapi.DialTLS(ctx, "h", addr, config)
	for _, want := range []string{"the agent refused this controller's certificate", `hint: this controller's certificate "ctl" is not signed by a CA of tls.ca: it was issued by "another lab's CA"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dialling with a certificate of another CA: %v, want %q", err, want)
		}
	}
	audit.wait(t, "the refused handshake", 1, func(e auditEntry) bool {
		return e.Decision == "tls" && strings.Contains(e.Reason, "unknown authority")
	})
}
