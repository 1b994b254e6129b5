package linkemu

import "net/netip"

// PortConfig is one host's attachment to the engine: a non-blocking packet
// fd (a TUN device opened without packet information) and the host's IPv4
// address.
type PortConfig struct {
	Name string
	FD   int
	Addr netip.Addr
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
