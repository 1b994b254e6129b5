package tcpwatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A lean sock_diag reader: at 100 samples a second, a general netlink
// library's allocations and reflective decoding cost more than the
// kernel's dump itself, so the watch reads the dump into one buffer and
// decodes only what it keeps.

// Sizes and numbers of the sock_diag ABI (linux/inet_diag.h).
const (
	nlmsgHdrLen      = 16
	inetDiagReqLen   = 56
	inetDiagMsgLen   = 72
	inetDiagInfo     = 2 // INET_DIAG_INFO: struct tcp_info
	appLimitedOffset = 7 // the byte of tcpi_delivery_rate_app_limited
)

// liveStates are the connection states whose TCP_INFO moves: established
// and closing ones (not listening, handshaking or time-wait sockets).
const liveStates = 1<<1 | 1<<4 | 1<<5 | 1<<8 | 1<<9 | 1<<11

// lookupBatch is how many single-connection requests go in one datagram
// (the kernel answers each in turn; the answers must fit the socket's
// receive buffer).
const lookupBatch = 256

// diagSocket is a NETLINK_SOCK_DIAG socket in the calling thread's
// network namespace, with its request and receive buffers.
type diagSocket struct {
	fd  int
	seq uint32
	req []byte
	buf []byte
}

func openDiag() (*diagSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("opening a sock_diag socket: %w", err)
	}
	d := &diagSocket{fd: fd, buf: make([]byte, 256<<10)}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		d.Close()
		return nil, fmt.Errorf("binding a sock_diag socket: %w", err)
	}
	// A lost answer must not hang the watch; a batch's answers must fit.
	tv := unix.NsecToTimeval(int64(time.Second))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	}
	return d, nil
}

func (d *diagSocket) Close() error { return unix.Close(d.fd) }

// diagConn is one connection of an answer: its identity as sock_diag gives
// it (to ask for this connection alone), addresses, state, socket inode
// and raw tcp_info.
type diagConn struct {
	Family        uint8
	ID            [48]byte // struct inet_diag_sockid
	State         uint8
	Local, Remote netip.AddrPort
	Inode         uint32
	Info          unix.TCPInfo
	AppLimited    bool
}

