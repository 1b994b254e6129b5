package linkemu

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// superFrame builds a TCP super-packet from host src to dst as a TUN device
// with offloads hands it over: a virtio-net header asking for segments of
// mss bytes and a partial checksum, then IPv4 (id 7) and TCP (seq 1000,
// flags) headers and payload bytes that count up.
func superFrame(src, dst, mss, payload int, flags byte) []byte {
	return superFrameOf(false, src, dst, mss, payload, flags)
}

// superFrame6 is superFrame over IPv6: a TSO6 super-packet with a partial
// checksum over the IPv6 pseudo-header.
func superFrame6(src, dst, mss, payload int, flags byte) []byte {
	return superFrameOf(true, src, dst, mss, payload, flags)
}

// superFrameOf is superFrame over IPv6 if v6, else IPv4.
func superFrameOf(v6 bool, src, dst, mss, payload int, flags byte) []byte {
	ihl, gso := ipHeaderLen, byte(gsoTCPv4)
	if v6 {
		ihl, gso = ip6HeaderLen, gsoTCPv6
	}
	f := make([]byte, VnetHdrLen+ihl+20+payload)
	f[0], f[1] = vnetNeedsCsum, gso
	binary.LittleEndian.PutUint16(f[2:], uint16(ihl+20))
	binary.LittleEndian.PutUint16(f[4:], uint16(mss))
	binary.LittleEndian.PutUint16(f[6:], uint16(ihl))
	binary.LittleEndian.PutUint16(f[8:], 16)
	ip := f[VnetHdrLen:]
	if v6 {
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(20+payload))
		ip[6], ip[7] = 6, 64
		copy(ip[8:24], addr6(src).AsSlice())
		copy(ip[24:40], addr6(dst).AsSlice())
	} else {
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(40+payload))
		binary.BigEndian.PutUint16(ip[4:], 7)
		ip[6], ip[8], ip[9] = 0x40, 64, 6
		copy(ip[12:16], addr(src).AsSlice())
		copy(ip[16:20], addr(dst).AsSlice())
		ipChecksum(ip[:20])
	}
	tcp := ip[ihl:]
	binary.BigEndian.PutUint32(tcp[4:], 1000)
	tcp[12], tcp[13] = 5<<4, flags
	sum := pseudoSum(ip, 20+payload)
	if v6 {
		sum = pseudoSum6(ip, 6, 20+payload)
	}
	binary.BigEndian.PutUint16(tcp[16:], sum)
	for i := range payload {
		tcp[20+i] = byte(i)
	}
	return f
}

const (
	ack, psh, fin, cwr = 0x10, 0x08, 0x01, 0x80
)

// TestCutHeader: a piece of a super-packet gets the headers the kernel's
// segmentation would give its segments: length, IP id, sequence number,
// flags, a valid IP checksum and the pseudo-header sum for its length.
func TestCutHeader(t *testing.T) {
	f := superFrame(0, 1, 1000, 4500, ack|psh|fin|cwr)
	sh := shapeOf(f[:VnetHdrLen], f[VnetHdrLen:])
	if sh.segs != 5 || sh.hdr != 40 || sh.wire(4) != 540 || sh.wireBytes(0, 5) != 4700 {
		t.Fatalf("shape %+v", sh)
	}
	for _, c := range []struct {
		first, count   int
		length         int
		id             uint16
		seq            uint32
		flags, gso     byte
		gsoSize, l4Len int
	}{
		{0, 2, 2040, 7, 1000, ack | cwr, gsoTCPv4, 1000, 2020},
		{2, 2, 2040, 9, 3000, ack, gsoTCPv4, 1000, 2020},
		{4, 1, 540, 11, 5000, ack | psh | fin, gsoNone, 0, 520},
	} {
		var dst [smallSlot]byte
		n := cutHeader(dst[:], f, sh, c.first, c.count)
		vnet, ip := dst[:VnetHdrLen], dst[VnetHdrLen:n]
		tcp := ip[20:]
		switch {
		case n != VnetHdrLen+40:
			t.Errorf("%+v: %d header bytes", c, n)
		case int(binary.BigEndian.Uint16(ip[2:])) != c.length || binary.BigEndian.Uint16(ip[4:]) != c.id || checksum(ip[:20]) != 0:
			t.Errorf("%+v: IP length %d, id %d, header checksum %#x", c, binary.BigEndian.Uint16(ip[2:]), binary.BigEndian.Uint16(ip[4:]), checksum(ip[:20]))
		case binary.BigEndian.Uint32(tcp[4:]) != c.seq || tcp[13] != c.flags:
			t.Errorf("%+v: seq %d, flags %#x", c, binary.BigEndian.Uint32(tcp[4:]), tcp[13])
		case vnet[1] != c.gso || int(binary.LittleEndian.Uint16(vnet[4:])) != c.gsoSize || vnet[0] != vnetNeedsCsum:
			t.Errorf("%+v: virtio-net header % x", c, vnet)
		case binary.BigEndian.Uint16(tcp[16:]) != pseudoSum(ip, c.l4Len):
			t.Errorf("%+v: partial checksum %#x, want the pseudo-header sum for %d bytes", c, binary.BigEndian.Uint16(tcp[16:]), c.l4Len)
		}
	}
}

