package stamp

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Result is a session's outcome.
type Result struct {
	// Target is the address Run was given, Remote what it resolved to.
	Target string
	Remote netip.AddrPort
	// Packets are the packets sent, by sequence number (their index).
	Packets []Packet
	// Replies counts the packets whose reply came back; Duplicates the
	// replies received again, Reordered those that came after a reply
	// to a later packet, and Invalid the datagrams that were no reply
	// to this session (undecodable, failing authentication, or naming a
	// packet not sent).
	Replies, Duplicates, Reordered, Invalid int
	// FirstInvalid is why the first invalid datagram was (nil if none).
	FirstInvalid error
	// Synchronized says that both hosts' error estimates claim clocks
	// synchronised to UTC in every reply (the S bits): the one-way delays
	// mean something. Without it they hold the clocks' offset too.
	Synchronized bool
	Loss         Loss
}

// Packet is one packet's journey. Times are each host's clock: Sent and
// Received the sender's, ReflectorRx and ReflectorTx the reflector's.
type Packet struct {
	Seq  uint32
	Sent time.Time
	// Received is when the reply came back (the kernel's time); zero
	// when none came, and then the fields below are zero too.
	Received                 time.Time
	ReflectorRx, ReflectorTx time.Time
	// RTT is the round trip without the reflector's turnaround
	// ((Received-Sent) - (ReflectorTx-ReflectorRx)); Forward and
	// Backward the one-way delays, meaningful when Synchronized.
	RTT, Forward, Backward time.Duration
	// Synchronized: both hosts' error estimates for this packet claim
	// clocks synchronised to UTC; ReflectorSynchronized: the reflector's
	// does (its S bit), and ReflectorError is its estimate of its
	// timestamps' error.
	Synchronized, ReflectorSynchronized bool
	ReflectorError                      time.Duration
	// ReflectorSeq is the reflector's sequence number for the reply.
	ReflectorSeq uint32
	// SenderTTL is the TTL (hop limit) the packet reached the reflector
	// with, sent with 255 (0: the reflector did not say); ReplyTTL the
	// reply's on arrival here (0: unknown).
	SenderTTL, ReplyTTL uint8
	Duplicates          int
	Reordered           bool
}

// Lost reports whether no reply came back.
func (p Packet) Lost() bool { return p.Received.IsZero() }

// collector gathers a session's replies.
type collector struct {
	count     int
	key       []byte
	synced    bool // this host's clock
	stateful  bool
	all       chan struct{} // closed when every packet has its reply
	mu        sync.Mutex
	res       Result
	wire      []Timestamp // each packet's timestamp as sent, to check the replies' copies
	highest   int         // the highest sequence number replied to, -1 before any
	unreached error       // an ICMP port unreachable, when one came
}

func newCollector(s Session, ee ErrorEstimate) *collector {
	return &collector{
		count: s.Count, key: s.Key, synced: ee.Synchronized, stateful: s.ReflectorStateful,
		all: make(chan struct{}), highest: -1,
		res:  Result{Packets: make([]Packet, 0, s.Count), Synchronized: true},
		wire: make([]Timestamp, 0, s.Count),
	}
}

// sent records the next packet, sent at t with timestamp ts.
func (c *collector) sent(t time.Time, ts Timestamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.res.Packets = append(c.res.Packets, Packet{Seq: uint32(len(c.res.Packets)), Sent: t})
	c.wire = append(c.wire, ts)
}

func (c *collector) portUnreachable(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unreached == nil {
		c.unreached = err
	}
}

// readReplies reads replies until conn is closed.
func (c *collector) readReplies(conn *net.UDPConn) {
	buf, oob := make([]byte, MaxPacketLen+1), make([]byte, oobLen)
	for {
		n, _, arr, err := read(conn, buf, oob)
		switch {
		case err == nil:
			c.reply(buf[:n], arr)
		case refused(err):
			c.portUnreachable(err)
		default:
			return // closed
		}
	}
}

func (c *collector) invalid(err error) {
	c.res.Invalid++
	if c.res.FirstInvalid == nil {
		c.res.FirstInvalid = err
	}
}

// reply takes the datagram b, arrived at arr.
func (c *collector) reply(b []byte, arr arrival) {
	r, err := DecodeReflector(b, c.key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.invalid(err)
		return
	}
	i := int(r.SenderSeq)
	if i >= len(c.wire) || c.wire[i] != r.SenderTimestamp {
		c.invalid(fmt.Errorf("reply naming packet %d, timestamp %#x: %w (not a packet of this session)", r.SenderSeq, uint64(r.SenderTimestamp), ErrMalformed))
		return
	}
	p := &c.res.Packets[i]
	if !p.Lost() {
		p.Duplicates++
		c.res.Duplicates++
		return
	}
	// Decoding checked the timestamps: Time cannot fail.
	p.ReflectorRx, _ = r.ReceiveTimestamp.Time(r.ErrorEstimate.Format)
	p.ReflectorTx, _ = r.Timestamp.Time(r.ErrorEstimate.Format)
	p.Received = arr.at
	p.RTT = p.Received.Sub(p.Sent) - p.ReflectorTx.Sub(p.ReflectorRx)
	p.Forward, p.Backward = p.ReflectorRx.Sub(p.Sent), p.Received.Sub(p.ReflectorTx)
	p.ReflectorSynchronized = r.ErrorEstimate.Synchronized
	p.Synchronized = c.synced && p.ReflectorSynchronized
	p.ReflectorError = r.ErrorEstimate.Estimate()
	p.ReflectorSeq, p.SenderTTL, p.ReplyTTL = r.Seq, r.SenderTTL, arr.ttl
	c.res.Synchronized = c.res.Synchronized && p.Synchronized
	if i < c.highest {
		p.Reordered = true
		c.res.Reordered++
	}
	c.highest = max(c.highest, i)
	c.res.Replies++
	if c.res.Replies == c.count {
		close(c.all)
	}
}

// result is the session's result, once the reading has stopped.
func (c *collector) result(target string, remote netip.AddrPort) Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.res
	r.Target, r.Remote = target, remote
	r.Synchronized = r.Synchronized && r.Replies > 0
	r.Loss = lossOf(r.Packets, c.stateful)
	return r
}

// noReply says why no reply came: nothing listening (an ICMP port
// unreachable), replies that were all invalid, or silence.
func (c *collector) noReply(addr string, raddr *net.UDPAddr, timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	target := addr
	if raddr.String() != addr {
		target = fmt.Sprintf("%s (%s)", addr, raddr)
	}
	switch {
	case c.res.Invalid > 0:
		return fmt.Errorf("STAMP target %s: %w: %d datagrams came back, none a valid reply; the first: %w", target, ErrNoReply, c.res.Invalid, c.res.FirstInvalid)
	case c.unreached != nil:
		return fmt.Errorf("STAMP target %s: %w: port unreachable, no reflector there (%w)", target, ErrNoReply, c.unreached)
	}
	return fmt.Errorf("STAMP target %s: %w within %v of the last of %d packets (a silent or unreachable reflector, or a wrong key)",
		target, ErrNoReply, timeout, len(c.res.Packets))
}
