package pcapng

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// block is one block of a file, as read back.
type block struct {
	typ  uint32
	body []byte
}

// readBlocks walks a pcapng file's blocks, checking each length both ends.
func readBlocks(t *testing.T, b []byte) []block {
	t.Helper()
	var out []block
	for len(b) > 0 {
		if len(b) < 12 {
			t.Fatalf("%d bytes left: not a block", len(b))
		}
		typ, n := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
		if n%4 != 0 || int(n) > len(b) || binary.LittleEndian.Uint32(b[n-4:]) != n {
			t.Fatalf("block %#x: length %d, trailing length %d, %d bytes left", typ, n, binary.LittleEndian.Uint32(b[n-4:]), len(b))
		}
		out = append(out, block{typ, b[8 : n-4]})
		b = b[n:]
	}
	return out
}

// options reads a block's options from off in its body.
func options(body []byte, off int) map[uint16]string {
	m := map[uint16]string{}
	for off+4 <= len(body) {
		code, n := binary.LittleEndian.Uint16(body[off:]), int(binary.LittleEndian.Uint16(body[off+2:]))
		if code == 0 {
			break
		}
		m[code] = string(body[off+4 : off+4+n])
		off += 4 + (n+3)/4*4
	}
	return m
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, "wanlab test")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := w.AddInterface("a->b", 1500)
	b, _ := w.AddInterface("site cern up", 128)
	at := time.Unix(1700000000, 123456789)
	pkt := []byte{0x45, 0, 0, 21, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	w.WritePacket(Packet{Interface: a, Time: at, Data: pkt, OrigLen: len(pkt)})
	w.WritePacket(Packet{Interface: b, Time: at.Add(time.Millisecond), Data: pkt[:20], OrigLen: 1500, Comment: "dropped: queue full"})
	if err := w.WritePacket(Packet{Interface: 2}); err == nil {
		t.Error("a packet of an interface never added was written")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	blocks := readBlocks(t, buf.Bytes())
	if len(blocks) != 5 || blocks[0].typ != blockSection || blocks[1].typ != blockInterface || blocks[3].typ != blockPacket {
		t.Fatalf("blocks %+v", blocks)
	}
	if binary.LittleEndian.Uint32(blocks[0].body) != byteOrderMagic || options(blocks[0].body, 16)[optShbUserapp] != "wanlab test" {
		t.Error("section header: byte order or application")
	}
	if ifo := options(blocks[2].body, 8); ifo[optIfName] != "site cern up" || ifo[optIfTsresol] != "\x09" || binary.LittleEndian.Uint16(blocks[2].body) != LinkTypeRaw {
		t.Errorf("second interface: %v, link type %d", ifo, binary.LittleEndian.Uint16(blocks[2].body))
	}
	p := blocks[4].body
	ts := uint64(binary.LittleEndian.Uint32(p[4:]))<<32 | uint64(binary.LittleEndian.Uint32(p[8:]))
	if binary.LittleEndian.Uint32(p) != 1 || ts != uint64(at.Add(time.Millisecond).UnixNano()) ||
		binary.LittleEndian.Uint32(p[12:]) != 20 || binary.LittleEndian.Uint32(p[16:]) != 1500 {
		t.Errorf("second packet: interface %d, time %d, lengths %d/%d", binary.LittleEndian.Uint32(p), ts, binary.LittleEndian.Uint32(p[12:]), binary.LittleEndian.Uint32(p[16:]))
	}
	if c := options(p, 20+20)[optComment]; c != "dropped: queue full" {
		t.Errorf("comment %q", c)
	}
	if len(blocks[3].body) != 20+24 { // 21 bytes of packet padded to 24, no options
		t.Errorf("first packet block body of %d bytes", len(blocks[3].body))
	}
}
