package linkemu

import (
	"fmt"
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

// Capture is a live capture of some directions.
type Capture struct {
	snaplen int
	bufs    [][]byte
	full    *ring[captured]
	free    *ring[int32]
	lost    atomic.Uint64
	epoch   time.Time
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

// StartCapture starts capturing directions dirs, snaplen bytes of each
// packet, from their next packet on. A direction has one capture at a time.
func (e *Engine) StartCapture(dirs []int, snaplen int) (*Capture, error) {
	if snaplen < 20 || snaplen > 65535 {
		return nil, fmt.Errorf("linkemu: snap length %d: give 20 to 65535 bytes", snaplen)
	}
	n := max(64, min(16384, captureBytes/snaplen))
	c := &Capture{snaplen: snaplen, full: newRing[captured](n), free: newRing[int32](n), epoch: e.epoch}
	for i := range n {
		c.bufs = append(c.bufs, make([]byte, snaplen))
		c.free.push(int32(i))
	}
	var changes []change
	e.changeMu.Lock()
	defer e.changeMu.Unlock()
	for _, d := range dirs {
		if d < 0 || d >= len(e.dirs) {
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

// StopCapture stops capture c on directions dirs (those it was started on).
func (e *Engine) StopCapture(c *Capture, dirs []int) {
	var changes []change
	e.changeMu.Lock()
	defer e.changeMu.Unlock()
	for _, d := range dirs {
		if d >= 0 && d < len(e.dirs) && e.captured[d] {
			e.captured[d] = false
			changes = append(changes, change{dir: d, captureSet: true})
		}
	}
	e.queue(changes)
}

// Lost is how many packets the capture missed because its reader fell behind.
func (c *Capture) Lost() uint64 { return c.lost.Load() }

// Read calls fn for each packet captured since the last call, oldest first.
func (c *Capture) Read(fn func(CapturedPacket) error) error {
	for {
		r, ok := c.full.pop()
		if !ok {
			return nil
		}
		err := fn(CapturedPacket{Dir: int(r.dir), At: c.epoch.Add(time.Duration(r.at)), Reason: r.reason,
			Data: c.bufs[r.slot][:r.n], OrigLen: int(r.orig)})
		c.free.push(r.slot)
		if err != nil {
			return err
		}
	}
}

// captureSegment copies wire segment k of the packet in slot, which
// direction dir passed (or dropped, for reason) at time t, as the wire
// carried it: a super-packet's segment gets the headers segmentation
// would give it (its checksum stays partial, as a host's own capture of
// offloaded traffic shows it).
func (e *Engine) captureSegment(d *direction, dir int32, slot int32, k int, reason string, t int64) {
	c := d.capture
	b, ok := c.free.pop()
	if !ok {
		c.lost.Add(1)
		return
	}
	pkt, payload := e.segment(slot, k)
	n := copy(c.bufs[b], pkt)
	n += copy(c.bufs[b][n:], payload)
	c.full.push(captured{slot: b, dir: dir, reason: reason, at: t, n: int32(n), orig: int32(len(pkt) + len(payload))})
}

// segment returns wire segment k of the packet in slot as the wire carries
// it: its headers and the payload after them (nil when pkt is all of it).
// A super-packet's segment gets its headers in the engine's scratch,
// valid until the next call.
func (e *Engine) segment(slot int32, k int) (pkt, payload []byte) {
	sh := e.pool.shapes[slot]
	head, payload := e.pool.frame(slot)
	if sh.segs == 1 {
		return e.pool.buf(slot), payload
	}
	if payload == nil {
		head, payload = head[:VnetHdrLen+sh.hdr], head[VnetHdrLen+sh.hdr:]
	}
	n := cutHeader(e.hdrScratch, head, sh, k, 1)
	return e.hdrScratch[VnetHdrLen:n], payload[k*sh.mss : k*sh.mss+sh.payloadOf(k, 1)]
}