// TestCutHeader6: a piece of a TCPv6 super-packet gets the payload length
// (not a total length), sequence number and flags of its segments, no IP
// id or header checksum to change, and the IPv6 pseudo-header sum for its
// own length.
func TestCutHeader6(t *testing.T) {
	f := superFrame6(0, 1, 1000, 4500, ack|psh|fin|cwr)
	sh := shapeOf(f[:VnetHdrLen], f[VnetHdrLen:])
	if sh.segs != 5 || sh.hdr != 60 || sh.ihl != 40 || !sh.v6 || sh.wire(4) != 560 || sh.wireBytes(0, 5) != 4800 {
		t.Fatalf("shape %+v", sh)
	}
	for _, c := range []struct {
		first, count   int
		payloadLen     int
		seq            uint32
		flags, gso     byte
		gsoSize, l4Len int
	}{
		{0, 2, 2020, 1000, ack | cwr, gsoTCPv6, 1000, 2020},
		{2, 2, 2020, 3000, ack, gsoTCPv6, 1000, 2020},
		{4, 1, 520, 5000, ack | psh | fin, gsoNone, 0, 520},
	} {
		var dst [smallSlot]byte
		n := cutHeader(dst[:], f, sh, c.first, c.count)
		vnet, ip := dst[:VnetHdrLen], dst[VnetHdrLen:n]
		tcp := ip[40:]
		orig := f[VnetHdrLen:]
		switch {
		case n != VnetHdrLen+60:
			t.Errorf("%+v: %d header bytes", c, n)
		case int(binary.BigEndian.Uint16(ip[4:])) != c.payloadLen:
			t.Errorf("%+v: payload length %d", c, binary.BigEndian.Uint16(ip[4:]))
		case !bytes.Equal(ip[:4], orig[:4]) || !bytes.Equal(ip[6:40], orig[6:40]):
			t.Errorf("%+v: IPv6 header % x, want the super-packet's but for its payload length", c, ip[:40])
		case binary.BigEndian.Uint32(tcp[4:]) != c.seq || tcp[13] != c.flags:
			t.Errorf("%+v: seq %d, flags %#x", c, binary.BigEndian.Uint32(tcp[4:]), tcp[13])
		case vnet[1] != c.gso || int(binary.LittleEndian.Uint16(vnet[4:])) != c.gsoSize || vnet[0] != vnetNeedsCsum:
			t.Errorf("%+v: virtio-net header % x", c, vnet)
		case binary.BigEndian.Uint16(tcp[16:]) != pseudoSum6(ip, 6, c.l4Len):
			t.Errorf("%+v: partial checksum %#x, want the pseudo-header sum for %d bytes", c, binary.BigEndian.Uint16(tcp[16:]), c.l4Len)
		}
	}
}

