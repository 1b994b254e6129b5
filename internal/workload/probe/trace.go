package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/workload/token"
)

// Hop is one hop of a path: the address that answered the probes sent
// with a TTL, and how long it took; an empty address did not answer.
type Hop struct {
	TTL  int           `json:"ttl"`
	Addr string        `json:"addr,omitempty"`
	RTT  time.Duration `json:"rtt_ns,omitempty"`
}

// Bounds of a trace.
const (
	MaxHops      = 64
	traceTries   = 2
	icmpExpired  = 11 // ICMP time exceeded
	icmp6Expired = 3  // ICMPv6 time exceeded
)

// Trace finds the hops from here to the reflector at addr, once it has
// answered the token t, as tracepath does and without privileges: probes
// with a TTL of 1, 2, ... each answered by a router's ICMP "time
// exceeded" (read from the socket's error queue, IP_RECVERR) until the
// reflector itself replies. Each TTL is tried twice, waiting up to wait;
// reached says the reflector replied within maxHops.
func Trace(ctx context.Context, addr string, t token.Token, maxHops int, wait time.Duration) (hops []Hop, reached bool, err error) {
	if maxHops < 1 || maxHops > MaxHops {
		return nil, false, fmt.Errorf("tracing %s: give 1 to %d hops", addr, MaxHops)
	}
	raddr, err := net.ResolveUDPAddr("udp", addr)
	var c *net.UDPConn
	if err == nil {
		c, err = net.DialUDP("udp", nil, raddr)
	}
	if err != nil {
		return nil, false, fmt.Errorf("tracing %s: %w", addr, err)
	}
	// The socket options of the reflector's family: IPv4's TTL and ICMP
	// errors, or IPv6's hop limit and ICMPv6 errors.
	level, recvErr, hopLimit := unix.IPPROTO_IP, unix.IP_RECVERR, unix.IP_TTL
	if !raddr.AddrPort().Addr().Unmap().Is4() {
		level, recvErr, hopLimit = unix.IPPROTO_IPV6, unix.IPV6_RECVERR, unix.IPV6_UNICAST_HOPS
	}
	defer c.Close()
	if err := token.GreetUDP(ctx, c, t, max(2*wait, 2*time.Second)); err != nil {
		return nil, false, fmt.Errorf("tracing %s: %w (or the path is down)", addr, err)
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, false, err
	}
	var serr error
	raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), level, recvErr, 1)
	})
	if serr != nil {
		return nil, false, fmt.Errorf("tracing %s: asking for ICMP errors: %w", addr, serr)
	}
	probe := make([]byte, HeaderLen)
	copy(probe, magic[:])
	sentAt := map[uint64]time.Time{}
	// note takes an answer, to this probe or a late one to an earlier TTL:
	// it fills that TTL's hop, and a reply of the reflector ends the trace.
	note := func(a answer) bool {
		ttl := int(a.seq >> 8)
		if ttl < 1 || ttl > len(hops) || hops[ttl-1].Addr != "" {
			return false
		}
		hops[ttl-1].Addr, hops[ttl-1].RTT = a.from.String(), a.at.Sub(sentAt[a.seq])
		if a.final {
			hops, reached = hops[:ttl], true
		}
		return a.final
	}
	for ttl := 1; ttl <= maxHops && ctx.Err() == nil && !reached; ttl++ {
		hops = append(hops, Hop{TTL: ttl})
		for try := range traceTries {
			seq := uint64(ttl<<8 | try)
			binary.BigEndian.PutUint64(probe[4:], seq)
			sent := time.Now()
			sentAt[seq] = sent
			binary.BigEndian.PutUint64(probe[12:], uint64(sent.UnixNano()))
			var answers []answer
			raw.Control(func(fd uintptr) {
				if serr = unix.SetsockoptInt(int(fd), level, hopLimit, ttl); serr != nil {
					return
				}
				// An ICMP error of an earlier probe is pending on the socket
				// (it makes the next send fail): clear it first.
				unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
				if _, serr = unix.Write(int(fd), probe); serr != nil && !errors.Is(serr, unix.EHOSTUNREACH) && !errors.Is(serr, unix.ECONNREFUSED) {
					return
				}
				serr = nil
				answers = awaitHop(ctx, int(fd), seq, wait)
			})
			if serr != nil {
				return hops, false, fmt.Errorf("tracing %s at TTL %d: %w", addr, ttl, serr)
			}
			for _, a := range answers {
				note(a)
			}
			if reached || hops[ttl-1].Addr != "" {
				break
			}
		}
	}
	return hops, reached, ctx.Err()
}

