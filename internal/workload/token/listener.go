package token

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Wait is how long a connection to a test's listener has to present the
// token: a sender sends it as soon as it connects.
const Wait = 10 * time.Second

// Margin is how many connections awaiting their token a listener holds
// beyond those its test expects, and the most one source address keeps
// past Grace.
const Margin = 64

// Grace is how long a connection awaiting its token is safe from being
// dropped for a newer one: a test's own stream whose greeting is late (a
// loaded host, a lost segment on a lossy link) is never dropped for a
// stranger. It is also how long a source may hold more than Margin: the
// test's own burst arrives at once and presents its token well within it.
const Grace = 2 * time.Second

// maxReady bounds the connections that presented the token and wait for
// the listener's owner to take them: a test has at most its streams'
// worth.
const maxReady = 4096

// Options tune a Listener.
type Options struct {
	// Wait is how long each connection has to present the token (Wait
	// if 0).
	Wait time.Duration
	// Expect is how many connections the test opens at once: its
	// streams, workers or clients (what the test's spec says, not a
	// limit of the agent's).
	Expect int
}

// bounds are the listener's limits on connections awaiting their token:
// perSource from one source address (an IPv6 /64) within Grace, pool in
// all. A flood from one address leaves the test's expected connections
// their places. Past Grace a source keeps at most Margin (see expire).
func (o Options) bounds() (perSource, pool int) {
	expect := min(max(o.Expect, 0), maxReady)
	perSource = max(expect, Margin)
	return perSource, expect + perSource
}

// Listener is a test's listener: it accepts every connection of ln,
// checks each one's token on its own (a stranger that sends nothing holds
// up no one) within its own wait, and passes on, through Accept, only the
// connections that present it.
//
// It holds a bounded number of connections awaiting their token: at most
// max(Expect, Margin) from one source address and Expect more in all, and
// of those from one source at most Margin once they have waited Grace (a
// connection whose grace ends while Margin older ones of its source still
// await their token is closed then). A connection past those bounds takes
// the place of the oldest connection of the source that holds the most
// (its own source's, if that is at its bound) if that one has waited
// longer than Grace; otherwise the new connection is closed. A stranger
// thus costs a test a socket for a while, never the place of one of its
// own connections, and one source holds more than Margin only for Grace.
type Listener struct {
	ln        net.Listener
	token     Token
	wait      time.Duration
	perSource int
	pool      int
	ready     chan net.Conn
	quit      chan struct{} // closed by Close, or when ln fails

	now func() time.Time // time.Now but in tests

	mu      sync.Mutex
	pending map[netip.Prefix][]*pending // awaiting their token, by source, oldest first
	held    int                         // connections in pending
	waiting int                         // presented it, not taken yet
	err     error                       // why Accept fails, once quit is closed
	stopped bool                        // set with err: nothing more is admitted
	closing sync.Once
}

// pending is a connection awaiting its token.
type pending struct {
	c       net.Conn
	source  netip.Prefix
	since   time.Time
	graced  *time.Timer // ends its grace (expire)
	dropped bool
}

// NewListener checks the connections of ln for the token t.
func NewListener(ln net.Listener, t Token, o Options) *Listener {
	return newListener(ln, t, o, time.Now)
}

func newListener(ln net.Listener, t Token, o Options, now func() time.Time) *Listener {
	if o.Wait <= 0 {
		o.Wait = Wait
	}
	perSource, pool := o.bounds()
	l := &Listener{
		ln: ln, token: t, wait: o.Wait, perSource: perSource, pool: pool,
		ready: make(chan net.Conn), quit: make(chan struct{}),
		pending: map[netip.Prefix][]*pending{}, now: now,
	}
	go l.run()
	return l
}

// Accept returns the next connection that presented the token.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		select {
		case <-l.quit: // closed meanwhile: nothing more is passed on
			c.Close()
		default:
			return c, nil
		}
	case <-l.quit:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return nil, l.err
}

// Close closes the listener and every connection still awaiting its token.
func (l *Listener) Close() error {
	l.stop(net.ErrClosed)
	return l.ln.Close()
}

// Addr is the listener's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// stop ends the listener for err (the first reason given stays).
func (l *Listener) stop(err error) {
	l.closing.Do(func() {
		l.mu.Lock()
		l.err = err
		l.stopped = true // an admit after this closes its connection
		for _, ps := range l.pending {
			for _, p := range ps {
				p.graced.Stop()
				p.c.Close()
			}
		}
		clear(l.pending)
		l.held = 0
		l.mu.Unlock()
		close(l.quit)
	})
}