// TestSegmentChecksums: each wire segment the engine cuts from a TCP
// super-packet, of either family, once the receiving kernel completes its
// partial checksum (from csum_start to the end, seeded by the field),
// carries the TCP checksum of that segment over its own pseudo-header
// (RFC 9293 3.1, RFC 8200 8.1), built here byte by byte.
func TestSegmentChecksums(t *testing.T) {
	for _, fam := range families {
		for _, mss := range []int{1000, 1448, 777} {
			f := fam.super(0, 1, mss, 4500, ack|psh|fin)
			sh := shapeOf(f[:VnetHdrLen], f[VnetHdrLen:])
			payload := f[VnetHdrLen+sh.hdr:]
			for k := range sh.segs {
				var dst [smallSlot]byte
				n := cutHeader(dst[:], f, sh, k, 1)
				seg := append(bytes.Clone(dst[VnetHdrLen:n]), payload[k*mss:k*mss+sh.payloadOf(k, 1)]...)
				start := int(binary.LittleEndian.Uint16(dst[6:]))
				field := start + int(binary.LittleEndian.Uint16(dst[8:]))
				binary.BigEndian.PutUint16(seg[field:], checksum(seg[start:]))
				var pseudo []byte
				l4 := seg[sh.ihl:]
				if fam.v6 {
					if int(binary.BigEndian.Uint16(seg[4:])) != len(seg)-40 {
						t.Errorf("%s mss %d segment %d: payload length %d of %d bytes", fam.name, mss, k, binary.BigEndian.Uint16(seg[4:]), len(seg))
					}
					pseudo = append(append(pseudo, seg[8:40]...), 0, 0, 0, 0, 0, 0, 0, 6)
					binary.BigEndian.PutUint32(pseudo[32:], uint32(len(l4)))
				} else {
					if int(binary.BigEndian.Uint16(seg[2:])) != len(seg) || checksum(seg[:20]) != 0 {
						t.Errorf("%s mss %d segment %d: total length %d of %d bytes, header checksum %#x", fam.name, mss, k, binary.BigEndian.Uint16(seg[2:]), len(seg), checksum(seg[:20]))
					}
					pseudo = append(append(pseudo, seg[12:20]...), 0, 6, byte(len(l4)>>8), byte(len(l4)))
				}
				if c := checksum(append(pseudo, l4...)); c != 0 || start != sh.ihl {
					t.Errorf("%s mss %d segment %d: checksum over the pseudo-header %#x, csum_start %d", fam.name, mss, k, c, start)
				}
			}
		}
	}
}

// TestEngineSuperPackets: a super-packet through a fast link arrives whole
// in one write; through a slow one (each segment longer on the wire than
// the coalescing window) as its segments, each with its own headers and
// payload; through a lossy one as the segments the model passed, the
// others counted as loss drops.
func TestEngineSuperPackets(t *testing.T) {
	for _, c := range []struct {
		name  string
		dir   DirConfig
		whole bool
	}{
		{"fast", DirConfig{Name: "a->b", Rate: 10e9, Delay: time.Millisecond}, true},
		{"slow", DirConfig{Name: "a->b", Rate: 10e6, Delay: time.Millisecond}, false},
		{"lossy", DirConfig{Name: "a->b", Rate: 10e6, Delay: time.Millisecond, Loss: LossConfig{Random: 0.5}}, false},
	} {
		for _, fam := range families {
			t.Run(fam.name+"/"+c.name, func(t *testing.T) {
				tn := startNetWith(t, Config{Dirs: []DirConfig{c.dir}, Paths: map[[2]int][]int{{0, 1}: {0}}, Seed: 3, MaxPacket: 1500, Offloads: true}, 2)
				f := fam.super(0, 1, 1000, 4500, ack|psh)
				hdr := fam.hdr + 20
				tn.send(t, 0, f)
				// Until every segment is accounted for and written, and
				// what was written read: a quiet spell on a busy machine
				// proves nothing.
				var got [][]byte
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
					st := tn.eng.Stats()
					done := st.InFlight == 0 && st.Dirs[0].Packets+st.Dirs[0].LossDrops == 5 && st.Ports[1].TxPackets == st.Dirs[0].Packets
					if p, ok := tn.recv(1, 50*time.Millisecond); ok {
						got = append(got, p)
						continue
					}
					if done {
						break
					}
				}
				st := tn.eng.Stats()
				if c.whole {
					if len(got) != 1 || !bytes.Equal(got[0], f) {
						t.Fatalf("%d frames arrived, want the super-packet whole", len(got))
					}
					if st.Dirs[0].Packets != 5 || st.Dirs[0].Bytes != uint64(5*hdr+4500) {
						t.Errorf("counters %+v, want 5 wire segments of %d bytes in all", st.Dirs[0], 5*hdr+4500)
					}
					return
				}
				if uint64(len(got))+st.Dirs[0].LossDrops != 5 || st.Dirs[0].Packets != uint64(len(got)) {
					t.Fatalf("%d segments arrived, %d lost, %d counted: want 5 in all", len(got), st.Dirs[0].LossDrops, st.Dirs[0].Packets)
				}
				prev := -1
				for _, p := range got {
					ip := p[VnetHdrLen:]
					k := int(binary.BigEndian.Uint32(ip[fam.hdr+4:])-1000) / 1000
					if k <= prev || p[1] != gsoNone || !bytes.Equal(ip[hdr:], f[VnetHdrLen+hdr+k*1000:VnetHdrLen+hdr+k*1000+len(ip)-hdr]) {
						t.Errorf("segment %d (after %d): virtio-net % x, %d payload bytes not as sent", k, prev, p[:VnetHdrLen], len(ip)-hdr)
					}
					prev = k
				}
			})
		}
	}
}

