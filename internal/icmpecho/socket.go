package icmpecho

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kinds of ICMP socket (Pinger.Socket, Result.Socket).
const (
	// SocketAuto is a datagram socket if the host allows one, else a raw one.
	SocketAuto = ""
	// SocketDatagram is the kernel's unprivileged ICMP ("ping") socket:
	// the groups of net.ipv4.ping_group_range may open it (both families).
	// The kernel sets the echoes' identifier (the socket's port) and hands
	// the socket only the replies that carry it.
	SocketDatagram = "datagram"
	// SocketRaw is a raw ICMP socket: it needs CAP_NET_RAW (root), and
	// receives every ICMP message of its family that reaches the host.
	SocketRaw = "raw"
)

// conn is an ICMP socket toward one target.
type conn interface {
	// write sends an ICMP message.
	write(b []byte) error
	// read reads an ICMP message (on a raw IPv4 socket, with its IPv4
	// header), its sender and the kernel's receive time (zero if none).
	read(b, oob []byte) (n int, from netip.Addr, kernel time.Time, err error)
	setReadDeadline(t time.Time) error
	// rewritesID says whether the kernel sets the echoes' identifier.
	rewritesID() bool
	close() error
}

// errDenied marks a socket the host does not let this process open.
var errDenied = errors.New("not permitted")

// open opens an ICMP socket of the kind asked toward target, from source
// if it is valid; SocketAuto tries a datagram socket, then a raw one.
func open(kind string, target, source netip.Addr) (conn, string, error) {
	switch kind {
	case SocketDatagram, SocketRaw:
		c, err := openKind(kind, target, source)
		return c, kind, err
	}
	c, err := openKind(SocketDatagram, target, source)
	if err == nil {
		return c, SocketDatagram, nil
	}
	c, rerr := openKind(SocketRaw, target, source)
	if rerr != nil {
		return nil, "", fmt.Errorf("opening an ICMP socket: neither a datagram one (%w; net.ipv4.ping_group_range names the groups that may) nor a raw one (%w; it needs CAP_NET_RAW)", err, rerr)
	}
	return c, SocketRaw, nil
}

func openKind(kind string, target, source netip.Addr) (conn, error) {
	v6 := target.Is6()
	var (
		pc  net.PacketConn
		err error
	)
	if kind == SocketDatagram {
		pc, err = datagram(v6, source)
	} else {
		network, local := "ip4:icmp", "0.0.0.0"
		if v6 {
			network, local = "ip6:ipv6-icmp", "::"
		}
		if source.IsValid() {
			local = source.String()
		}
		pc, err = net.ListenPacket(network, local)
	}
	if err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			err = fmt.Errorf("%w: %w", errDenied, err)
		}
		return nil, fmt.Errorf("%s ICMP socket: %w", kind, err)
	}
	c := &socket{pc: pc, raw: kind == SocketRaw}
	zone := target.Zone()
	if c.raw {
		c.to = &net.IPAddr{IP: target.AsSlice(), Zone: zone}
	} else {
		c.to = &net.UDPAddr{IP: target.AsSlice(), Zone: zone}
	}
	if sc, ok := pc.(interface {
		SyscallConn() (syscall.RawConn, error)
	}); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) {
				// No broadcast: Go turns it on for raw sockets, and an
				// echo to a subnet's broadcast address would reach every
				// host on it (the kernel refuses it without the flag).
				unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 0)
				c.stamps = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) == nil
				if c.raw {
					onlyReplies(int(fd), v6)
				}
			})
		}
	}
	return c, nil
}

// onlyReplies asks the kernel to hand a raw socket the echo replies only,
// not every ICMP message of the host (best effort: decodeReply sorts them
// out anyway).
func onlyReplies(fd int, v6 bool) {
	if v6 {
		var f unix.ICMPv6Filter // a bit set blocks its type
		for i := range f.Data {
			f.Data[i] = ^uint32(0)
		}
		const reply = 129
		f.Data[reply/32] &^= 1 << (reply % 32)
		unix.SetsockoptICMPv6Filter(fd, unix.SOL_ICMPV6, unix.ICMPV6_FILTER, &f)
		return
	}
	const reply = 0
	unix.SetsockoptInt(fd, unix.SOL_RAW, unix.ICMP_FILTER, int(^uint32(1<<reply))) // a bit set blocks its type
}

// datagram opens the kernel's ICMP datagram socket, bound to source if it
// is valid (as icmp.ListenPacket's "udp4" and "udp6" networks do).
func datagram(v6 bool, source netip.Addr) (net.PacketConn, error) {
	family, proto := unix.AF_INET, unix.IPPROTO_ICMP
	if v6 {
		family, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if source.IsValid() {
		var sa unix.Sockaddr = &unix.SockaddrInet4{Addr: source.As4()}
		if v6 {
			sa = &unix.SockaddrInet6{Addr: source.As16()}
		}
		if err := unix.Bind(fd, sa); err != nil {
			unix.Close(fd)
			return nil, os.NewSyscallError("bind", err)
		}
	}
	f := os.NewFile(uintptr(fd), "icmp datagram socket")
	defer f.Close()
	return net.FilePacketConn(f)
}

// socket is a conn over a datagram (*net.UDPConn) or raw (*net.IPConn)
// ICMP socket.
type socket struct {
	pc     net.PacketConn
	to     net.Addr
	raw    bool
	stamps bool
}

func (c *socket) write(b []byte) error {
	_, err := c.pc.WriteTo(b, c.to)
	return err
}

func (c *socket) read(b, oob []byte) (int, netip.Addr, time.Time, error) {
	var (
		n, oobn int
		from    netip.Addr
		err     error
	)
	switch pc := c.pc.(type) {
	case *net.UDPConn:
		var ap netip.AddrPort
		n, oobn, _, ap, err = pc.ReadMsgUDPAddrPort(b, oob)
		from = ap.Addr()
	case *net.IPConn:
		var a *net.IPAddr
		n, oobn, _, a, err = pc.ReadMsgIP(b, oob)
		if a != nil {
			from, _ = netip.AddrFromSlice(a.IP)
			from = from.WithZone(a.Zone)
		}
	default:
		n, _, err = c.pc.ReadFrom(b)
	}
	if err != nil {
		return 0, netip.Addr{}, time.Time{}, err
	}
	return n, from.Unmap(), kernelTime(oob[:oobn]), nil
}

func (c *socket) setReadDeadline(t time.Time) error { return c.pc.SetReadDeadline(t) }
func (c *socket) rewritesID() bool                  { return !c.raw }
func (c *socket) close() error                      { return c.pc.Close() }

// kernelTime reads SO_TIMESTAMPNS from a message's control data (zero
// without).
func kernelTime(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Unix())
		}
	}
	return time.Time{}
}
