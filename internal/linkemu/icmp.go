package linkemu

import (
	"encoding/binary"
	"net/netip"
)

// The engine's routers answer as real ones do (RFC 792, RFC 1191; for
// IPv6, RFC 4443 and RFC 8201, in ipv6.go): a packet whose TTL runs out
// at a hop gets ICMP time exceeded from that hop's address, and one too
// large for a direction that forbids fragmentation gets "fragmentation
// needed" with the direction's MTU, so traceroute, tracepath and path-MTU
// discovery inside the test-bed see the declared path.

const (
	ipHeaderLen = 20
	icmpHeader  = 8
	// icmpMaxLen is the largest error the engine sends: 576 bytes, the
	// size every IPv4 host must accept, as Linux's own ICMP errors are.
	icmpMaxLen = 576

	// icmpTTL is the TTL routers send their errors with, as Linux does.
	icmpTTL = 64

	icmpUnreachable  = 3
	codeFragNeeded   = 4
	icmpTimeExceeded = 11
)

// routerError is what a router tells a packet's sender, in the packet's
// family's ICMP.
type routerError uint8

const (
	// timeExceeded: ICMP time exceeded (type 11), ICMPv6 time exceeded (3).
	timeExceeded routerError = iota
	// tooBig: ICMP fragmentation needed (3/4), ICMPv6 packet too big (2).
	tooBig
)

// ttlOff is where an IP packet's TTL (IPv4) or hop limit (IPv6) is.
func ttlOff(pkt []byte) int {
	if pkt[0]>>4 == 6 {
		return 7
	}
	return 8
}

// entryExpired is direction d's entry router receiving the packet in slot
// at time t: it reports true if the packet's TTL (hop limit) runs out
// there, and answers it with time exceeded. The router checks the TTL
// before the direction's MTU, as Linux's ip_forward and ip6_forward do;
// crossHops decrements it.
func (m *model) entryExpired(slot int32, d *direction, t int64) bool {
	pkt := m.pool.buf(slot)
	if len(pkt) < ipHeaderLen || pkt[ttlOff(pkt)] > 1 {
		return false
	}
	m.sendError(slot, d.cfg.entryAddr(pkt[0]>>4 == 6), timeExceeded, 0, t, m.hopsBefore(slot))
	return true
}

// crossHops takes a packet over direction d's routers at time t: its entry
// router, whose TTL check entryExpired made, and its hops, each of which
// decrements the TTL (hop limit). It reports false if the TTL ran out at
// a hop, which then answered with time exceeded.
func (m *model) crossHops(slot int32, d *direction, t int64) bool {
	pkt := m.pool.buf(slot)
	if len(pkt) < ipHeaderLen {
		return true
	}
	v6 := pkt[0]>>4 == 6
	ttl, n := int(pkt[8]), int(d.routers)
	if v6 {
		ttl = int(pkt[7])
	}
	if ttl > n {
		if v6 {
			pkt[7] -= byte(n) // no header checksum to mend
		} else {
			decTTL(pkt, n)
		}
		return true
	}
	// The packet dies at hop k (1-based, after the entry router, which
	// let it through with a TTL of at least 2); hops sit evenly along the
	// direction's delay, so each is further away than the one before.
	entry := n - len(d.cfg.Hops)
	k := max(ttl, 1) - entry
	at := t + int64(d.cfg.Delay)*int64(k)/int64(len(d.cfg.Hops)+1)
	m.sendError(slot, d.cfg.hopAddr(k-1, v6), timeExceeded, 0, at, m.hopsBefore(slot)+entry+k-1)
	return false
}

// fragNeeded answers a packet too large for direction d, if it forbids
// fragmentation (an IPv6 packet always does: routers never fragment it),
// from the direction's entry router, else its first hop (or, with
// neither declared, from the packet's destination, as the last router
// before it).
func (m *model) fragNeeded(slot int32, d *direction, t int64) {
	pkt := m.pool.buf(slot)
	var from netip.Addr
	v6 := len(pkt) >= ip6HeaderLen && pkt[0]>>4 == 6
	switch {
	case v6:
		from = netip.AddrFrom16([16]byte(pkt[24:40]))
	case len(pkt) < ipHeaderLen || pkt[6]&0x40 == 0:
		return
	default:
		from = netip.AddrFrom4([4]byte(pkt[16:20]))
	}
	switch {
	case d.entry:
		from = d.cfg.entryAddr(v6)
	case len(d.cfg.Hops) > 0:
		from = d.cfg.hopAddr(0, v6)
	}
	m.sendError(slot, from, tooBig, uint32(d.cfg.MTU), t, m.hopsBefore(slot))
}

// hopsBefore counts the routers the packet in slot crossed before the
// direction it is entering (their entry routers and hops), which an answer
// from the direction's start crosses back.
func (m *model) hopsBefore(slot int32) int {
	n := 0
	for _, d := range m.paths.dirs[m.pool.path[slot]][:m.pool.hop[slot]] {
		n += int(m.dirs[d].routers)
	}
	return n
}

