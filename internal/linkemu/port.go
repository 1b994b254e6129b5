package linkemu

import (
	"fmt"
	"net/netip"
)

// PortConfig is one host's attachment to the engine: a non-blocking packet
// fd (a TUN device opened without packet information) and the host's
// addresses: packets to them go to this port.
type PortConfig struct {
	Name string
	FD   int
	// Addr is the host's IPv4 address, or the IPv6 address of a host
	// that has no IPv4 one.
	Addr netip.Addr
	// Addr6 is the IPv6 address of a dual-stack host; the zero Addr for
	// none.
	Addr6 netip.Addr
	// writeOnly marks, in a shard, a port another shard reads: this one
	// only delivers to it.
	writeOnly bool
}

// Port moves packets between the engine and one host, a batch at a time,
// as wireguard-go's tun.Device does. The engine's model never sees one: it
// works on the pool's slots, and the shard moves them through its ports,
// one call per batch. A TUN device's batch is what one read(2) gives (a
// packet, or a super-packet with offloads); a test's port may give more.
type Port interface {
	// Read reads packets that are ready now, at least one and at most
	// len(bufs): packet i into bufs[i] (after its virtio-net header when
	// the port carries one), sizes[i] its length. With none ready it
	// returns 0 and an error.
	Read(bufs [][]byte, sizes []int) (int, error)
	// Write puts packets into the host: packet i is heads[i] followed by
	// payloads[i] (nil for a whole packet). It returns how many it wrote
	// and the error that stopped it.
	Write(heads, payloads [][]byte) (int, error)
}

// addrs checks the port's addresses and returns those it has.
func (p PortConfig) addrs() ([]netip.Addr, error) {
	var out []netip.Addr
	if p.Addr.IsValid() {
		if !p.Addr.Is4() && !isIPv6(p.Addr) {
			return nil, fmt.Errorf("linkemu: port %s: address %v is neither IPv4 nor IPv6 as packets carry it", p.Name, p.Addr)
		}
		out = append(out, p.Addr)
	}
	if p.Addr6.IsValid() {
		if !isIPv6(p.Addr6) {
			return nil, fmt.Errorf("linkemu: port %s: Addr6 %v is not an IPv6 address as packets carry it", p.Name, p.Addr6)
		}
		out = append(out, p.Addr6)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("linkemu: port %s has no address", p.Name)
	}
	return out, nil
}
