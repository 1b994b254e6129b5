package icmpecho

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// The IANA protocol numbers of ICMP and ICMPv6 (icmp.ParseMessage's).
const (
	protoICMP   = 1
	protoICMPv6 = 58
)

// cookieLen is the run's random cookie at the start of every echo's data:
// a reply carries it back, so a raw socket, which sees every echo reply of
// the host, keeps only this run's.
const cookieLen = 8

// Why a received packet is not a reply of this run.
var (
	errTruncated = errors.New("truncated")
	errChecksum  = errors.New("bad ICMP checksum")
	errNotReply  = errors.New("not an echo reply")
)

// request is the echo request of sequence number seq, its data the
// cookie then filler up to size bytes. IPv4's checksum is computed here
// (the kernel recomputes it on a datagram socket, whose id it rewrites);
// ICMPv6's is always the kernel's (it covers a pseudo-header).
func request(v6 bool, id, seq int, cookie [cookieLen]byte, size int) ([]byte, error) {
	data := make([]byte, size)
	copy(data, cookie[:])
	for i := cookieLen; i < size; i++ {
		data[i] = byte(i)
	}
	m := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: data}}
	if v6 {
		m.Type = ipv6.ICMPTypeEchoRequest
	}
	b, err := m.Marshal(nil)
	if err != nil {
		return nil, fmt.Errorf("building echo request %d: %w", seq, err)
	}
	return b, nil
}

// echoReply is an echo reply as decoded.
type echoReply struct {
	id, seq int
	data    []byte
}

// decodeReply reads an echo reply from what an ICMP socket received: on
// a raw IPv4 socket, the IPv4 header comes first (it is skipped, its
// options included); ICMPv6 and datagram sockets give the ICMP message
// alone. An IPv4 message's checksum is checked (a raw socket gets the
// packets before the kernel does); ICMPv6's kernel checks it.
func decodeReply(b []byte, v6 bool) (echoReply, error) {
	proto := protoICMP
	if v6 {
		proto = protoICMPv6
	} else if len(b) > 0 && b[0]>>4 == 4 { // an IPv4 header: no ICMP type is 64 to 79 we want
		ihl := int(b[0]&0x0f) * 4
		if ihl < 20 || len(b) < ihl {
			return echoReply{}, fmt.Errorf("IPv4 header of %d bytes in %d: %w", ihl, len(b), errTruncated)
		}
		if total := int(binary.BigEndian.Uint16(b[2:4])); total >= ihl && total < len(b) {
			b = b[:total] // padding after the datagram
		}
		b = b[ihl:]
	}
	if len(b) < 8 {
		return echoReply{}, fmt.Errorf("ICMP message of %d bytes: %w", len(b), errTruncated)
	}
	if !v6 && checksum(b) != 0 {
		return echoReply{}, errChecksum
	}
	m, err := icmp.ParseMessage(proto, b)
	if err != nil {
		return echoReply{}, fmt.Errorf("decoding an ICMP message: %w", err)
	}
	if m.Type != ipv4.ICMPTypeEchoReply && m.Type != ipv6.ICMPTypeEchoReply {
		return echoReply{}, fmt.Errorf("ICMP type %v: %w", m.Type, errNotReply)
	}
	e, ok := m.Body.(*icmp.Echo)
	if !ok || m.Code != 0 {
		return echoReply{}, fmt.Errorf("ICMP echo reply of code %d: %w", m.Code, errNotReply)
	}
	return echoReply{id: e.ID, seq: e.Seq, data: e.Data}, nil
}

// ours says whether the reply carries the run's cookie.
func (r echoReply) ours(cookie [cookieLen]byte) bool {
	return len(r.data) >= cookieLen && bytes.Equal(r.data[:cookieLen], cookie[:])
}

// checksum is the Internet checksum of b (RFC 1071): 0 when b holds its
// own, correct, checksum.
func checksum(b []byte) uint16 {
	var s uint32
	for ; len(b) >= 2; b = b[2:] {
		s += uint32(b[0])<<8 | uint32(b[1])
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}
