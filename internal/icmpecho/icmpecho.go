// Package icmpecho measures the round trips and loss toward a host that
// answers ICMP echo and nothing else: a far end without a wanlab agent
// (issue 36). A Pinger sends a number of echoes at an interval, matches
// their replies, and returns the round trips (ending at the kernel's
// receive timestamps where it gives them), loss with its 95% interval,
// duplicates and reordering. It prefers the kernel's unprivileged datagram
// ICMP sockets and falls back to raw ones (root); IPv4 and IPv6.
//
// A Pinger sends toward the address it is given: whether the agent may is
// its policy's to say (policy.AllowsTarget), before Run, and the rule's
// rate and bytes bound Pinger.Rate and Pinger.Bytes.
package icmpecho

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"
)

// The bounds of a Pinger, and what it uses for a setting left zero.
const (
	DefaultCount    = 5
	MaxCount        = 10000
	DefaultInterval = time.Second
	MinInterval     = 10 * time.Millisecond
	MaxInterval     = time.Minute
	DefaultTimeout  = 2 * time.Second
	MaxTimeout      = time.Minute
	// DefaultSize is the bytes of data of an echo (ping's 56); MinSize
	// holds the run's cookie; MaxSize fills a 9000-byte packet of either
	// family.
	DefaultSize = 56
	MinSize     = cookieLen
	MaxSize     = 9000 - 40 - 8
)

// Pinger sends echoes toward one target. The zero value of a setting is
// its default.
type Pinger struct {
	// Target is the address echoed: IPv4 (also as ::ffff:a.b.c.d) or
	// IPv6, with a zone for a link-local one.
	Target netip.Addr
	// Source is the local address to send from (none: the kernel's
	// choice); of Target's family.
	Source netip.Addr
	// Count is how many echoes to send (1 to MaxCount).
	Count int
	// Interval is between the echoes' sending (MinInterval to MaxInterval).
	Interval time.Duration
	// Timeout is how long a reply may take (up to MaxTimeout): a later
	// one is late, and its echo lost. The run ends when every echo has
	// its reply or its timeout has passed.
	Timeout time.Duration
	// Size is the bytes of data of an echo (MinSize to MaxSize).
	Size int
	// Socket is the kind of ICMP socket: SocketAuto, SocketDatagram or
	// SocketRaw.
	Socket string

	// open opens the socket (tests replace it); nil: the system's.
	open func(kind string, target, source netip.Addr) (conn, string, error)
}

// SilentError is a run no echo of which had a timely reply: the target
// is down, unreachable, or drops ICMP echo.
type SilentError struct {
	Target netip.Addr
	Sent   int
	// Wait is how long each echo waited for its reply.
	Wait time.Duration
}

func (e *SilentError) Error() string {
	return fmt.Sprintf("icmp echo to %s: no reply to any of %d echoes within %v of each (the host is down, unreachable, or drops ICMP echo)", e.Target, e.Sent, e.Wait)
}

// Timeout says the error is a timeout (as net.Error's).
func (e *SilentError) Timeout() bool { return true }

