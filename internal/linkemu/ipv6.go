package linkemu

import (
	"encoding/binary"
	"net/netip"
)

// IPv6 (RFC 8200) through the engine: a packet goes to the port that owns
// the fixed header's destination address; routers take one off its hop
// limit (there is no header checksum to mend) and answer with ICMPv6
// (RFC 4443): time exceeded when the hop limit runs out, and packet too
// big, with the direction's MTU, for any packet larger than it, since
// IPv6 routers never fragment. Super-packets are TCP over IPv6 (TSO6) or
// UDP (USO), segmented as for IPv4 but with a payload length for a total
// length, no IP id and the IPv6 pseudo-header under the checksum.

const (
	ip6HeaderLen = 40
	// icmp6MaxLen is the largest ICMPv6 error the engine sends: the IPv6
	// minimum MTU, as RFC 4443 2.4(c) asks and Linux's errors are.
	icmp6MaxLen = 1280

	protoICMPv6       = 58
	icmp6PacketTooBig = 2
	icmp6TimeExceeded = 3
	// icmp6Informational is the lowest type of an informational message:
	// the types below it are errors.
	icmp6Informational = 128

	// maxExtHeaders bounds the extension headers the engine walks to find
	// a packet's upper-layer header.
	maxExtHeaders = 8
)

// IPv6 next-header values of extension headers (RFC 8200 4, RFC 7045).
const (
	extHopByHop = 0
	extRouting  = 43
	extFragment = 44
	extAuth     = 51
	extDestOpts = 60
	extMobility = 135
	extHIP      = 139
	extShim6    = 140
)

// isIPv6 says whether a is an IPv6 address as packets carry it: not an
// IPv4-mapped one (a packet with one is IPv4 on the wire), and no zone.
func isIPv6(a netip.Addr) bool { return a.Is6() && !a.Is4In6() && a.Zone() == "" }

// upperLayer walks the extension headers of the IPv6 packet pkt, at most
// maxExtHeaders of them, and returns its upper-layer protocol and the
// offset of that header. plain says that the chain held only hop-by-hop
// and destination options, which segmentation copies into every segment
// unchanged. ok is false when the chain runs past the packet or the
// bound, or a fragment header says the upper-layer header is in another
// fragment (the offset is then that of the fragment's data).
func upperLayer(pkt []byte) (proto uint8, off int, plain, ok bool) {
	proto, off, plain = pkt[6], ip6HeaderLen, true
	for walked := 0; ; walked++ {
		if off > len(pkt) {
			return proto, off, plain, false
		}
		if !isExtHeader(proto) {
			return proto, off, plain, true
		}
		if walked == maxExtHeaders || off+8 > len(pkt) {
			return proto, off, plain, false
		}
		next := pkt[off]
		switch proto {
		case extHopByHop, extDestOpts:
			off += (int(pkt[off+1]) + 1) * 8
		case extFragment:
			plain = false
			if binary.BigEndian.Uint16(pkt[off+2:])>>3 != 0 {
				return next, off + 8, plain, false
			}
			off += 8
		case extAuth: // its length counts 4-byte words, less 2
			plain = false
			off += (int(pkt[off+1]) + 2) * 4
		default: // routing, mobility, HIP, shim6: 8-byte units, less 1
			plain = false
			off += (int(pkt[off+1]) + 1) * 8
		}
		proto = next
	}
}

// isExtHeader says whether next header value p is an extension header
// that upperLayer walks past.
func isExtHeader(p uint8) bool {
	switch p {
	case extHopByHop, extRouting, extFragment, extAuth, extDestOpts, extMobility, extHIP, extShim6:
		return true
	}
	return false
}

// answerable6 says whether a router may answer the IPv6 packet pkt with
// an ICMPv6 error (packet too big if tooBig, else time exceeded), as RFC
// 4443 2.4(e) says: never an ICMPv6 error itself, nor a packet from an
// address that names no single node, nor one to a multicast group unless
// the answer is packet too big. As Linux does, a packet whose upper-layer
// header cannot be read (a later fragment, a chain past the packet) is
// answered.
func answerable6(pkt []byte, tooBig bool) bool {
	if len(pkt) < ip6HeaderLen || pkt[0]>>4 != 6 {
		return false
	}
	src, dst := netip.AddrFrom16([16]byte(pkt[8:24])), netip.AddrFrom16([16]byte(pkt[24:40]))
	if src.IsUnspecified() || src.IsMulticast() || dst.IsMulticast() && !tooBig {
		return false
	}
	proto, off, _, ok := upperLayer(pkt)
	if ok && proto == protoICMPv6 {
		return off < len(pkt) && pkt[off] >= icmp6Informational
	}
	return true
}

// icmp6Error writes into buf an IPv6 packet carrying an ICMPv6 error of
// type typ and code from address from about packet orig, with mtu in its
// 32-bit field (packet too big; 0 for time exceeded) and hop limit hops,
// quoting as much of orig as fits in icmp6MaxLen, and returns its length.
func icmp6Error(buf []byte, from netip.Addr, typ, code uint8, mtu uint32, orig []byte, hops byte) int {
	quote := min(len(orig), icmp6MaxLen-ip6HeaderLen-icmpHeader, len(buf)-ip6HeaderLen-icmpHeader)
	n := ip6HeaderLen + icmpHeader + quote
	ip := buf[:ip6HeaderLen]
	clear(ip)
	ip[0] = 0x60 // traffic class and flow label 0, as Linux sends its errors
	binary.BigEndian.PutUint16(ip[4:], uint16(icmpHeader+quote))
	ip[6], ip[7] = protoICMPv6, hops
	f := from.As16()
	copy(ip[8:24], f[:])
	copy(ip[24:40], orig[8:24])
	icmp := buf[ip6HeaderLen:n]
	clear(icmp[:icmpHeader])
	icmp[0], icmp[1] = typ, code
	binary.BigEndian.PutUint32(icmp[4:], mtu)
	copy(icmp[icmpHeader:], orig[:quote])
	binary.BigEndian.PutUint16(icmp[2:], ^fold(sumWords(icmp, uint32(pseudoSum6(ip, protoICMPv6, len(icmp))))))
	return n
}

// pseudoSum6 is the folded, uncomplemented sum of the IPv6 pseudo-header
// (RFC 8200 8.1) of an upper-layer packet of protocol proto and l4len
// bytes after the IPv6 header ip: what a partial checksum field holds.
func pseudoSum6(ip []byte, proto uint8, l4len int) uint16 {
	return fold(sumWords(ip[8:40], uint32(proto)+uint32(l4len>>16)+uint32(l4len&0xffff)))
}
