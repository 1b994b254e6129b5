package stamp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Bounds of a session.
const (
	MaxCount    = 100_000
	MinInterval = time.Millisecond
	MaxInterval = time.Hour
	MaxTimeout  = time.Minute
	// DefaultPort is STAMP's port (TWAMP-Test's, RFC 8762 section 4.1),
	// taken when an address has none.
	DefaultPort = 862
)

// ErrNoReply is a session that received no valid reply.
var ErrNoReply = errors.New("no reply")

// Session is a Session-Sender's test session: Count packets, Interval
// apart, to a reflector, whose replies are awaited until Timeout after
// the last packet is sent (or all have come).
type Session struct {
	Count    int
	Interval time.Duration
	Timeout  time.Duration
	// Size is each packet's size in octets (UDP payload), from the base
	// packet's (BaseLen, or AuthBaseLen with a key) to MaxPacketLen; 0
	// is the base packet's. The reflector sends back as many.
	Size int
	// Key selects authenticated mode: the reflector must hold the same
	// key. None: unauthenticated mode.
	Key []byte
	// Format is the format of the timestamps sent: NTP (the default) or
	// PTP. A reply's are read in its own format.
	Format Format
	// Network is "udp" (the default: the family the address resolves
	// to), "udp4" or "udp6".
	Network string
	// ReflectorStateful says that the reflector is known to number its
	// replies (stateful mode), as wanlab's does: then replies whose
	// numbers are the packets' own mean no loss on the way there. Without
	// it such replies may come from a stateless reflector, and loss is
	// told round trip only (see Loss).
	ReflectorStateful bool
	// Clock describes the host's clock in the packets' error estimates
	// (default LocalErrorEstimate).
	Clock func(Format) ErrorEstimate
}

// Validate checks a session's bounds.
func (s Session) Validate() error {
	base := BaseLenOf(s.Key)
	switch {
	case s.Count < 1 || s.Count > MaxCount:
		return fmt.Errorf("count %d: give 1 to %d packets", s.Count, MaxCount)
	case s.Interval < MinInterval || s.Interval > MaxInterval:
		return fmt.Errorf("interval %v: give %v to %v", s.Interval, MinInterval, MaxInterval)
	case s.Timeout <= 0 || s.Timeout > MaxTimeout:
		return fmt.Errorf("timeout %v: give more than 0, up to %v", s.Timeout, MaxTimeout)
	case s.Size != 0 && (s.Size < base || s.Size > MaxPacketLen):
		return fmt.Errorf("size %d: give %d to %d octets (0: %d)", s.Size, base, MaxPacketLen, base)
	case len(s.Key) > MaxKeyLen:
		return fmt.Errorf("key of %d octets: %w (at most %d)", len(s.Key), ErrKey, MaxKeyLen)
	case s.Format > PTP:
		return fmt.Errorf("timestamp format %v: give NTP or PTP", s.Format)
	case s.Network != "" && s.Network != "udp" && s.Network != "udp4" && s.Network != "udp6":
		return fmt.Errorf("network %q: give udp, udp4 or udp6", s.Network)
	}
	return nil
}

// withPort is addr with DefaultPort when it names no port.
func withPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	host := addr
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	return net.JoinHostPort(host, strconv.Itoa(DefaultPort))
}

// Run sends the session's packets to the reflector at addr (HOST:PORT,
// or HOST for port 862) and returns what came back. The result holds
// every packet sent, also when an error is returned: ErrNoReply (also
// wrapping ErrAuth or another packet error when replies came and none
// was valid), ctx's error when it ended first, or a send's error.
func (s Session) Run(ctx context.Context, addr string) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, fmt.Errorf("STAMP session to %s: %w", addr, err)
	}
	network := orDefault(s.Network, "udp")
	raddr, err := net.ResolveUDPAddr(network, withPort(addr))
	var conn *net.UDPConn
	if err == nil {
		conn, err = dialNoBroadcast(ctx, network, raddr)
	}
	if err == nil {
		err = prepare(conn)
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return Result{}, fmt.Errorf("STAMP session to %s: %w", addr, err)
	}
	defer conn.Close()
	clock := s.Clock
	if clock == nil {
		clock = LocalErrorEstimate
	}
	ee := clock(s.Format)
	ee.Format = s.Format
	c := newCollector(s, ee)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		c.readReplies(conn)
	}()
	sendErr := s.send(ctx, conn, c, ee)
	if ctx.Err() == nil {
		wait := time.NewTimer(s.Timeout)
		select {
		case <-wait.C:
		case <-c.all:
		case <-ctx.Done():
		}
		wait.Stop()
	}
	conn.Close()
	<-readDone
	remote := raddr.AddrPort()
	res := c.result(addr, netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port()))
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("STAMP session to %s: %w", addr, ctx.Err())
	case res.Replies == 0:
		return res, c.noReply(addr, raddr, s.Timeout)
	case sendErr != nil:
		return res, fmt.Errorf("STAMP session to %s: %w", addr, sendErr)
	}
	return res, nil
}

// send sends the packets on schedule, from the start so that late
// wake-ups do not add up, and says the first send that failed (a port
// unreachable aside: the replies say what came of it).
func (s Session) send(ctx context.Context, conn *net.UDPConn, c *collector, ee ErrorEstimate) error {
	p := SenderPacket{ErrorEstimate: ee, Padding: make([]byte, max(s.Size-BaseLenOf(s.Key), 0))}
	buf := make([]byte, 0, MaxPacketLen)
	start := time.Now()
	var sendErr error
	for i := range s.Count {
		if wait := time.Until(start.Add(time.Duration(i) * s.Interval)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		if ctx.Err() != nil {
			break
		}
		now := time.Now()
		p.Seq, p.Timestamp = uint32(i), NewTimestamp(now, s.Format)
		b, err := p.Append(buf[:0], s.Key)
		if err != nil {
			return fmt.Errorf("encoding packet %d: %w", i, err) // cannot happen: the session is validated
		}
		c.sent(now, p.Timestamp)
		if _, err := conn.Write(b); err != nil {
			if refused(err) {
				c.portUnreachable(err)
			} else if sendErr == nil {
				sendErr = fmt.Errorf("sending packet %d: %w", i, err)
			}
		}
	}
	return sendErr
}
