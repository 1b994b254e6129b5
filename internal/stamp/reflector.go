package stamp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults and bounds of a reflector's configuration.
const (
	DefaultMaxSessions = 1024
	MaxSessions        = 65536
	DefaultSessionIdle = time.Minute
	DefaultMaxRate     = 1000 // packets a second from one source address
	DefaultBurst       = 100
	// DefaultMaxAddrSessions bounds the sessions of one source address
	// (its ports): one sender cannot fill the table with its ports.
	DefaultMaxAddrSessions = 16
	// DefaultMaxTotalRate and DefaultTotalBurst bound the packets
	// answered a second from all sources together: many sources, each
	// within its own rate, do not make the reflector a flood.
	DefaultMaxTotalRate = 10 * DefaultMaxRate
	DefaultTotalBurst   = 10 * DefaultBurst
	// twampLightMinLen is the shortest TWAMP-light test packet: its
	// sequence number, timestamp and error estimate (RFC 5357 section
	// 4.1.2). A reflector in unauthenticated mode answers one shorter
	// than the base packet with the base packet (RFC 8762 section 4.6).
	twampLightMinLen = 14
)

// ReflectorConfig is a reflector's configuration; its zero value is a
// stateful reflector in unauthenticated mode with the default bounds.
type ReflectorConfig struct {
	// Key selects authenticated mode (RFC 8762 sections 4.2.2, 4.3.2):
	// packets whose HMAC this key does not give are refused. None:
	// unauthenticated mode.
	Key []byte
	// Stateless makes the reflector copy each packet's sequence number
	// into its own (RFC 8762 section 4.3.1, stateless mode). By default
	// it numbers each session's replies from 0 (stateful mode), so that
	// its number tells the sender how many packets reached it: loss on
	// the way there apart from loss on the way back. A session is a
	// sender's address and port.
	Stateless bool
	// MaxSessions bounds the sessions numbered, and the source addresses
	// rate-limited, at once (default DefaultMaxSessions, at most
	// MaxSessions); one unused for SessionIdle (default
	// DefaultSessionIdle) is forgotten, and its sender starts a new
	// session with its next packet.
	MaxSessions int
	SessionIdle time.Duration
	// MaxAddrSessions bounds the sessions of one source address, its
	// ports' (default DefaultMaxAddrSessions, at most MaxSessions).
	MaxAddrSessions int
	// MaxRate is the most packets a second answered from one source
	// address, Burst the most at once above that rate (defaults
	// DefaultMaxRate, DefaultBurst).
	MaxRate float64
	Burst   int
	// MaxTotalRate is the most packets a second answered from all sources
	// together, TotalBurst the most at once above it (defaults
	// DefaultMaxTotalRate, DefaultTotalBurst).
	MaxTotalRate float64
	TotalBurst   int
	// Format is the format of the reflector's timestamps: NTP (the
	// default, which TWAMP-light senders expect) or PTP.
	Format Format
	// Allow, when set, says which sources are answered: a packet from
	// any other is refused (ErrNotAllowed) before anything else is read
	// of it. Nil answers every source.
	Allow func(netip.Addr) bool
	// Audit, when set, is told of the packets refused, at most once a
	// second for each reason (Refusal.Count says how many). It is called
	// from the serving goroutine and must return quickly.
	Audit func(Refusal)
	// Clock describes the host's clock in the error estimates sent
	// (default LocalErrorEstimate, read once a second).
	Clock func(Format) ErrorEstimate
}

// Reflector answers STAMP (and TWAMP-light) test packets on a UDP
// socket. Its methods may be called from any goroutine; Serve runs one
// socket at a time.
type Reflector struct {
	cfg      ReflectorConfig
	mu       sync.Mutex // serves one socket at a time
	sessions *table[netip.AddrPort, uint32]
	limit    limiter
	audit    auditor
	clock    cachedClock

	reflected, refused atomic.Uint64
}

