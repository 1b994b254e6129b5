package linkemu

import (
	"encoding/binary"
)

// With offloads, a host's TCP (and UDP, where it asks) hands its TUN device
// super-packets of up to 64 KB with a virtio-net header in front: one read
// carries many wire segments, and the host segments and checksums nothing.
// The engine models each wire segment as the link would carry it, keeps
// each run of segments the model treats alike as one write (the receiving
// TUN takes the super-packet whole, as GRO would have made it), and cuts a
// super-packet where the model drops or delays a segment differently,
// rewriting only the headers of each piece: its payload is never copied
// or checksummed.

// VnetHdrLen is the size of the virtio-net header (struct virtio_net_hdr)
// that precedes each packet on a TUN device opened with IFF_VNET_HDR.
const VnetHdrLen = 10

// virtio-net header fields (include/uapi/linux/virtio_net.h).
const (
	vnetNeedsCsum = 1 // flags: the checksum at csum_start+csum_offset is partial

	gsoNone  = 0
	gsoTCPv4 = 1
	gsoTCPv6 = 4
	gsoUDPL4 = 5 // IPv4 or IPv6
	gsoECN   = 0x80
)

// TUN offload flags for TUNSETOFFLOAD (include/uapi/linux/if_tun.h).
const (
	TunCsum = 0x01
	TunTSO4 = 0x02
	TunTSO6 = 0x04
	TunUSO4 = 0x20
	TunUSO6 = 0x40
)

// shape is how a packet splits into wire segments: each carries the same
// hdr bytes of IP and transport headers and up to mss bytes of payload.
type shape struct {
	hdr     int // IP and transport header bytes of each segment
	ihl     int // IP header bytes (IPv6: with its extension headers)
	mss     int // payload per segment; 0 for a packet that is one segment
	payload int // payload bytes in all (0 for one segment: hdr is all of it)
	segs    int
	udp     bool
	v6      bool
}

// maxSegHeader bounds a segment's headers: a piece's must fit a small
// slot. IPv4 and TCP with options stop at 120 bytes; IPv6 extension
// headers may make more, and such a super-packet is left whole.
const maxSegHeader = smallSlot - VnetHdrLen

// single is the shape of a packet of n bytes that is one segment.
func single(n int) shape { return shape{hdr: n, segs: 1} }

// wire is the size of segment k on the wire.
func (s shape) wire(k int) int {
	if s.segs <= 1 {
		return s.hdr + s.payload
	}
	return s.hdr + min(s.mss, s.payload-k*s.mss)
}

// wireBytes is the size of segments first to first+count-1 on the wire.
func (s shape) wireBytes(first, count int) int {
	return count*s.hdr + s.payloadOf(first, count)
}

// payloadOf is the payload bytes of segments first to first+count-1.
func (s shape) payloadOf(first, count int) int {
	if s.segs <= 1 {
		return s.payload
	}
	return min(count*s.mss, s.payload-first*s.mss)
}

// shapeOf reads the shape of an IPv4 or IPv6 packet from its virtio-net
// header (vnet, nil without offloads). A header the engine cannot follow
// makes the packet one segment, which is what the kernel then sees too.
func shapeOf(vnet, pkt []byte) shape {
	if len(vnet) < VnetHdrLen {
		return single(len(pkt))
	}
	typ := vnet[1] &^ gsoECN
	mss := int(binary.LittleEndian.Uint16(vnet[4:6]))
	if typ == gsoNone || mss == 0 || len(pkt) < ipHeaderLen {
		return single(len(pkt))
	}
	var ihl int
	var proto uint8
	v6 := pkt[0]>>4 == 6
	switch {
	case pkt[0]>>4 == 4 && typ != gsoTCPv6:
		ihl, proto = int(pkt[0]&0x0f)*4, pkt[9]
	case v6 && typ != gsoTCPv4 && len(pkt) >= ip6HeaderLen:
		// Segmentation copies the extension headers into every segment:
		// only options that mean the same in each may come before the
		// transport header.
		var plain, ok bool
		if proto, ihl, plain, ok = upperLayer(pkt); !ok || !plain {
			return single(len(pkt))
		}
	default:
		return single(len(pkt))
	}
	var hdr int
	switch {
	case (typ == gsoTCPv4 || typ == gsoTCPv6) && proto == 6 && len(pkt) >= ihl+20 && pkt[ihl+12]>>4 >= 5:
		hdr = ihl + int(pkt[ihl+12]>>4)*4
	case typ == gsoUDPL4 && proto == 17:
		hdr = ihl + 8
	default:
		return single(len(pkt))
	}
	if ihl < ipHeaderLen || hdr > len(pkt) || hdr > maxSegHeader {
		return single(len(pkt))
	}
	payload := len(pkt) - hdr
	segs := (payload + mss - 1) / mss
	if segs <= 1 {
		return single(len(pkt))
	}
	return shape{hdr: hdr, ihl: ihl, mss: mss, payload: payload, segs: segs, udp: typ == gsoUDPL4, v6: v6}
}

