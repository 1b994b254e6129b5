// Package stamp speaks STAMP, the Simple Two-way Active Measurement
// Protocol (RFC 8762), on the wire as TWAMP light does: far ends that
// run no wanlab (routers, perfSONAR nodes) answer it. It has the
// packets of both kinds (Session-Sender and Session-Reflector test
// packets) in unauthenticated and authenticated mode, a Reflector that
// serves a UDP socket, and a Session that measures round trips, one-way
// delays and loss on each way against any reflector.
//
// Encoding and decoding never panic; a packet that is short, too long,
// fails its HMAC or holds an impossible field is refused with an error
// that errors.Is matches (ErrTruncated, ErrTooLong, ErrAuth,
// ErrMalformed). MBZ fields are sent zeroed and ignored on receipt, as
// RFC 8762 says. The optional extensions of RFC 8972 (TLVs, SSID) are
// not read: they travel as the packet's padding, which a reflector
// sends back.
//
// The package imports nothing of wanlab: measurements and the service
// wire it in.
package stamp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes of the base packets (RFC 8762 sections 4.2 and 4.3; a sender's
// base packet is as long as a reflector's, so that both ways carry the
// same number of octets) and the bounds of this package.
const (
	// BaseLen is a base packet in unauthenticated mode.
	BaseLen = 44
	// AuthBaseLen is a base packet in authenticated mode.
	AuthBaseLen = 112
	// MaxPacketLen is the longest packet encoded or decoded: a jumbo
	// frame's payload.
	MaxPacketLen = 9000
	// MaxKeyLen is the longest HMAC key taken.
	MaxKeyLen = 256
	// HMACLen is the HMAC field: HMAC-SHA-256 truncated to 128 bits
	// (RFC 8762 section 4.4).
	HMACLen = 16
	// hmacCovered is what the HMAC covers: the first six 16-octet
	// blocks, every field before it (RFC 8762 section 4.4).
	hmacCovered = 96
)

// Errors of packets, matched with errors.Is.
var (
	// ErrTruncated is a packet shorter than its mode's base packet.
	ErrTruncated = errors.New("packet shorter than the base packet")
	// ErrTooLong is a packet longer than MaxPacketLen.
	ErrTooLong = errors.New("packet too long")
	// ErrMalformed is a field no sender may send: a PTP timestamp of a
	// billion nanoseconds or more, an error estimate's scale over 63.
	ErrMalformed = errors.New("malformed field")
	// ErrAuth is an authenticated packet whose HMAC is not the one its
	// key gives (a wrong key, or an altered packet).
	ErrAuth = errors.New("HMAC does not match (wrong key or altered packet)")
	// ErrKey is a key longer than MaxKeyLen.
	ErrKey = errors.New("HMAC key too long")
)

// SenderPacket is a Session-Sender test packet (RFC 8762 section 4.2).
type SenderPacket struct {
	// Seq counts the session's packets from 0.
	Seq uint32
	// Timestamp is when the packet was sent, in ErrorEstimate.Format.
	Timestamp     Timestamp
	ErrorEstimate ErrorEstimate
	// Padding is what follows the base packet: TWAMP's Packet Padding,
	// or RFC 8972's TLVs, which this package does not read. A reflector
	// sends it back, so it sets the packet's size on both ways. A
	// decoded packet's Padding shares the decoded bytes.
	Padding []byte
}

// ReflectorPacket is a Session-Reflector test packet (RFC 8762 section
// 4.3).
type ReflectorPacket struct {
	// Seq is the reflector's sequence number: in stateful mode its count
	// of the packets it reflected in the session before this one, from
	// 0; in stateless mode the sender's.
	Seq uint32
	// Timestamp is when the reflector sent the packet and
	// ReceiveTimestamp when it received the sender's, both in
	// ErrorEstimate.Format.
	Timestamp        Timestamp
	ErrorEstimate    ErrorEstimate
	ReceiveTimestamp Timestamp
	// SenderSeq, SenderTimestamp and SenderErrorEstimate are copied from
	// the sender's packet.
	SenderSeq           uint32
	SenderTimestamp     Timestamp
	SenderErrorEstimate ErrorEstimate
	// SenderTTL is the TTL (IPv4) or hop limit (IPv6) the sender's
	// packet arrived with; 0 when the reflector could not tell.
	SenderTTL uint8
	// Padding is what follows the base packet, copied from the sender's
	// packet. A decoded packet's Padding shares the decoded bytes.
	Padding []byte
}

// layout is where a kind of packet, in a mode, has its fields.
type layout struct {
	kind            string
	base            int
	ts, errEst      int
	rxTS, sSeq, sTS int // reflector packets only
	sErrEst, ttl    int
	authenticated   bool
}

var (
	senderUnauth = layout{kind: "session-sender packet", base: BaseLen, ts: 4, errEst: 12}
	senderAuth   = layout{kind: "authenticated session-sender packet", base: AuthBaseLen, ts: 16, errEst: 24, authenticated: true}
	reflUnauth   = layout{kind: "session-reflector packet", base: BaseLen, ts: 4, errEst: 12,
		rxTS: 16, sSeq: 24, sTS: 28, sErrEst: 36, ttl: 40}
	reflAuth = layout{kind: "authenticated session-reflector packet", base: AuthBaseLen, ts: 16, errEst: 24,
		rxTS: 32, sSeq: 48, sTS: 64, sErrEst: 72, ttl: 80, authenticated: true}
)

// layoutOf picks the layout of a kind of packet for a key: a key (of at
// least one octet) selects authenticated mode.
func layoutOf(reflector bool, key []byte) (layout, error) {
	if len(key) > MaxKeyLen {
		return layout{}, fmt.Errorf("key of %d octets: %w (at most %d)", len(key), ErrKey, MaxKeyLen)
	}
	switch {
	case reflector && len(key) > 0:
		return reflAuth, nil
	case reflector:
		return reflUnauth, nil
	case len(key) > 0:
		return senderAuth, nil
	}
	return senderUnauth, nil
}

// BaseLenOf is the base packet's length in the mode a key selects: a
// key of at least one octet selects authenticated mode, none
// unauthenticated.
func BaseLenOf(key []byte) int {
	if len(key) > 0 {
		return AuthBaseLen
	}
	return BaseLen
}

// mac is the truncated HMAC-SHA-256 of b's first hmacCovered octets.
func mac(key, b []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(b[:hmacCovered])
	return h.Sum(nil)[:HMACLen]
}

// frame checks a packet's length and, in authenticated mode, its HMAC,
// before any field is read (RFC 8762 section 4.4: verified as early as
// possible).
func frame(l layout, b, key []byte) error {
	switch {
	case len(b) > MaxPacketLen:
		return fmt.Errorf("%s of %d octets: %w (at most %d)", l.kind, len(b), ErrTooLong, MaxPacketLen)
	case len(b) < l.base:
		return fmt.Errorf("%s of %d octets: %w of %d octets", l.kind, len(b), ErrTruncated, l.base)
	case l.authenticated && !hmac.Equal(mac(key, b), b[hmacCovered:hmacCovered+HMACLen]):
		return fmt.Errorf("%s: %w", l.kind, ErrAuth)
	}
	return nil
}

// stamped is a timestamp with the format its error estimate names.
type stamped struct {
	ts Timestamp
	f  Format
}

// packet is what encoding and decoding need of a kind of packet.
type packet interface {
	estimates() []ErrorEstimate
	stamps() []stamped
	padding() []byte
	// put writes the fields to b, laid out as l says.
	put(l layout, b []byte)
}

// encode appends p to dst, laid out for its kind and key's mode: its
// fields, its padding and, authenticated, its HMAC; after checking that
// its error estimates and timestamps can be sent.
func encode(dst []byte, reflector bool, key []byte, p packet) ([]byte, error) {
	l, err := layoutOf(reflector, key)
	if err != nil {
		return dst, err
	}
	for _, e := range p.estimates() {
		if err := e.check(); err != nil {
			return dst, fmt.Errorf("%s: %w", l.kind, err)
		}
	}
	if err := checkTimestamps(l.kind, p.stamps()); err != nil {
		return dst, err
	}
	n := l.base + len(p.padding())
	if n > MaxPacketLen {
		return dst, fmt.Errorf("%s of %d octets: %w (at most %d)", l.kind, n, ErrTooLong, MaxPacketLen)
	}
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	b := dst[start:]
	p.put(l, b)
	copy(b[l.base:], p.padding())
	if l.authenticated {
		copy(b[hmacCovered:], mac(key, b))
	}
	return dst, nil
}

// decode reads b, of its kind in key's mode: its length and HMAC first,
// then its fields (read), then its timestamps.
func decode[P packet](b []byte, reflector bool, key []byte, read func(l layout, b []byte) P) (P, error) {
	var none P
	l, err := layoutOf(reflector, key)
	if err == nil {
		err = frame(l, b, key)
	}
	if err != nil {
		return none, err
	}
	p := read(l, b)
	if err := checkTimestamps(l.kind, p.stamps()); err != nil {
		return none, err
	}
	return p, nil
}

// tail is what follows the base packet in b (nil when nothing does),
// with no room to grow into b's spare capacity.
func tail(l layout, b []byte) []byte {
	if len(b) == l.base {
		return nil
	}
	return b[l.base:len(b):len(b)]
}

// checkTimestamps checks that each timestamp is valid in its format.
func checkTimestamps(kind string, all []stamped) error {
	for _, s := range all {
		if _, err := s.ts.Time(s.f); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
	}
	return nil
}

// Append appends p, encoded with key (none: unauthenticated mode; one:
// authenticated, with its HMAC), to dst. Its MBZ fields are zeroed.
func (p SenderPacket) Append(dst, key []byte) ([]byte, error) { return encode(dst, false, key, p) }

// DecodeSender decodes a Session-Sender test packet in the mode key
// selects (none: unauthenticated), checking its HMAC first.
func DecodeSender(b, key []byte) (SenderPacket, error) {
	return decode(b, false, key, func(l layout, b []byte) SenderPacket {
		return SenderPacket{
			Seq:           binary.BigEndian.Uint32(b),
			Timestamp:     Timestamp(binary.BigEndian.Uint64(b[l.ts:])),
			ErrorEstimate: parseErrorEstimate(binary.BigEndian.Uint16(b[l.errEst:])),
			Padding:       tail(l, b),
		}
	})
}

func (p SenderPacket) estimates() []ErrorEstimate { return []ErrorEstimate{p.ErrorEstimate} }
func (p SenderPacket) stamps() []stamped          { return []stamped{{p.Timestamp, p.ErrorEstimate.Format}} }
func (p SenderPacket) padding() []byte            { return p.Padding }

func (p SenderPacket) put(l layout, b []byte) {
	binary.BigEndian.PutUint32(b, p.Seq)
	binary.BigEndian.PutUint64(b[l.ts:], uint64(p.Timestamp))
	binary.BigEndian.PutUint16(b[l.errEst:], p.ErrorEstimate.wire())
}

// Append appends p, encoded with key (none: unauthenticated mode; one:
// authenticated, with its HMAC), to dst. Its MBZ fields are zeroed.
func (p ReflectorPacket) Append(dst, key []byte) ([]byte, error) { return encode(dst, true, key, p) }

// DecodeReflector decodes a Session-Reflector test packet in the mode
// key selects (none: unauthenticated), checking its HMAC first.
func DecodeReflector(b, key []byte) (ReflectorPacket, error) {
	return decode(b, true, key, func(l layout, b []byte) ReflectorPacket {
		return ReflectorPacket{
			Seq:                 binary.BigEndian.Uint32(b),
			Timestamp:           Timestamp(binary.BigEndian.Uint64(b[l.ts:])),
			ErrorEstimate:       parseErrorEstimate(binary.BigEndian.Uint16(b[l.errEst:])),
			ReceiveTimestamp:    Timestamp(binary.BigEndian.Uint64(b[l.rxTS:])),
			SenderSeq:           binary.BigEndian.Uint32(b[l.sSeq:]),
			SenderTimestamp:     Timestamp(binary.BigEndian.Uint64(b[l.sTS:])),
			SenderErrorEstimate: parseErrorEstimate(binary.BigEndian.Uint16(b[l.sErrEst:])),
			SenderTTL:           b[l.ttl],
			Padding:             tail(l, b),
		}
	})
}

func (p ReflectorPacket) estimates() []ErrorEstimate {
	return []ErrorEstimate{p.ErrorEstimate, p.SenderErrorEstimate}
}

func (p ReflectorPacket) stamps() []stamped {
	return []stamped{{p.Timestamp, p.ErrorEstimate.Format}, {p.ReceiveTimestamp, p.ErrorEstimate.Format},
		{p.SenderTimestamp, p.SenderErrorEstimate.Format}}
}

func (p ReflectorPacket) padding() []byte { return p.Padding }

func (p ReflectorPacket) put(l layout, b []byte) {
	binary.BigEndian.PutUint32(b, p.Seq)
	binary.BigEndian.PutUint64(b[l.ts:], uint64(p.Timestamp))
	binary.BigEndian.PutUint16(b[l.errEst:], p.ErrorEstimate.wire())
	binary.BigEndian.PutUint64(b[l.rxTS:], uint64(p.ReceiveTimestamp))
	binary.BigEndian.PutUint32(b[l.sSeq:], p.SenderSeq)
	binary.BigEndian.PutUint64(b[l.sTS:], uint64(p.SenderTimestamp))
	binary.BigEndian.PutUint16(b[l.sErrEst:], p.SenderErrorEstimate.wire())
	b[l.ttl] = p.SenderTTL
}