// answer is an answer to a probe: from a router, or the reflector (final).
type answer struct {
	seq   uint64
	from  netip.Addr
	at    time.Time
	final bool
}

// awaitHop gathers answers for up to wait, until the one to probe seq
// comes: routers' ICMP time exceeded, and the reflector's replies (late
// ones to earlier probes too).
func awaitHop(ctx context.Context, fd int, seq uint64, wait time.Duration) []answer {
	buf, oob := make([]byte, MaxSize), make([]byte, 512)
	var out []answer
	for end := time.Now().Add(wait); time.Now().Before(end) && ctx.Err() == nil; {
		left := min(time.Until(end), 100*time.Millisecond)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLERR}}
		if n, err := unix.Poll(fds, int(left/time.Millisecond)+1); err != nil || n == 0 {
			continue
		}
		// ICMP errors wait in the error queue, with the probe that caused them.
		if n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT); err == nil {
			if s, from, ok := expired(buf[:n], oob[:oobn]); ok {
				out = append(out, answer{seq: s, from: from, at: time.Now()})
				if s == seq {
					return out
				}
			}
			continue
		}
		n, _, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_DONTWAIT)
		if err != nil || n < HeaderLen || [4]byte(buf[:4]) != magic {
			continue
		}
		sa, err := unix.Getpeername(fd)
		var from netip.Addr
		switch in := sa.(type) {
		case *unix.SockaddrInet4:
			from = netip.AddrFrom4(in.Addr)
		case *unix.SockaddrInet6:
			from = netip.AddrFrom16(in.Addr).Unmap()
		}
		if err != nil || !from.IsValid() {
			continue
		}
		s := binary.BigEndian.Uint64(buf[4:])
		out = append(out, answer{seq: s, from: from, at: time.Now(), final: true})
		if s>>8 <= seq>>8 {
			return out
		}
	}
	return out
}

// expired reads an error-queue message: the router that answered a probe
// (its seq) with ICMP or ICMPv6 time exceeded. The kernel gives struct
// sock_extended_err (errno, origin, type, code, pad, info, data), then the
// offender's sockaddr_in or sockaddr_in6.
func expired(payload, oob []byte) (uint64, netip.Addr, bool) {
	if len(payload) < 12 || [4]byte(payload[:4]) != magic {
		return 0, netip.Addr{}, false
	}
	seq := binary.BigEndian.Uint64(payload[4:])
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, netip.Addr{}, false
	}
	for _, m := range msgs {
		if len(m.Data) < 16+8 {
			continue
		}
		origin, typ, off := m.Data[4], m.Data[5], m.Data[16:]
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_RECVERR &&
			origin == unix.SO_EE_ORIGIN_ICMP && typ == icmpExpired && binary.NativeEndian.Uint16(off[0:2]) == unix.AF_INET:
			return seq, netip.AddrFrom4([4]byte(off[4:8])), true
		case m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_RECVERR && len(off) >= 24 &&
			origin == unix.SO_EE_ORIGIN_ICMP6 && typ == icmp6Expired && binary.NativeEndian.Uint16(off[0:2]) == unix.AF_INET6:
			// sockaddr_in6: family, port, flow information, then the address.
			return seq, netip.AddrFrom16([16]byte(off[8:24])).Unmap(), true
		}
	}
	return 0, netip.Addr{}, false
}
