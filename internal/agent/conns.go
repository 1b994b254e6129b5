package agent

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/pki"
)

// Bounds of an agent's control port (ServeTLS). Connections in their TLS
// handshake and connections whose peer has passed it are counted apart, so
// that strangers without a certificate can never take the room of
// controllers: they can fill only the handshakes, a few per address, each
// for at most handshakeWait. When the handshakes are full, a new connection
// takes the place of one that has sent nothing, or else of one midway
// through its handshake for at least handshakeGrace; of those, one of the
// address that has the most, then the oldest: so that no number of
// addresses can keep a controller out, and a controller's handshake under
// way is not cut.
const (
	// maxConnections bounds the authenticated connections open at once.
	maxConnections = 256
	// maxHandshakes bounds the connections in their TLS handshake.
	maxHandshakes = 64
	// maxHandshakesPerSource bounds them from one source address (IPv6:
	// one /64).
	maxHandshakesPerSource = 8
	// maxConnectionsPerSource bounds the connections of one source address,
	// in their handshake or past it.
	maxConnectionsPerSource = 64
	// maxConnectionsPerIdentity bounds the connections of one identity.
	maxConnectionsPerIdentity = 32
	// handshakeWait bounds a connection's TLS handshake (and its first
	// HTTP/2 frames): TLS 1.3 takes one or two round trips, under a second
	// over the longest WAN path.
	handshakeWait = 4 * time.Second
	// handshakeGrace is how long a connection midway through its
	// handshake is safe from making room for newer ones (see
	// evictLocked): a controller's handshake takes a round trip or two.
	handshakeGrace = time.Second
	// maxCallsPerConnection bounds the calls open at once on one
	// connection; a controller's further calls wait for one to end.
	maxCallsPerConnection = 256
)

// connGuard counts the agent's control connections and refuses those
// over its bounds, auditing every refusal.
type connGuard struct {
	s    *Server
	wait time.Duration
	now  func() time.Time // time.Now, but in tests

	mu          sync.Mutex
	handshakes  int
	established int
	sources     map[string]*sourceCount
	identities  map[string]int

	// lines paces the audit lines of connections refused: a flood of them
	// is counted, not written one by one.
	lines auditPacer
	// silent counts the connections closed before they sent a byte (a
	// port check): not refusals, they have no line of their own.
	silent atomic.Int64
}

// sourceCount is what one source address has open: its connections in
// their handshake, oldest first, and all of its connections.
type sourceCount struct {
	handshaking []*guardedConn
	open        int
}

func newConnGuard(s *Server) *connGuard {
	g := &connGuard{s: s, wait: s.handshakeWait, now: time.Now, sources: map[string]*sourceCount{}, identities: map[string]int{}}
	if g.wait <= 0 {
		g.wait = handshakeWait
	}
	g.lines.flush = s.auditFlush
	g.lines.summary = func(_ string, n int64) {
		if s.Audit != nil {
			s.Audit(audit.Entry{Time: time.Now().UTC(), Decision: "tls",
				Reason: fmt.Sprintf("%d connections refused or failed in their TLS handshake, not logged one by one", n)})
		}
	}
	return g
}

// sourceOf is the address a connection's bounds count it under: its IP
// address, or for IPv6 its /64.
func sourceOf(a net.Addr) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String()
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// Connection states.
const (
	handshaking = iota
	established
	closed
)

// guardedConn is a control connection counted by its guard until closed.
type guardedConn struct {
	net.Conn
	g        *connGuard
	source   string
	accepted time.Time
	state    int    // under g.mu
	identity string // once established
	evicted  bool   // under g.mu: closed to make room for a newer one
	// read counts the bytes its peer has sent.
	read atomic.Int64
}

