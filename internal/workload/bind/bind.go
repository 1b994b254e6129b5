// Package bind says where a host's test listeners open: on its test
// address (never every address of a host that has one), and on a port of
// a range a site's firewall lets through, or on any free port.
package bind

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"syscall"
)

// Local is where test listeners open.
type Local struct {
	// Addr is the host's test address; empty for every address.
	Addr string
	// First and Last are the port range, both included; 0 for any free port.
	First, Last int
}

// ParseRange reads a port range as "FIRST-LAST" (or one port).
func ParseRange(s string) (first, last int, err error) {
	lo, hi, found := strings.Cut(s, "-")
	if !found {
		hi = lo
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(lo))
	last, err2 := strconv.Atoi(strings.TrimSpace(hi))
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("port range %q: give FIRST-LAST, as 5201-5299", s)
	case first < 1 || last > 65535 || first > last:
		return 0, 0, fmt.Errorf("port range %q: give ports from 1 to 65535, the first not above the last", s)
	}
	return first, last, nil
}

func (l Local) String() string {
	addr := l.Addr
	if addr == "" {
		addr = "every address"
	}
	if l.First == 0 {
		return addr
	}
	return fmt.Sprintf("%s, ports %d-%d", addr, l.First, l.Last)
}

// ErrNoFreePort means every port of the range is taken.
var ErrNoFreePort = errors.New("every port of the test range is in use")

// listenOn tries each port of the range (or any free port) with open,
// starting at a random one so that listeners opening at once rarely meet.
func (l Local) listenOn(open func(addr string) error) error {
	if l.First == 0 {
		return open(net.JoinHostPort(l.Addr, "0"))
	}
	n := l.Last - l.First + 1
	start := rand.IntN(n)
	for i := range n {
		p := l.First + (start+i)%n
		err := open(net.JoinHostPort(l.Addr, strconv.Itoa(p)))
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
	}
	return fmt.Errorf("%s: %w", l, ErrNoFreePort)
}

// Listen opens a TCP listener with lc: of the family of l's address, or
// of both (IPv4 and IPv6) on every address when l has none.
func (l Local) Listen(lc net.ListenConfig) (net.Listener, error) {
	var ln net.Listener
	err := l.listenOn(func(addr string) (err error) {
		ln, err = lc.Listen(context.Background(), "tcp", addr)
		return err
	})
	return ln, err
}

// ListenUDP opens a UDP socket with lc, of the family of l's address, or
// of both when l has none (as Listen).
func (l Local) ListenUDP(lc net.ListenConfig) (*net.UDPConn, error) {
	var pc net.PacketConn
	err := l.listenOn(func(addr string) (err error) {
		pc, err = lc.ListenPacket(context.Background(), "udp", addr)
		return err
	})
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// Port is where a listener with a fixed port (0: any) opens: that port on
// l's address, which must then be within l's range if it has one.
func (l Local) Port(port int) (Local, error) {
	switch {
	case port == 0:
		return l, nil
	case port < 0 || port > 65535:
		return l, fmt.Errorf("port %d: give 0 (any) to 65535", port)
	case l.First != 0 && (port < l.First || port > l.Last):
		return l, fmt.Errorf("port %d is outside the agent's test ports %d-%d", port, l.First, l.Last)
	}
	return Local{Addr: l.Addr, First: port, Last: port}, nil
}

// ListenPort opens a TCP listener with lc on a fixed port (0: any port of
// l's range), as Port then Listen: the listen of a workload's server.
func (l Local) ListenPort(port int, lc net.ListenConfig) (net.Listener, error) {
	at, err := l.Port(port)
	if err != nil {
		return nil, err
	}
	return at.Listen(lc)
}