// FuzzSuperPacket: whatever virtio-net header and packet a host hands
// over, the engine's reading of its shape stays inside the packet, and
// every piece it may cut has headers of the shape's size and a length
// that adds up.
func FuzzSuperPacket(f *testing.F) {
	seed := superFrame(0, 1, 1000, 4500, ack|psh|fin)
	f.Add(seed[:VnetHdrLen], seed[VnetHdrLen:], 1, 2)
	f.Add([]byte{1, gsoUDPL4, 28, 0, 0x10, 0, 20, 0, 6, 0}, make([]byte, 300), 0, 3)
	noOffset := superFrame(0, 1, 100, 700, ack)
	noOffset[VnetHdrLen+32] = 0 // a TCP header that says it is 0 bytes long
	f.Add(noOffset[:VnetHdrLen], noOffset[VnetHdrLen:], 1, 2)
	// IPv6: TSO6; USO; TCP after hop-by-hop options; after a fragment
	// header, which segmentation cannot copy; extension headers past the
	// slot of a piece's headers; a TSO6 header on IPv4 and a TSO4 one on IPv6.
	seed6 := superFrame6(0, 1, 1000, 4500, ack|psh|fin)
	f.Add(seed6[:VnetHdrLen], seed6[VnetHdrLen:], 2, 3)
	udp6 := packet6(0, 1, 48+3000, 0)
	udp6[6] = 17
	f.Add([]byte{1, gsoUDPL4, 48, 0, 0xe8, 0x03, 40, 0, 6, 0}, udp6, 1, 1)
	hbh := func(ext []byte, next uint8) []byte {
		p := append(bytes.Clone(seed6[VnetHdrLen:VnetHdrLen+40]), ext...)
		p[6], p[40] = ext[0], next
		p = append(p, seed6[VnetHdrLen+40:]...)
		binary.BigEndian.PutUint16(p[4:], uint16(len(p)-40))
		return p
	}
	f.Add(seed6[:VnetHdrLen], hbh([]byte{extHopByHop, 0, 1, 4, 0, 0, 0, 0}, 6), 0, 5)
	f.Add(seed6[:VnetHdrLen], hbh([]byte{extFragment, 0, 0, 1, 0, 0, 0, 9}, 6), 0, 5)
	f.Add(seed6[:VnetHdrLen], hbh(append([]byte{extDestOpts, 30}, make([]byte, 246)...), 6), 0, 5)
	f.Add(seed6[:VnetHdrLen], seed[VnetHdrLen:], 1, 2)
	f.Add(seed[:VnetHdrLen], seed6[VnetHdrLen:], 1, 2)
	f.Fuzz(func(t *testing.T, vnet, pkt []byte, first, count int) {
		sh := shapeOf(vnet, pkt)
		if sh.segs < 1 || sh.hdr+sh.payload != len(pkt) && sh.segs > 1 || sh.segs == 1 && sh.hdr != len(pkt) {
			t.Fatalf("shape %+v of a %d-byte packet", sh, len(pkt))
		}
		if sh.segs == 1 || len(vnet) < VnetHdrLen {
			return
		}
		if sh.hdr > maxSegHeader || sh.v6 != (pkt[0]>>4 == 6) {
			t.Fatalf("shape %+v of a version %d packet: its headers do not fit a piece's slot, or the family is wrong", sh, pkt[0]>>4)
		}
		first = min(max(first, 0), sh.segs-1)
		count = min(max(count, 1), sh.segs-first)
		head := append(append([]byte{}, vnet[:VnetHdrLen]...), pkt...)
		var dst [smallSlot]byte
		n := cutHeader(dst[:], head, sh, first, count)
		ip := dst[VnetHdrLen:n]
		length, want := int(binary.BigEndian.Uint16(ip[2:])), sh.hdr+sh.payloadOf(first, count)
		if sh.v6 {
			length, want = int(binary.BigEndian.Uint16(ip[4:])), want-ip6HeaderLen
		}
		if n != VnetHdrLen+sh.hdr || length != want {
			t.Fatalf("piece %d+%d of %+v: %d header bytes, IP length %d, want %d", first, count, sh, n, length, want)
		}
	})
}

