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
	f := make([]byte, VnetHdrLen+40+payload)
	f[0], f[1] = vnetNeedsCsum, gsoTCPv4
	binary.LittleEndian.PutUint16(f[2:], 40)
	binary.LittleEndian.PutUint16(f[4:], uint16(mss))
	binary.LittleEndian.PutUint16(f[6:], 20)
	binary.LittleEndian.PutUint16(f[8:], 16)
	ip := f[VnetHdrLen:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(40+payload))
	binary.BigEndian.PutUint16(ip[4:], 7)
	ip[6], ip[8], ip[9] = 0x40, 64, 6
	copy(ip[12:16], addr(src).AsSlice())
	copy(ip[16:20], addr(dst).AsSlice())
	ipChecksum(ip[:20])
	tcp := ip[20:]
	binary.BigEndian.PutUint32(tcp[4:], 1000)
	tcp[12], tcp[13] = 5<<4, flags
	binary.BigEndian.PutUint16(tcp[16:], pseudoSum(ip, 20+payload))
	for i := range payload {
		ip[40+i] = byte(i)
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
		t.Run(c.name, func(t *testing.T) {
			tn := startNetWith(t, Config{Dirs: []DirConfig{c.dir}, Paths: map[[2]int][]int{{0, 1}: {0}}, Seed: 3, MaxPacket: 1500, Offloads: true}, 2)
			f := superFrame(0, 1, 1000, 4500, ack|psh)
			tn.send(t, 0, f)
			var got [][]byte
			for {
				p, ok := tn.recv(1, 200*time.Millisecond)
				if !ok {
					break
				}
				got = append(got, p)
			}
			st := tn.eng.Stats()
			if c.whole {
				if len(got) != 1 || !bytes.Equal(got[0], f) {
					t.Fatalf("%d frames arrived, want the super-packet whole", len(got))
				}
				if st.Dirs[0].Packets != 5 || st.Dirs[0].Bytes != 4700 {
					t.Errorf("counters %+v, want 5 wire segments of 4700 bytes in all", st.Dirs[0])
				}
				return
			}
			if uint64(len(got))+st.Dirs[0].LossDrops != 5 || st.Dirs[0].Packets != uint64(len(got)) {
				t.Fatalf("%d segments arrived, %d lost, %d counted: want 5 in all", len(got), st.Dirs[0].LossDrops, st.Dirs[0].Packets)
			}
			prev := -1
			for _, p := range got {
				ip := p[VnetHdrLen:]
				k := int(binary.BigEndian.Uint32(ip[24:])-1000) / 1000
				if k <= prev || p[1] != gsoNone || !bytes.Equal(ip[40:], f[VnetHdrLen+40+k*1000:VnetHdrLen+40+k*1000+len(ip)-40]) {
					t.Errorf("segment %d (after %d): virtio-net % x, %d payload bytes not as sent", k, prev, p[:VnetHdrLen], len(ip)-40)
				}
				prev = k
			}
		})
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
	f.Fuzz(func(t *testing.T, vnet, pkt []byte, first, count int) {
		sh := shapeOf(vnet, pkt)
		if sh.segs < 1 || sh.hdr+sh.payload != len(pkt) && sh.segs > 1 || sh.segs == 1 && sh.hdr != len(pkt) {
			t.Fatalf("shape %+v of a %d-byte packet", sh, len(pkt))
		}
		if sh.segs == 1 || len(vnet) < VnetHdrLen {
			return
		}
		first = min(max(first, 0), sh.segs-1)
		count = min(max(count, 1), sh.segs-first)
		head := append(append([]byte{}, vnet[:VnetHdrLen]...), pkt...)
		var dst [smallSlot]byte
		if sh.hdr+VnetHdrLen > len(dst) {
			return // the engine's reads never give a header this long: IP and TCP options stop at 120 bytes
		}
		n := cutHeader(dst[:], head, sh, first, count)
		ip := dst[VnetHdrLen:n]
		if n != VnetHdrLen+sh.hdr || int(binary.BigEndian.Uint16(ip[2:])) != sh.hdr+sh.payloadOf(first, count) {
			t.Fatalf("piece %d+%d of %+v: %d header bytes, IP length %d", first, count, sh, n, binary.BigEndian.Uint16(ip[2:]))
		}
	})
}