// ReflectorStats counts a reflector's packets.
type ReflectorStats struct {
	Reflected, Refused uint64
}

// NewReflector checks cfg and makes its reflector.
func NewReflector(cfg ReflectorConfig) (*Reflector, error) {
	if len(cfg.Key) > MaxKeyLen {
		return nil, fmt.Errorf("reflector key of %d octets: %w (at most %d)", len(cfg.Key), ErrKey, MaxKeyLen)
	}
	switch {
	case cfg.MaxSessions < 0 || cfg.MaxSessions > MaxSessions:
		return nil, fmt.Errorf("reflector: max sessions %d: give 1 to %d (0: %d)", cfg.MaxSessions, MaxSessions, DefaultMaxSessions)
	case cfg.MaxAddrSessions < 0 || cfg.MaxAddrSessions > MaxSessions:
		return nil, fmt.Errorf("reflector: max sessions of an address %d: give 1 to %d (0: %d)", cfg.MaxAddrSessions, MaxSessions, DefaultMaxAddrSessions)
	case cfg.SessionIdle < 0 || !(cfg.MaxRate >= 0) || cfg.Burst < 0 || !(cfg.MaxTotalRate >= 0) || cfg.TotalBurst < 0:
		return nil, fmt.Errorf("reflector: session idle %v, max rate %v, burst %d, max total rate %v, total burst %d: none may be negative",
			cfg.SessionIdle, cfg.MaxRate, cfg.Burst, cfg.MaxTotalRate, cfg.TotalBurst)
	case cfg.Format > PTP:
		return nil, fmt.Errorf("reflector: timestamp format %v: give NTP or PTP", cfg.Format)
	}
	cfg.MaxSessions = orDefault(cfg.MaxSessions, DefaultMaxSessions)
	cfg.SessionIdle = orDefault(cfg.SessionIdle, DefaultSessionIdle)
	cfg.MaxRate = orDefault(cfg.MaxRate, DefaultMaxRate)
	cfg.Burst = orDefault(cfg.Burst, DefaultBurst)
	cfg.MaxAddrSessions = orDefault(cfg.MaxAddrSessions, DefaultMaxAddrSessions)
	cfg.MaxTotalRate = orDefault(cfg.MaxTotalRate, DefaultMaxTotalRate)
	cfg.TotalBurst = orDefault(cfg.TotalBurst, DefaultTotalBurst)
	if cfg.Clock == nil {
		cfg.Clock = LocalErrorEstimate
	}
	return &Reflector{
		cfg:      cfg,
		sessions: newTable[netip.AddrPort, uint32](cfg.MaxSessions, cfg.SessionIdle).grouped(sessionAddr, cfg.MaxAddrSessions),
		limit: limiter{rate: cfg.MaxRate, burst: float64(cfg.Burst), sources: newTable[netip.Addr, bucket](cfg.MaxSessions, cfg.SessionIdle),
			totalRate: cfg.MaxTotalRate, totalBurst: float64(cfg.TotalBurst)},
		audit: auditor{report: cfg.Audit, interval: time.Second, pending: map[error]*pendingRefusal{}},
		clock: cachedClock{read: cfg.Clock, format: cfg.Format},
	}, nil
}

// sessionAddr is the source a session counts against: an IPv4 address
// (a sender of a dual-stack socket as the IPv4 address it is), or an IPv6
// address's /64, which one host holds whole and may rotate through.
func sessionAddr(a netip.AddrPort) netip.Addr { return sourceOf(a.Addr()) }

