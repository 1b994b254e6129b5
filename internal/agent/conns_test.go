package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/pki"
)

// TestHandshakeFloodFromManyAddresses: the handshakes were one pool of 64
// for all strangers, 8 per address, so 8 addresses filled it and every new
// connection, controllers' included, was closed. A full pool makes room by
// closing the oldest handshake of the address with the most.
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
	for a := 2; a <= 20; a++ {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(a))}, Timeout: 5 * time.Second}
		for range maxHandshakesPerSource {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					c, err := d.DialContext(ctx, "tcp4", addr)
					if err != nil {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					mu.Lock()
					open++
					mu.Unlock()
					stop := context.AfterFunc(ctx, func() { c.Close() })
					c.Read(make([]byte, 1)) // silent until the agent closes it
					stop()
					c.Close()
					time.Sleep(10 * time.Millisecond)
				}
			}()
		}
	}
	// The flood fills the handshakes before the controller dials.
	if !eventually(20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return open >= 2*maxHandshakes }) {
		t.Fatalf("the flood opened only %d connections", open)
	}
	c := controller(t, dir, "ctl", addr)
	if c.Info.GetGrant().GetRule() != "ops" {
		t.Errorf("the controller's hello during the flood: %+v", c.Info)
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
	audit.wait(t, "the connection that sent no handshake", 1, func(e AuditEntry) bool {
		return e.Decision == "tls" && strings.Contains(e.Reason, "TLS handshake failed")
	})
	controller(t, dir, "ctl", addr)
	if n := audit.count(func(e AuditEntry) bool { return e.Decision == "tls" }); n != 1 {
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
	_, err = DialTLS(ctx, "h", addr, config)
	for _, want := range []string{"the agent refused this controller's certificate", `hint: this controller's certificate "ctl" is not signed by a CA of tls.ca: it was issued by "another lab's CA"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dialling with a certificate of another CA: %v, want %q", err, want)
		}
	}
	audit.wait(t, "the refused handshake", 1, func(e AuditEntry) bool {
		return e.Decision == "tls" && strings.Contains(e.Reason, "unknown authority")
	})
}

// TestIsAlert: a TLS alert is known by its type, not by its text.
func TestIsAlert(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"alert over TCP", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, true},
		{"alert over QUIC", fmt.Errorf("handshake: %w", tls.AlertError(42)), true},
		{"text alone", errors.New("remote error: tls: bad certificate"), false},
		{"another read error", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, false},
		{"none", nil, false},
	} {
		if got := isAlert(tc.err); got != tc.want {
			t.Errorf("%s: isAlert(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
