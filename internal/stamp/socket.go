package stamp

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// oobLen is room for the control messages asked for: a timespec and a
// TTL or hop limit, with their headers.
const oobLen = 128

// prepare asks the kernel, on c, for each datagram's receive time
// (SO_TIMESTAMPNS) and the TTL or hop limit it arrived with
// (IP_RECVTTL, IPV6_RECVHOPLIMIT; on an IPv6 socket both, for IPv4
// senders of a dual-stack socket), and sends with a TTL and hop limit of
// 255, so that the far end's copy of it tells the hops on the way. Each
// is as far as the socket allows: without a kernel timestamp a datagram
// is stamped when read, without its TTL the TTL reads 0.
func prepare(c *net.UDPConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	return raw.Control(func(fd uintptr) {
		s := int(fd)
		unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		unix.SetsockoptInt(s, unix.IPPROTO_IP, unix.IP_RECVTTL, 1)
		unix.SetsockoptInt(s, unix.IPPROTO_IP, unix.IP_TTL, 255)
		if domain, err := unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_DOMAIN); err == nil && domain == unix.AF_INET6 {
			unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1)
			unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, 255)
		}
	})
}

// arrival is what the kernel says of a datagram: when it arrived, and
// its TTL or hop limit (0: unknown).
type arrival struct {
	at  time.Time
	ttl uint8
}

// read reads one datagram into buf, with its source and arrival.
func read(c *net.UDPConn, buf, oob []byte) (int, netip.AddrPort, arrival, error) {
	n, oobn, _, from, err := c.ReadMsgUDPAddrPort(buf, oob)
	if err != nil {
		return 0, netip.AddrPort{}, arrival{}, err
	}
	a := arrival{at: time.Now()}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return n, from, a, nil
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16:
			// struct timespec: seconds, then nanoseconds, in the host's byte order.
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			a.at = time.Unix(sec, nsec)
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_TTL && len(m.Data) >= 4,
			m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_HOPLIMIT && len(m.Data) >= 4:
			a.ttl = uint8(min(binary.NativeEndian.Uint32(m.Data[0:4]), 255))
		}
	}
	return n, from, a, nil
}

// timeout reports whether err is a read deadline passing.
func timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// refused reports whether err is an ICMP port unreachable, reported on a
// connected socket.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// dialNoBroadcast connects a UDP socket to raddr without the broadcast
// flag that Go sets on UDP sockets, so that a session toward a subnet's
// broadcast address is refused by the kernel (EACCES) instead of
// reaching every host on it.
func dialNoBroadcast(ctx context.Context, network string, raddr *net.UDPAddr) (*net.UDPConn, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 0)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	c, err := d.DialContext(ctx, network, raddr.String())
	if err != nil {
		return nil, err
	}
	return c.(*net.UDPConn), nil
}
