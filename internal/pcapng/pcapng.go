// Package pcapng writes capture files in the pcapng format (IETF draft
// draft-ietf-opsawg-pcapng), which tcpdump, tshark and Wireshark read: a
// section, one interface per captured link direction (raw IP packets,
// IPv4 or IPv6 as each one's version says; nanosecond timestamps) and
// enhanced packet blocks, each with an optional comment. wanlab's engine
// uses the comment to say why the link model dropped a packet; gopacket's
// writer has no per-packet comment, and the format is small.
package pcapng

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// LinkTypeRaw is LINKTYPE_RAW: packets begin with their IP header.
const LinkTypeRaw = 101

const (
	blockSection   = 0x0A0D0D0A
	blockInterface = 0x00000001
	blockPacket    = 0x00000006
	byteOrderMagic = 0x1A2B3C4D

	optEnd        = 0
	optComment    = 1
	optIfName     = 2
	optIfTsresol  = 9
	optShbUserapp = 4
	optEpbFlags   = 2
)

// Inbound and Outbound are packets' directions (the epb_flags option).
const (
	Inbound  = 1
	Outbound = 2
)

// Writer writes a pcapng file: the section header when made, then
// interfaces and packets. Call Flush before closing what it writes to.
type Writer struct {
	w      *bufio.Writer
	ifaces int
	buf    []byte
}

// NewWriter writes a section header naming app, the application that wrote it.
func NewWriter(w io.Writer, app string) (*Writer, error) {
	wr := &Writer{w: bufio.NewWriterSize(w, 1<<16)}
	var opts []byte
	opts = option(opts, optShbUserapp, []byte(app))
	opts = option(opts, optEnd, nil)
	body := make([]byte, 16, 16+len(opts))
	binary.LittleEndian.PutUint32(body[0:], byteOrderMagic)
	binary.LittleEndian.PutUint16(body[4:], 1) // version 1.0
	binary.LittleEndian.PutUint16(body[6:], 0)
	binary.LittleEndian.PutUint64(body[8:], ^uint64(0)) // section length not given
	return wr, wr.block(blockSection, append(body, opts...))
}

// AddInterface declares an interface (a captured link direction) of name,
// capturing at most snaplen bytes of each packet, and returns its id.
func (w *Writer) AddInterface(name string, snaplen int) (int, error) {
	body := make([]byte, 8)
	binary.LittleEndian.PutUint16(body[0:], LinkTypeRaw)
	binary.LittleEndian.PutUint32(body[4:], uint32(snaplen))
	body = option(body, optIfName, []byte(name))
	body = option(body, optIfTsresol, []byte{9}) // nanoseconds
	body = option(body, optEnd, nil)
	id := w.ifaces
	w.ifaces++
	return id, w.block(blockInterface, body)
}

// Packet is one captured packet.
type Packet struct {
	Interface int
	Time      time.Time
	// Data is what was captured of a packet of OrigLen bytes.
	Data    []byte
	OrigLen int
	// Flags is Inbound or Outbound, or 0 for unknown.
	Flags uint32
	// Comment is shown by Wireshark with the packet (frame.comment).
	Comment string
}

// WritePacket writes an enhanced packet block.
func (w *Writer) WritePacket(p Packet) error {
	if p.Interface < 0 || p.Interface >= w.ifaces {
		return fmt.Errorf("pcapng: no interface %d", p.Interface)
	}
	ts := uint64(p.Time.UnixNano())
	b := w.buf[:0]
	b = binary.LittleEndian.AppendUint32(b, uint32(p.Interface))
	b = binary.LittleEndian.AppendUint32(b, uint32(ts>>32))
	b = binary.LittleEndian.AppendUint32(b, uint32(ts))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Data)))
	b = binary.LittleEndian.AppendUint32(b, uint32(max(p.OrigLen, len(p.Data))))
	b = append(b, p.Data...)
	b = pad(b)
	if p.Flags != 0 {
		b = option(b, optEpbFlags, binary.LittleEndian.AppendUint32(nil, p.Flags))
	}
	if p.Comment != "" {
		b = option(b, optComment, []byte(p.Comment))
	}
	if p.Flags != 0 || p.Comment != "" {
		b = option(b, optEnd, nil)
	}
	w.buf = b
	return w.block(blockPacket, b)
}

// Flush writes what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }

// block writes a block of a type around body (padded to 4 bytes).
func (w *Writer) block(typ uint32, body []byte) error {
	total := uint32(12 + len(body))
	var head [8]byte
	binary.LittleEndian.PutUint32(head[0:], typ)
	binary.LittleEndian.PutUint32(head[4:], total)
	w.w.Write(head[:])
	w.w.Write(body)
	_, err := w.w.Write(binary.LittleEndian.AppendUint32(nil, total))
	return err
}

// option appends an option (code, length, value padded to 4 bytes).
func option(b []byte, code uint16, value []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(value)))
	b = append(b, value...)
	return pad(b)
}

func pad(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
