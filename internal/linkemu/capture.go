package linkemu

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// A capture copies the packets that leave some directions, and those their
// model drops with the reason, into a ring that another goroutine reads:
// the engine thread never waits for a disk. When the ring is full a packet
// is not captured, and counted.

// Why the link model dropped a captured packet; Passed for none.
const (
	Passed  = ""
	ByQueue = "queue"
	ByLoss  = "loss"
	ByDown  = "down"
	ByMTU   = "mtu"
	ByTTL   = "ttl"
)

// Capture is a live capture of some directions: a ring for each engine
// thread that carries some of them.
type Capture struct {
	parts []capturePart
}

// capturePart is a capture's ring on one shard, and its directions there.
type capturePart struct {
	shard int
	dirs  []int
	ring  *captureRing
}

// captureRing is what one shard captures, for the capture's reader.
type captureRing struct {
	snaplen int
	bufs    [][]byte
	full    *ring[captured]
	free    *ring[int32]
	lost    atomic.Uint64
	epoch   time.Time
	dirOf   []int // the Engine's index of each of its shard's directions; nil: the same
}

type captured struct {
	slot    int32
	dir     int32
	reason  string
	at      int64
	n, orig int32
}

// CapturedPacket is one packet a capture saw.
type CapturedPacket struct {
	Dir int
	At  time.Time
	// Reason is why the model dropped it, or Passed.
	Reason  string
	Data    []byte // valid until the next call to Read
	OrigLen int
}

// captureBytes bounds the memory of a capture's ring.
const captureBytes = 32 << 20

// startCapture starts capturing the shard's directions dirs, snaplen bytes
// of each packet, from their next packet on. A direction has one capture
// at a time.
func (e *shard) startCapture(dirs []int, snaplen int) (*captureRing, error) {
	if snaplen < 20 || snaplen > 65535 {
		return nil, fmt.Errorf("linkemu: snap length %d: give 20 to 65535 bytes", snaplen)
	}
	n := max(64, min(16384, captureBytes/snaplen))
	c := &captureRing{snaplen: snaplen, full: newRing[captured](n), free: newRing[int32](n), epoch: e.epoch, dirOf: e.globalDir}
	for i := range n {
		c.bufs = append(c.bufs, make([]byte, snaplen))
		c.free.push(int32(i))
	}
	var changes []change
	e.changeMu.Lock()
	defer e.changeMu.Unlock()
	for _, d := range dirs {
		if d < 0 || d >= len(e.m.dirs) {
			return nil, fmt.Errorf("linkemu: no direction %d", d)
		}
		if e.captured[d] {
			return nil, fmt.Errorf("linkemu: direction %s is being captured already", e.current[d].Name)
		}
		changes = append(changes, change{dir: d, capture: c, captureSet: true})
	}
	for _, d := range dirs {
		e.captured[d] = true
	}
	e.queue(changes)
	return c, nil
}

// stopCapture stops capturing the shard's directions dirs.
func (e *shard) stopCapture(dirs []int) {
	var changes []change
	e.changeMu.Lock()
	defer e.changeMu.Unlock()
	for _, d := range dirs {
		if d >= 0 && d < len(e.m.dirs) && e.captured[d] {
			e.captured[d] = false
			changes = append(changes, change{dir: d, captureSet: true})
		}
	}
	e.queue(changes)
}

// Lost is how many packets the capture missed because its reader fell behind.
func (c *Capture) Lost() uint64 {
	var n uint64
	for _, p := range c.parts {
		n += p.ring.lost.Load()
	}
	return n
}

// Read calls fn for each packet captured since the last call, oldest first.
func (c *Capture) Read(fn func(CapturedPacket) error) error {
	type taken struct {
		ring *captureRing
		r    captured
	}
	var got []taken
	for _, p := range c.parts {
		for {
			r, ok := p.ring.full.pop()
			if !ok {
				break
			}
			got = append(got, taken{p.ring, r})
		}
	}
	if len(c.parts) > 1 {
		slices.SortStableFunc(got, func(a, b taken) int { return cmp.Compare(a.r.at, b.r.at) })
	}
	for i, t := range got {
		err := fn(t.ring.packet(t.r))
		t.ring.free.push(t.r.slot)
		if err != nil {
			for _, rest := range got[i+1:] {
				rest.ring.free.push(rest.r.slot)
			}
			return err
		}
	}
	return nil
}

// packet is r as its reader sees it, in the Engine's numbering.
func (c *captureRing) packet(r captured) CapturedPacket {
	dir := int(r.dir)
	if c.dirOf != nil {
		dir = c.dirOf[dir]
	}
	return CapturedPacket{Dir: dir, At: c.epoch.Add(time.Duration(r.at)), Reason: r.reason, Data: c.bufs[r.slot][:r.n], OrigLen: int(r.orig)}
}

// captureSegment copies wire segment k of the packet in slot, which
// direction dir passed (or dropped, for reason) at time t, as the wire
// carried it: a super-packet's segment gets the headers segmentation
// would give it (its checksum stays partial, as a host's own capture of
// offloaded traffic shows it).
func (m *model) captureSegment(d *direction, dir int32, slot int32, k int, reason string, t int64) {
	c := d.capture
	b, ok := c.free.pop()
	if !ok {
		c.lost.Add(1)
		return
	}
	pkt, payload := m.segment(slot, k)
	n := copy(c.bufs[b], pkt)
	n += copy(c.bufs[b][n:], payload)
	c.full.push(captured{slot: b, dir: dir, reason: reason, at: t, n: int32(n), orig: int32(len(pkt) + len(payload))})
}

// segment returns wire segment k of the packet in slot as the wire carries
// it: its headers and the payload after them (nil when pkt is all of it).
// A super-packet's segment gets its headers in the engine's scratch,
// valid until the next call.
func (m *model) segment(slot int32, k int) (pkt, payload []byte) {
	sh := m.pool.shapes[slot]
	head, payload := m.pool.frame(slot)
	if sh.segs == 1 {
		return m.pool.buf(slot), payload
	}
	if payload == nil {
		head, payload = head[:VnetHdrLen+sh.hdr], head[VnetHdrLen+sh.hdr:]
	}
	n := cutHeader(m.hdrScratch, head, sh, k, 1)
	return m.hdrScratch[VnetHdrLen:n], payload[k*sh.mss : k*sh.mss+sh.payloadOf(k, 1)]
}