// checked is p with its defaults, or why it is not a Pinger.
func (p Pinger) checked() (Pinger, error) {
	p.Target = p.Target.Unmap()
	p.Source = p.Source.Unmap()
	if p.Count == 0 {
		p.Count = DefaultCount
	}
	if p.Interval == 0 {
		p.Interval = DefaultInterval
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	if p.Size == 0 {
		p.Size = DefaultSize
	}
	bad := func(format string, args ...any) (Pinger, error) {
		return p, fmt.Errorf("icmp echo to %s: "+format, append([]any{p.Target}, args...)...)
	}
	switch {
	case !p.Target.IsValid() || p.Target.IsUnspecified() || p.Target.IsMulticast():
		return bad("give a unicast address to echo")
	case p.Source.IsValid() && p.Source.Is4() != p.Target.Is4():
		return bad("source %s is of the other IP family", p.Source)
	case p.Count < 1 || p.Count > MaxCount:
		return bad("%d echoes: give 1 to %d", p.Count, MaxCount)
	case p.Interval < MinInterval || p.Interval > MaxInterval:
		return bad("interval %v: give %v to %v", p.Interval, MinInterval, MaxInterval)
	case p.Timeout < 0 || p.Timeout > MaxTimeout:
		return bad("timeout %v: give up to %v", p.Timeout, MaxTimeout)
	case p.Size < MinSize || p.Size > MaxSize:
		return bad("%d bytes of data: give %d to %d", p.Size, MinSize, MaxSize)
	case p.Socket != SocketAuto && p.Socket != SocketDatagram && p.Socket != SocketRaw:
		return bad("socket %q: give %q or %q, or none", p.Socket, SocketDatagram, SocketRaw)
	}
	return p, nil
}

// packetBytes is an echo's bytes on the wire, IP header included.
func (p Pinger) packetBytes() int64 {
	ip := 20
	if p.Target.Unmap().Is6() {
		ip = 40
	}
	return int64(ip + 8 + p.Size)
}

// Bytes is what a run sends (its echoes, IP headers included); the
// replies are as many again.
func (p Pinger) Bytes() int64 {
	q, _ := p.checked()
	return int64(q.Count) * q.packetBytes()
}

// Rate is the rate the echoes are sent at, in bit/s.
func (p Pinger) Rate() float64 {
	q, _ := p.checked()
	return float64(q.packetBytes()*8) / q.Interval.Seconds()
}

// Duration is the longest a run takes: its echoes' sending, then the
// last one's timeout.
func (p Pinger) Duration() time.Duration {
	q, _ := p.checked()
	return time.Duration(q.Count-1)*q.Interval + q.Timeout
}

// Run sends the echoes and waits for their replies, within ctx. A run
// without any timely reply returns its result and a *SilentError; a
// cancelled one what it saw until then, with ctx's error.
func (p Pinger) Run(ctx context.Context) (Result, error) {
	p, err := p.checked()
	if err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("icmp echo to %s: %w", p.Target, err)
	}
	openConn := p.open
	if openConn == nil {
		openConn = open
	}
	c, kind, err := openConn(p.Socket, p.Target, p.Source)
	if err != nil {
		return Result{}, fmt.Errorf("icmp echo to %s: %w", p.Target, err)
	}
	defer c.close()
	stop := context.AfterFunc(ctx, func() { c.setReadDeadline(time.Unix(1, 0)) })
	defer stop()

	t := newTally(p.Count, p.Timeout)
	err = p.exchange(ctx, c, t)
	res := t.result()
	res.Target, res.Socket = p.Target, kind
	switch {
	case err != nil:
		return res, fmt.Errorf("icmp echo to %s: %w", p.Target, err)
	case res.Received == 0:
		return res, &SilentError{Target: p.Target, Sent: res.Sent, Wait: p.Timeout}
	}
	return res, nil
}

// exchange sends the echoes at their times and reads replies between
// them, until every echo has its reply or its timeout has passed.
func (p Pinger) exchange(ctx context.Context, c conn, t *tally) error {
	var random [cookieLen + 4]byte
	rand.Read(random[:])
	var cookie [cookieLen]byte
	copy(cookie[:], random[:])
	id := int(binary.BigEndian.Uint16(random[cookieLen:]))
	base := binary.BigEndian.Uint16(random[cookieLen+2:])
	v6 := p.Target.Is6()
	buf := make([]byte, 60+8+p.Size+64) // an IPv4 header with options, a little more for a stranger
	oob := make([]byte, 128)
	target := p.Target.WithZone("")
	next := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		if sent := len(t.res.Echoes); sent < p.Count && !now.Before(next) {
			seq := int(base + uint16(sent))
			b, err := request(v6, id, seq, cookie, p.Size)
			if err != nil {
				return err
			}
			at := time.Now()
			if err := c.write(b); err != nil {
				return fmt.Errorf("sending echo %d: %w", sent+1, err)
			}
			t.sent(seq, at)
			next = at.Add(p.Interval)
			continue
		}
		deadline := next
		if len(t.res.Echoes) == p.Count {
			if !t.waiting(now) {
				return nil
			}
			deadline = t.res.Echoes[p.Count-1].Sent.Add(p.Timeout)
		}
		if err := c.setReadDeadline(deadline); err != nil {
			return fmt.Errorf("waiting for replies: %w", err)
		}
		if err := ctx.Err(); err != nil { // cancelled before the deadline was set
			return err
		}
		n, from, kernel, err := c.read(buf, oob)
		read := time.Now()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue
		case err != nil:
			return fmt.Errorf("reading replies: %w", err)
		}
		r, err := decodeReply(buf[:n], v6)
		if err != nil || from.WithZone("") != target || !r.ours(cookie) || !c.rewritesID() && r.id != id {
			continue // another host's, another program's, or no reply at all
		}
		t.reply(int(uint16(r.seq)-base), kernel, read)
	}
}