// cutHeader writes into dst the virtio-net header and the IP and transport
// headers of the piece of a super-packet made of segments first to
// first+count-1 (head: the super-packet's virtio-net and packet headers,
// sh its shape), as the kernel's segmentation would make them, and
// returns their length. The piece's checksum stays partial: the field
// holds the pseudo-header sum for its own length, as the kernel expects.
func cutHeader(dst, head []byte, sh shape, first, count int) int {
	n := copy(dst, head[:VnetHdrLen+sh.hdr])
	vnet, ip := dst[:VnetHdrLen], dst[VnetHdrLen:n]
	if count == 1 {
		vnet[1], vnet[4], vnet[5] = gsoNone, 0, 0
	}
	payload := sh.payloadOf(first, count)
	total := sh.hdr + payload
	if sh.v6 {
		// A payload length, which counts the extension headers; no id,
		// no header checksum.
		binary.BigEndian.PutUint16(ip[4:], uint16(total-ip6HeaderLen))
	} else {
		binary.BigEndian.PutUint16(ip[2:], uint16(total))
		id := binary.BigEndian.Uint16(ip[4:])
		binary.BigEndian.PutUint16(ip[4:], id+uint16(first))
		ipChecksum(ip[:sh.ihl])
	}
	l4 := ip[sh.ihl:]
	l4len := total - sh.ihl
	if sh.udp {
		binary.BigEndian.PutUint16(l4[4:], uint16(l4len))
	} else {
		seq := binary.BigEndian.Uint32(l4[4:])
		binary.BigEndian.PutUint32(l4[4:], seq+uint32(first*sh.mss))
		const fin, psh, cwr = 0x01, 0x08, 0x80
		if first > 0 {
			l4[13] &^= cwr // only the first segment signals CWR
		}
		if first+count < sh.segs {
			l4[13] &^= fin | psh // only the last one ends or pushes
		}
	}
	if vnet[0]&vnetNeedsCsum != 0 {
		// csum_start counts from the packet's start, csum_offset from there.
		off := int(binary.LittleEndian.Uint16(vnet[6:])) + int(binary.LittleEndian.Uint16(vnet[8:]))
		if off >= sh.ihl && off+2 <= sh.hdr {
			binary.BigEndian.PutUint16(ip[off:], sh.pseudoSum(ip, l4len))
		}
	}
	return n
}

// pseudoSum is the partial checksum of a segment of l4len transport bytes
// after ip's headers, of the shape's family.
func (s shape) pseudoSum(ip []byte, l4len int) uint16 {
	if !s.v6 {
		return pseudoSum(ip, l4len)
	}
	proto := uint8(6)
	if s.udp {
		proto = 17
	}
	return pseudoSum6(ip, proto, l4len)
}

// pseudoSum is the folded, uncomplemented sum of the IPv4 pseudo-header
// of a transport segment of l4len bytes: what a partial checksum field holds.
func pseudoSum(ip []byte, l4len int) uint16 {
	sum := uint32(ip[9]) + uint32(l4len)
	for i := 12; i < 20; i += 2 {
		sum += uint32(ip[i])<<8 | uint32(ip[i+1])
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}
