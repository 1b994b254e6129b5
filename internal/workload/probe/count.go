package probe

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"net/netip"
)

// The reflector numbers what it receives, as STAMP's stateful reflector
// does (RFC 8762, 4.2.1), so that the prober can tell the probes lost on
// the way there from the replies lost on the way back (loss.go).
//
// A probe of at least NumberedLen bytes has room after the header for
// the reflector's count: bytes 36-39 carry how many distinct probes the
// reflector has received in the sender's session, this one included
// (STAMP's reflector sequence number plus one), and bytes 40-43 the
// session's number, drawn at random when the session starts. The prober
// sends zeros there, so a reply from a reflector that does not number
// (an older agent) reads count 0: "not numbered". A session is one
// sender's address and port; a new session (the reflector's first probe
// from a sender, or a sender it forgot) has a new number, so the prober
// sees a count that restarted.

// NumberedLen is the smallest probe with room for the reflector's count.
const NumberedLen = HeaderLen + 8

// Bounds of the reflector's bookkeeping: the senders it numbers at once
// (one reflector serves one prober; a few more are tolerated), and how
// far behind the highest sequence number seen a duplicate is still
// recognised.
const (
	maxSessions = 16
	dedupWindow = 1024
)

// session is one sender's count. seen marks the sequence numbers of the
// window up to top that have arrived (bit s%dedupWindow).
type session struct {
	id      uint32
	count   uint32
	top     uint64
	started bool
	used    uint64 // the counter's clock when last used, for eviction
	seen    [dedupWindow / 64]uint64
}

// receive counts probe seq unless it is a duplicate of one already
// counted within the window. A probe older than the window is counted:
// it cannot be told from a late one.
func (s *session) receive(seq uint64) {
	bit := func(x uint64) (int, uint64) { return int(x % dedupWindow / 64), 1 << (x % 64) }
	switch {
	case !s.started:
		s.started, s.top = true, seq
	case seq > s.top:
		// Forget the numbers the window leaves behind.
		if seq-s.top >= dedupWindow {
			s.seen = [dedupWindow / 64]uint64{}
		} else {
			for k := uint64(1); k <= seq-s.top; k++ {
				i, m := bit(s.top + k)
				s.seen[i] &^= m
			}
		}
		s.top = seq
	case s.top-seq < dedupWindow:
		if i, m := bit(seq); s.seen[i]&m != 0 {
			return // a duplicate
		}
	default:
		// Older than the window: counted, and not marked.
		s.count = min(s.count, math.MaxUint32-1) + 1
		return
	}
	i, m := bit(seq)
	s.seen[i] |= m
	s.count = min(s.count, math.MaxUint32-1) + 1
}

// counter is a reflector's sessions, at most maxSessions: a new sender
// past that takes the place of the one unused the longest.
type counter struct {
	sessions map[netip.AddrPort]*session
	clock    uint64
	newID    func() uint32
}

func newCounter() *counter {
	return &counter{sessions: map[netip.AddrPort]*session{}, newID: func() uint32 { return rand.Uint32() | 1 }}
}

// receive counts a probe with sequence number seq from a sender and
// returns the sender's count and session number.
func (c *counter) receive(from netip.AddrPort, seq uint64) (count, id uint32) {
	c.clock++
	s := c.sessions[from]
	if s == nil {
		if len(c.sessions) >= maxSessions {
			var oldest netip.AddrPort
			var at uint64 = math.MaxUint64
			for k, v := range c.sessions {
				if v.used < at {
					oldest, at = k, v.used
				}
			}
			delete(c.sessions, oldest)
		}
		s = &session{id: c.newID()}
		c.sessions[from] = s
	}
	s.used = c.clock
	s.receive(seq)
	return s.count, s.id
}

// reply is what a prober reads of a reflected probe.
type reply struct {
	Seq                  uint64
	ReflectRx, ReflectTx int64
	// Count and Session are the reflector's numbering (0: not numbered).
	Count, Session uint32
}

// decodeReply reads a reflected probe; false when b is not one.
func decodeReply(b []byte) (reply, bool) {
	if len(b) < HeaderLen || [4]byte(b[:4]) != magic {
		return reply{}, false
	}
	r := reply{
		Seq:       binary.BigEndian.Uint64(b[4:]),
		ReflectRx: int64(binary.BigEndian.Uint64(b[20:])),
		ReflectTx: int64(binary.BigEndian.Uint64(b[28:])),
	}
	if len(b) >= NumberedLen {
		r.Count, r.Session = binary.BigEndian.Uint32(b[36:]), binary.BigEndian.Uint32(b[40:])
	}
	return r, true
}

// reflect turns the probe in b (from a sender) into its reply in place:
// its receive time, its count when it has room for one, and its send
// time, stamped last. False when b is not a probe.
func (c *counter) reflect(b []byte, from netip.AddrPort, rx int64, now func() int64) bool {
	if len(b) < HeaderLen || [4]byte(b[:4]) != magic {
		return false
	}
	count, id := c.receive(from, binary.BigEndian.Uint64(b[4:]))
	binary.BigEndian.PutUint64(b[20:], uint64(rx))
	if len(b) >= NumberedLen {
		binary.BigEndian.PutUint32(b[36:], count)
		binary.BigEndian.PutUint32(b[40:], id)
	}
	binary.BigEndian.PutUint64(b[28:], uint64(now()))
	return true
}