// request appends one inet_diag_req_v2 to d.req.
func (d *diagSocket) request(family uint8, flags uint16, states uint32, id *[48]byte) {
	d.seq++
	var r [nlmsgHdrLen + inetDiagReqLen]byte
	binary.NativeEndian.PutUint32(r[0:], uint32(len(r)))
	binary.NativeEndian.PutUint16(r[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(r[6:], unix.NLM_F_REQUEST|flags)
	binary.NativeEndian.PutUint32(r[8:], d.seq)
	r[16], r[17], r[18] = family, unix.IPPROTO_TCP, 1<<(inetDiagInfo-1)
	binary.NativeEndian.PutUint32(r[20:], states)
	if id != nil {
		copy(r[24:], id[:])
	}
	d.req = append(d.req, r[:]...)
}

func (d *diagSocket) send() error {
	defer func() { d.req = d.req[:0] }()
	if err := unix.Sendto(d.fd, d.req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("asking sock_diag for TCP connections: %w", err)
	}
	return nil
}

func (d *diagSocket) recv() ([]byte, error) {
	for {
		n, _, err := unix.Recvfrom(d.fd, d.buf, 0)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return nil, errors.New("sock_diag did not answer within a second")
		case err != nil:
			return nil, fmt.Errorf("reading sock_diag's answer: %w", err)
		}
		return d.buf[:n], nil
	}
}

// dump asks for every live TCP connection of a family and calls fn for
// each; fn must not keep c. A dump walks the kernel's whole connection
// table (all namespaces': ~160 us on a machine with 24 GiB), so a watch
// dumps only to find new connections.
func (d *diagSocket) dump(family uint8, fn func(c *diagConn)) error {
	d.request(family, unix.NLM_F_DUMP, liveStates, nil)
	if err := d.send(); err != nil {
		return err
	}
	seq := d.seq
	var c diagConn
	for {
		b, err := d.recv()
		if err != nil {
			return err
		}
		done, err := parseAnswers(b, &c, func(s uint32, c *diagConn, err error) error {
			if s != seq { // of an earlier, abandoned request
				return nil
			}
			if err != nil {
				return err
			}
			if c != nil {
				fn(c)
			}
			return nil
		})
		if err != nil || done {
			return err
		}
	}
}

// lookup asks for each of the connections ids names alone (a hash lookup
// each, in batches of lookupBatch per datagram) and calls fn with the
// index of each that answered with its TCP_INFO; gone says one did not
// (closed, or now in time-wait).
func (d *diagSocket) lookup(ids []*diagConn, fn func(i int, c *diagConn), gone func(i int)) error {
	var c diagConn
	for from := 0; from < len(ids); from += lookupBatch {
		batch := ids[from:min(from+lookupBatch, len(ids))]
		first := d.seq + 1
		for _, k := range batch {
			d.request(k.Family, 0, 0, &k.ID)
		}
		if err := d.send(); err != nil {
			return err
		}
		answered := 0
		for answered < len(batch) {
			b, err := d.recv()
			if err != nil {
				return err
			}
			if _, err := parseAnswers(b, &c, func(s uint32, c *diagConn, err error) error {
				i := int(s - first)
				if i < 0 || i >= len(batch) {
					return nil
				}
				answered++
				if err != nil || c == nil {
					gone(from + i)
					return nil
				}
				fn(from+i, c)
				return nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseAnswers decodes one datagram of sock_diag's answers, calling fn
// with each message's sequence number and its connection (nil for one
// without TCP_INFO), or the error the kernel sent; done says a dump ended.
func parseAnswers(b []byte, c *diagConn, fn func(seq uint32, c *diagConn, err error) error) (done bool, err error) {
	for len(b) >= nlmsgHdrLen {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		typ := binary.NativeEndian.Uint16(b[4:])
		seq := binary.NativeEndian.Uint32(b[8:])
		if l < nlmsgHdrLen || l > len(b) {
			return false, fmt.Errorf("sock_diag sent a message of %d bytes in %d", l, len(b))
		}
		msg := b[nlmsgHdrLen:l]
		b = b[min(align4(l), len(b)):]
		switch typ {
		case unix.NLMSG_DONE:
			return true, nil
		case unix.NLMSG_ERROR:
			var kerr error = errors.New("sock_diag sent a short error")
			if len(msg) >= 4 {
				kerr = nil
				if e := int32(binary.NativeEndian.Uint32(msg)); e != 0 {
					kerr = fmt.Errorf("sock_diag: %w", unix.Errno(-e))
				}
			}
			if err := fn(seq, nil, kerr); err != nil {
				return true, err
			}
		case unix.SOCK_DIAG_BY_FAMILY:
			var got *diagConn
			if decodeConn(msg, c) {
				got = c
			}
			if err := fn(seq, got, nil); err != nil {
				return true, err
			}
		}
	}
	return false, nil
}

// decodeConn reads an inet_diag_msg and its tcp_info attribute; false for
// a message too short or without TCP_INFO.
func decodeConn(m []byte, c *diagConn) bool {
	if len(m) < inetDiagMsgLen {
		return false
	}
	c.Family, c.State = m[0], m[1]
	copy(c.ID[:], m[4:52])
	sport, dport := binary.BigEndian.Uint16(m[4:]), binary.BigEndian.Uint16(m[6:])
	src, dst := addrOf(m[0], m[8:24]), addrOf(m[0], m[24:40])
	c.Local, c.Remote = netip.AddrPortFrom(src, sport), netip.AddrPortFrom(dst, dport)
	c.Inode = binary.NativeEndian.Uint32(m[68:])
	found := false
	for a := m[inetDiagMsgLen:]; len(a) >= 4; {
		l := int(binary.NativeEndian.Uint16(a[0:]))
		typ := binary.NativeEndian.Uint16(a[2:])
		if l < 4 || l > len(a) {
			break
		}
		if typ == inetDiagInfo {
			v := a[4:l]
			c.Info = unix.TCPInfo{}
			// An older kernel's tcp_info is shorter: the rest stays zero.
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&c.Info)), unsafe.Sizeof(c.Info)), v)
			c.AppLimited = len(v) > appLimitedOffset && v[appLimitedOffset]&1 != 0
			found = true
		}
		a = a[min(align4(l), len(a)):]
	}
	return found
}

func addrOf(family byte, b []byte) netip.Addr {
	if family == unix.AF_INET {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16([16]byte(b[:16])).Unmap()
}

func align4(n int) int { return (n + 3) &^ 3 }