// sourceOf is the source an address's packets count against (sessionAddr).
func sourceOf(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		if p, err := a.WithZone("").Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return a
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Stats counts the packets reflected and refused so far.
func (r *Reflector) Stats() ReflectorStats {
	return ReflectorStats{Reflected: r.reflected.Load(), Refused: r.refused.Load()}
}

// Serve answers the test packets arriving on conn (IPv4, IPv6 or dual
// stack) until ctx ends, and returns ctx's error, or the error that
// stopped it reading. It asks the kernel for receive timestamps and
// TTLs on conn, and leaves conn open (with a read deadline past).
func (r *Reflector) Serve(ctx context.Context, conn *net.UDPConn) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.audit.flush()
	if err := prepare(conn); err != nil {
		return fmt.Errorf("reflector on %v: %w", conn.LocalAddr(), err)
	}
	conn.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer stop()
	buf, oob, out := make([]byte, MaxPacketLen+1), make([]byte, oobLen), make([]byte, 0, MaxPacketLen)
	for {
		n, from, arr, err := read(conn, buf, oob)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if timeout(err) {
				// A deadline set by someone else: cleared, unless ctx
				// ended meanwhile (its deadline must stand).
				conn.SetReadDeadline(time.Time{})
				if ctx.Err() != nil {
					return ctx.Err()
				}
				continue
			}
			return fmt.Errorf("reflector on %v: %w", conn.LocalAddr(), err)
		}
		reply, err := r.reflect(out[:0], buf[:n], from, arr)
		if err != nil {
			r.refused.Add(1)
			r.audit.refuse(reasonOf(err), from, err, arr.at)
			continue
		}
		if _, err := conn.WriteToUDPAddrPort(reply, from); err == nil {
			r.reflected.Add(1)
		}
	}
}

// reflect turns the packet b, from a sender, into its reply, appended
// to out; or says why it refuses it. The source's rate is checked first
// (then all sources') and the HMAC next, so that neither a flood nor a
// forged packet makes a session.
func (r *Reflector) reflect(out, b []byte, from netip.AddrPort, arr arrival) ([]byte, error) {
	if r.cfg.Allow != nil && !r.cfg.Allow(from.Addr().Unmap()) {
		return nil, fmt.Errorf("packet from %v: %w", from, ErrNotAllowed)
	}
	if err := r.limit.allow(sourceOf(from.Addr()), arr.at); err != nil {
		return nil, fmt.Errorf("packet from %v: %w", from, err)
	}
	if len(r.cfg.Key) == 0 && len(b) >= twampLightMinLen && len(b) < BaseLen {
		var base [BaseLen]byte // a TWAMP-light packet: answered with the base packet
		copy(base[:], b)
		b = base[:]
	}
	p, err := DecodeSender(b, r.cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("packet from %v: %w", from, err)
	}
	seq := p.Seq
	if !r.cfg.Stateless {
		next, err := r.sessions.get(from, arr.at)
		if err != nil {
			most := r.cfg.MaxSessions
			if errors.Is(err, ErrAddrSessionLimit) {
				most = r.cfg.MaxAddrSessions
			}
			return nil, fmt.Errorf("new session from %v: %w (%d)", from, err, most)
		}
		seq = *next
		*next++
	}
	ee := r.clock.get(arr.at)
	reply := ReflectorPacket{
		Seq:                 seq,
		ErrorEstimate:       ee,
		ReceiveTimestamp:    NewTimestamp(arr.at, ee.Format),
		SenderSeq:           p.Seq,
		SenderTimestamp:     p.Timestamp,
		SenderErrorEstimate: p.ErrorEstimate,
		SenderTTL:           arr.ttl,
		Padding:             p.Padding,
	}
	reply.Timestamp = NewTimestamp(time.Now(), ee.Format)
	out, err = reply.Append(out, r.cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("reply to %v: %w", from, err)
	}
	return out, nil
}

// cachedClock is the host's clock's error estimate, read at most once a
// second.
type cachedClock struct {
	read   func(Format) ErrorEstimate
	format Format
	last   ErrorEstimate
	at     time.Time
}

func (c *cachedClock) get(now time.Time) ErrorEstimate {
	if c.at.IsZero() || now.Sub(c.at).Abs() >= time.Second {
		c.last, c.at = c.read(c.format), now
		c.last.Format = c.format
	}
	return c.last
}