func (c *guardedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

func (c *guardedConn) Close() error {
	c.g.drop(c)
	return c.Conn.Close()
}

// admit counts a new connection in its handshake, or refuses it. When the
// handshakes are full it closes the oldest connection in its handshake
// from the source that has the most, to make room.
func (g *connGuard) admit(conn net.Conn) (*guardedConn, error) {
	src := sourceOf(conn.RemoteAddr())
	g.mu.Lock()
	sc := g.sources[src]
	if sc == nil {
		sc = &sourceCount{}
	}
	switch {
	case len(sc.handshaking) >= maxHandshakesPerSource:
		g.mu.Unlock()
		return nil, fmt.Errorf("refused before its TLS handshake: %d connections from %s are in theirs, the most one address may have", len(sc.handshaking), src)
	case sc.open >= maxConnectionsPerSource:
		g.mu.Unlock()
		return nil, fmt.Errorf("refused before its TLS handshake: %s has %d connections open, the most one address may have", src, sc.open)
	}
	now := g.now()
	var evicted *guardedConn
	had := 0
	if g.handshakes >= maxHandshakes {
		if evicted, had = g.evictLocked(now); evicted == nil {
			g.mu.Unlock()
			return nil, fmt.Errorf("refused before its TLS handshake: %d connections are in theirs, the agent's limit, all midway for under %v", g.handshakes, handshakeGrace)
		}
	}
	g.sources[src] = sc
	c := &guardedConn{Conn: conn, g: g, source: src, accepted: now}
	sc.handshaking = append(sc.handshaking, c)
	sc.open++
	g.handshakes++
	g.mu.Unlock()
	if evicted != nil {
		evicted.Conn.Close()
		g.note(evicted.RemoteAddr(), "", fmt.Sprintf("closed in its TLS handshake to make room: %d connections were in theirs, the agent's limit, %d of them from %s",
			maxHandshakes, had, evicted.source))
	}
	return c, nil
}

// evictLocked ends the count of a connection in its handshake that has
// sent nothing, or else that has been midway through it for handshakeGrace
// at least, and returns it to be closed, with how many its source had in
// theirs; nil when there is none. Of those it takes one of the source with
// the most, then the oldest.
func (g *connGuard) evictLocked(now time.Time) (*guardedConn, int) {
	var pick *guardedConn
	var pickSource *sourceCount
	for _, sc := range g.sources {
		for _, c := range sc.handshaking {
			if c.read.Load() > 0 && now.Sub(c.accepted) < handshakeGrace {
				continue
			}
			if pick == nil || evictBefore(c, len(sc.handshaking), pick, len(pickSource.handshaking)) {
				pick, pickSource = c, sc
			}
		}
	}
	if pick == nil {
		return nil, 0
	}
	had := len(pickSource.handshaking)
	g.dropLocked(pick)
	pick.evicted = true
	return pick, had
}

// evictBefore says whether connection a, whose source has na in their
// handshake, makes room before b, whose source has nb.
func evictBefore(a *guardedConn, na int, b *guardedConn, nb int) bool {
	if silentA, silentB := a.read.Load() == 0, b.read.Load() == 0; silentA != silentB {
		return silentA
	}
	if na != nb {
		return na > nb
	}
	return a.accepted.Before(b.accepted)
}

// establish moves a connection whose peer passed the handshake out of the
// handshakes, or refuses it.
func (g *connGuard) establish(c *guardedConn, identity string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.state != handshaking {
		return net.ErrClosed
	}
	switch {
	case g.established >= maxConnections:
		return fmt.Errorf("refused after its TLS handshake: the agent has %d controllers' connections open, its limit", g.established)
	case g.identities[identity] >= maxConnectionsPerIdentity:
		return fmt.Errorf("refused after its TLS handshake: %s has %d connections open, the most one identity may have", identity, g.identities[identity])
	}
	g.handshakes--
	sc := g.sources[c.source]
	sc.handshaking = slices.DeleteFunc(sc.handshaking, func(o *guardedConn) bool { return o == c })
	g.established++
	g.identities[identity]++
	c.state, c.identity = established, identity
	return nil
}

// drop ends a connection's count.
func (g *connGuard) drop(c *guardedConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dropLocked(c)
}

func (g *connGuard) dropLocked(c *guardedConn) {
	sc := g.sources[c.source]
	switch c.state {
	case closed:
		return
	case handshaking:
		g.handshakes--
		sc.handshaking = slices.DeleteFunc(sc.handshaking, func(o *guardedConn) bool { return o == c })
	case established:
		g.established--
		if g.identities[c.identity]--; g.identities[c.identity] <= 0 {
			delete(g.identities, c.identity)
		}
	}
	c.state = closed
	if sc.open--; sc.open <= 0 {
		delete(g.sources, c.source)
	}
}

// note audits a connection refused or failed at the TLS level, paced:
// a flood is counted, not written line by line.
func (g *connGuard) note(remote net.Addr, identity, why string) {
	if g.s.Audit == nil {
		return
	}
	ok, held, _ := g.lines.allow("")
	if !ok {
		return
	}
	if held > 0 {
		why = fmt.Sprintf("%s (and %d connections refused before this one, not logged one by one)", why, held)
	}
	if n := g.silent.Swap(0); n > 0 {
		why = fmt.Sprintf("%s (and %d connections closed before they sent a byte, as port checks do)", why, n)
	}
	g.s.Audit(audit.Entry{Time: time.Now().UTC(), Identity: identity, Remote: remote.String(), Decision: "tls", Reason: why})
}

// guardedListener admits the connections its guard allows; it closes the
// others at once, so that the agent never stops accepting.
type guardedListener struct {
	net.Listener
	g *connGuard
}

func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c, err := l.g.admit(conn)
		if err == nil {
			return c, nil
		}
		l.g.note(conn.RemoteAddr(), "", err.Error())
		conn.Close()
	}
}

// guardedCreds are the agent's TLS credentials with a bounded handshake,
// after which the connection counts as its peer's, and every failed
// handshake audited.
type guardedCreds struct {
	credentials.TransportCredentials
	g *connGuard
}

func (gc guardedCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, ok := raw.(*guardedConn)
	if !ok {
		return gc.TransportCredentials.ServerHandshake(raw)
	}
	g := gc.g
	// The deadline stays for the first HTTP/2 frames; gRPC clears it.
	raw.SetDeadline(c.accepted.Add(g.wait))
	conn, info, err := gc.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		var refused *pki.RefusedError
		g.mu.Lock()
		evicted := c.evicted
		g.mu.Unlock()
		switch {
		case evicted:
			// admit has told it.
		case c.read.Load() == 0 && !errors.Is(err, os.ErrDeadlineExceeded):
			// Closed before it sent a byte: a port check, not a refusal.
			g.silent.Add(1)
		case errors.Is(err, os.ErrDeadlineExceeded):
			g.note(raw.RemoteAddr(), "", fmt.Sprintf("no TLS handshake within %v: connection closed", g.wait))
		case errors.As(err, &refused):
			// pki.Server's Refused hook has told it.
		default:
			g.note(raw.RemoteAddr(), "", fmt.Sprintf("TLS handshake failed: %v", err))
		}
		return nil, nil, err
	}
	identity := "(no identity)"
	if ti, ok := info.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
		if ids := pki.Identities(ti.State.PeerCertificates[0]); len(ids) > 0 {
			identity = ids[0]
		}
	}
	if err := g.establish(c, identity); err != nil {
		g.note(raw.RemoteAddr(), identity, err.Error())
		conn.Close()
		return nil, nil, err
	}
	return conn, info, nil
}

func (gc guardedCreds) Clone() credentials.TransportCredentials {
	return guardedCreds{TransportCredentials: gc.TransportCredentials.Clone(), g: gc.g}
}