// TestUDPv6Segments: a UDP super-packet over IPv6 (USO, gso_type UDP_L4)
// is cut into datagrams with their own UDP length and IPv6 payload
// length, and a checksum that, completed, holds over each one's own
// pseudo-header.
func TestUDPv6Segments(t *testing.T) {
	const mss, payload = 1200, 3000
	f := make([]byte, VnetHdrLen+48+payload)
	f[0], f[1] = vnetNeedsCsum, gsoUDPL4
	binary.LittleEndian.PutUint16(f[2:], 48)
	binary.LittleEndian.PutUint16(f[4:], mss)
	binary.LittleEndian.PutUint16(f[6:], 40)
	binary.LittleEndian.PutUint16(f[8:], 6)
	ip := f[VnetHdrLen:]
	copy(ip, packet6(0, 1, ip6HeaderLen, 0))
	binary.BigEndian.PutUint16(ip[4:], 8+payload)
	ip[6] = 17
	udp := ip[40:]
	binary.BigEndian.PutUint16(udp[0:], 5001)
	binary.BigEndian.PutUint16(udp[2:], 5201)
	binary.BigEndian.PutUint16(udp[4:], 8+payload)
	binary.BigEndian.PutUint16(udp[6:], pseudoSum6(ip, 17, 8+payload))
	for i := range payload {
		udp[8+i] = byte(i * 7)
	}
	sh := shapeOf(f[:VnetHdrLen], ip)
	if sh.segs != 3 || sh.hdr != 48 || !sh.udp || !sh.v6 {
		t.Fatalf("shape %+v", sh)
	}
	for k := range sh.segs {
		var dst [smallSlot]byte
		n := cutHeader(dst[:], f, sh, k, 1)
		seg := append(bytes.Clone(dst[VnetHdrLen:n]), udp[8+k*mss:8+k*mss+sh.payloadOf(k, 1)]...)
		binary.BigEndian.PutUint16(seg[46:], checksum(seg[40:]))
		pseudo := append(append([]byte{}, seg[8:40]...), 0, 0, 0, 0, 0, 0, 0, 17)
		binary.BigEndian.PutUint32(pseudo[32:], uint32(len(seg)-40))
		switch {
		case int(binary.BigEndian.Uint16(seg[4:])) != len(seg)-40 || int(binary.BigEndian.Uint16(seg[44:])) != len(seg)-40:
			t.Errorf("datagram %d of %d bytes: payload length %d, UDP length %d", k, len(seg), binary.BigEndian.Uint16(seg[4:]), binary.BigEndian.Uint16(seg[44:]))
		case checksum(append(pseudo, seg[40:]...)) != 0:
			t.Errorf("datagram %d: the completed checksum does not hold over its pseudo-header", k)
		}
	}
}