// sendError makes an ICMP (ICMPv6) error of kind about the packet in slot,
// from address from, and schedules it into the packet's source host. The
// error travels back as long as the packet took to get where it died
// (at), and arrives with its TTL less the routers back (back), as if it
// had crossed them. A router with no address of the packet's family (from
// is the zero Addr) answers nothing.
func (m *model) sendError(slot int32, from netip.Addr, kind routerError, mtu uint32, at int64, back int) {
	orig := m.pool.buf(slot)
	v6 := len(orig) > 0 && orig[0]>>4 == 6
	if !from.IsValid() || v6 && !answerable6(orig, kind == tooBig) || !v6 && !answerable(orig) {
		return
	}
	src := m.paths.src[m.pool.path[slot]]
	if src < 0 {
		return
	}
	reply, buf := m.pool.get(classPacket)
	if reply < 0 {
		return
	}
	off := m.frameOff()
	clear(buf[:off]) // a plain packet: no offload, checksums complete
	ttl := byte(max(1, icmpTTL-back))
	var n int
	switch {
	case v6 && kind == tooBig:
		n = icmp6Error(buf[off:], from, icmp6PacketTooBig, 0, mtu, orig, ttl)
	case v6:
		n = icmp6Error(buf[off:], from, icmp6TimeExceeded, 0, 0, orig, ttl)
	case kind == tooBig:
		n = icmpError(buf[off:], from, icmpUnreachable, codeFragNeeded, uint16(mtu), orig, ttl)
	default:
		n = icmpError(buf[off:], from, icmpTimeExceeded, 0, 0, orig, ttl)
	}
	m.pool.len[reply] = int32(off + n)
	m.pool.off[reply] = int16(off)
	m.pool.shapes[reply] = single(n)
	m.pool.path[reply] = m.paths.local[src]
	m.pool.hop[reply] = 0
	m.pool.born[reply] = at
	m.inFlight.Add(1)
	m.icmpSent.Add(1)
	m.seq++
	arrive := at + max(0, at-m.pool.born[slot])
	m.events.push(event{at: arrive, first: arrive, seq: m.seq, slot: reply, window: int32(m.windowOf(DirConfig{}))}) // crosses no direction
}

// answerable says whether a router may answer a packet with an ICMP error:
// never an ICMP error itself, nor a fragment other than the first (RFC 1122 3.2.2).
func answerable(pkt []byte) bool {
	if len(pkt) < ipHeaderLen || pkt[0]>>4 != 4 {
		return false
	}
	if binary.BigEndian.Uint16(pkt[6:8])&0x1fff != 0 {
		return false
	}
	if pkt[9] == 1 {
		hl := headerLen(pkt)
		if len(pkt) <= hl {
			return false
		}
		switch pkt[hl] {
		case 0, 8, 13, 14: // echo reply and request, timestamp and its reply
		default:
			return false
		}
	}
	return true
}

// icmpError writes into buf an IPv4 packet carrying an ICMP error from
// address from about packet orig, quoting as much of orig as fits in
// icmpMaxLen, and returns its length.
func icmpError(buf []byte, from netip.Addr, typ, code uint8, mtu uint16, orig []byte, ttl byte) int {
	quote := min(len(orig), icmpMaxLen-ipHeaderLen-icmpHeader, len(buf)-ipHeaderLen-icmpHeader)
	n := ipHeaderLen + icmpHeader + quote
	ip := buf[:ipHeaderLen]
	clear(ip)
	ip[0] = 0x45
	ip[1] = 0xc0 // internetwork control, as routers send their errors
	binary.BigEndian.PutUint16(ip[2:], uint16(n))
	ip[8] = ttl
	ip[9] = 1 // ICMP
	f4 := from.As4()
	copy(ip[12:16], f4[:])
	copy(ip[16:20], orig[12:16])
	ipChecksum(ip)
	icmp := buf[ipHeaderLen:n]
	clear(icmp[:icmpHeader])
	icmp[0], icmp[1] = typ, code
	binary.BigEndian.PutUint16(icmp[6:], mtu)
	copy(icmp[icmpHeader:], orig[:quote])
	binary.BigEndian.PutUint16(icmp[2:], checksum(icmp))
	return n
}

// headerLen is the IPv4 header's length as the packet says (at least the
// 20 bytes of a header without options), within the packet.
func headerLen(pkt []byte) int {
	if len(pkt) == 0 {
		return 0
	}
	return min(max(int(pkt[0]&0x0f)*4, ipHeaderLen), len(pkt))
}

// decTTL takes n off the TTL of the IPv4 packet pkt and updates its header
// checksum to match, incrementally (RFC 1624), as Linux's ip_decrease_ttl
// does: the TTL is the high byte of a 16-bit word, so the checksum, the
// one's complement of the sum, grows by n<<8.
func decTTL(pkt []byte, n int) {
	pkt[8] -= byte(n)
	sum := uint32(binary.BigEndian.Uint16(pkt[10:])) + uint32(n)<<8
	binary.BigEndian.PutUint16(pkt[10:], uint16(sum&0xffff+sum>>16))
}

// ipChecksum fills in the checksum of an IPv4 header.
func ipChecksum(h []byte) {
	h[10], h[11] = 0, 0
	binary.BigEndian.PutUint16(h[10:], checksum(h))
}

// checksum is the Internet checksum (RFC 1071) of b.
func checksum(b []byte) uint16 { return ^fold(sumWords(b, 0)) }

// sumWords adds b's 16-bit big-endian words (an odd last byte padded with
// a zero) to sum, unfolded: a packet of up to 64 KB cannot overflow it.
func sumWords(b []byte, sum uint32) uint32 {
	for ; len(b) >= 2; b = b[2:] {
		sum += uint32(b[0])<<8 | uint32(b[1])
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

// fold folds a one's complement sum into 16 bits.
func fold(sum uint32) uint16 {
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}