func (l *Listener) run() {
	backoff := time.Duration(0)
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if outOfFiles(err) {
				// A full descriptor table passes; the listener stays.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
					continue
				case <-l.quit:
					return
				}
			}
			l.stop(fmt.Errorf("accepting a connection of the test: %w", err))
			return
		}
		backoff = 0
		l.admit(c)
	}
}

func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// admit starts checking c's token if there is a place for it: a free one,
// or one taken from a connection that has waited past Grace.
func (l *Listener) admit(c net.Conn) {
	p := &pending{c: c, source: sourceOf(c.RemoteAddr())}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		c.Close()
		return
	}
	p.since = l.now()
	if len(l.pending[p.source]) >= l.perSource || l.held >= l.pool {
		victim := l.victim(p.source, p.since)
		if victim == nil {
			l.mu.Unlock()
			c.Close()
			return
		}
		l.drop(victim)
	}
	l.pending[p.source] = append(l.pending[p.source], p)
	l.held++
	p.graced = time.AfterFunc(Grace, func() { l.expire(p) })
	l.mu.Unlock()
	go l.check(p)
}

// expire ends p's grace: p is closed if its source still has Margin older
// connections awaiting their token, so that past Grace a source holds at
// most Margin. (Its grace is counted in real time, whatever l.now says.)
func (l *Listener) expire(p *pending) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Index(l.pending[p.source], p) >= Margin {
		l.drop(p)
	}
}

// drop closes p, which awaits its token, to make room.
func (l *Listener) drop(p *pending) {
	l.remove(p)
	p.dropped = true
	p.graced.Stop()
	p.c.Close()
}

// victim is the connection to drop for a new one from source, or nil if
// none may be: the oldest of source's own if source is at its bound, else
// the oldest of the source holding the most (at least as many as source),
// and in either case only one that has waited past Grace.
func (l *Listener) victim(source netip.Prefix, now time.Time) *pending {
	old := func(ps []*pending) bool { return len(ps) > 0 && now.Sub(ps[0].since) > Grace }
	own := l.pending[source]
	if len(own) >= l.perSource {
		if old(own) {
			return own[0]
		}
		return nil
	}
	var best []*pending
	for _, ps := range l.pending {
		if len(ps) >= len(own) && old(ps) && (len(ps) > len(best) || len(ps) == len(best) && ps[0].since.Before(best[0].since)) {
			best = ps
		}
	}
	if best == nil {
		return nil
	}
	return best[0]
}

// remove takes p out of the connections awaiting their token.
func (l *Listener) remove(p *pending) {
	ps := l.pending[p.source]
	i := slices.Index(ps, p)
	if i < 0 {
		return
	}
	if len(ps) == 1 {
		delete(l.pending, p.source)
	} else {
		l.pending[p.source] = slices.Delete(ps, i, i+1)
	}
	l.held--
}

// check waits for p's token and hands its connection on if it presents it
// in time and was not dropped meanwhile.
func (l *Listener) check(p *pending) {
	err := Check(p.c, l.token, l.wait)
	l.mu.Lock()
	ok := err == nil && !p.dropped && l.waiting < maxReady
	if !p.dropped {
		l.remove(p)
		p.graced.Stop()
	}
	if ok {
		l.waiting++
	}
	l.mu.Unlock()
	if !ok {
		p.c.Close()
		return
	}
	select {
	case l.ready <- p.c:
	case <-l.quit:
		p.c.Close()
	}
	l.mu.Lock()
	l.waiting--
	l.mu.Unlock()
}

// sourceOf is the source a connection is counted under: its IPv4 address,
// or its IPv6 /64 (one host's usual share).
func sourceOf(a net.Addr) netip.Prefix {
	ap, ok := a.(interface{ AddrPort() netip.AddrPort })
	if !ok {
		return netip.Prefix{} // not an IP connection: all count as one source
	}
	ip := ap.AddrPort().Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// Accept accepts connections on ln until it closes, checks each one's token
// as a Listener does, and passes on those that present t, until stop
// closes. The channel closes when ln does.
func Accept(ln net.Listener, t Token, o Options, stop <-chan struct{}) <-chan net.Conn {
	l := NewListener(ln, t, o)
	out := make(chan net.Conn)
	go func() {
		defer close(out)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			select {
			case out <- c:
			case <-stop:
				c.Close()
			}
		}
	}()
	return out
}
