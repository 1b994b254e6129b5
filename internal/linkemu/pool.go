package linkemu

import "sync/atomic"

// pool holds packet buffers in fixed-size slots. It grows a chunk at a time up
// to its byte cap, so that steady forwarding allocates nothing.
type pool struct {
	slotSize int
	maxSlots int
	chunks   [][]byte
	free     []int32
	len      []int32 // packet length in each slot
	path     []int32 // path index of the packet in each slot
	hop      []int16 // how many directions of its path the packet has crossed
	born     []int64 // when the engine read the packet
	scratch  []byte  // drains a device when the pool is full
	drops    atomic.Uint64
}

const chunkSlots = 4096

func (p *pool) init(maxPacket int, capBytes int64) {
	p.slotSize = maxPacket
	p.scratch = make([]byte, maxPacket)
	p.maxSlots = int(max(chunkSlots, capBytes/int64(maxPacket)))
}

// get returns a free slot and its whole buffer, or -1 if the pool is at its cap.
func (p *pool) get() (int32, []byte) {
	if len(p.free) == 0 && !p.grow() {
		return -1, nil
	}
	s := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	c := p.chunks[s/chunkSlots]
	off := int(s%chunkSlots) * p.slotSize
	return s, c[off : off+p.slotSize]
}

func (p *pool) put(s int32) { p.free = append(p.free, s) }

// buf returns the packet stored in slot s.
func (p *pool) buf(s int32) []byte {
	c := p.chunks[s/chunkSlots]
	off := int(s%chunkSlots) * p.slotSize
	return c[off : off+int(p.len[s])]
}

func (p *pool) grow() bool {
	base := len(p.chunks) * chunkSlots
	if base+chunkSlots > p.maxSlots {
		return false
	}
	p.chunks = append(p.chunks, make([]byte, chunkSlots*p.slotSize))
	p.len = append(p.len, make([]int32, chunkSlots)...)
	p.path = append(p.path, make([]int32, chunkSlots)...)
	p.hop = append(p.hop, make([]int16, chunkSlots)...)
	p.born = append(p.born, make([]int64, chunkSlots)...)
	for i := chunkSlots - 1; i >= 0; i-- {
		p.free = append(p.free, int32(base+i))
	}
	return true
}

// event is a packet's release from a direction.
type event struct {
	at   int64
	seq  uint64 // breaks ties in admission order
	slot int32
}

// eventHeap is a binary min-heap of events by (at, seq). container/heap would
// box every event in an interface, allocating per packet.
type eventHeap struct{ items []event }

func (h *eventHeap) len() int   { return len(h.items) }
func (h *eventHeap) top() event { return h.items[0] }
func less(a, b event) bool      { return a.at < b.at || a.at == b.at && a.seq < b.seq }

func (h *eventHeap) push(ev event) {
	h.items = append(h.items, ev)
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !less(h.items[i], h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *eventHeap) pop() event {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l, r, small := 2*i+1, 2*i+2, i
		if l < last && less(h.items[l], h.items[small]) {
			small = l
		}
		if r < last && less(h.items[r], h.items[small]) {
			small = r
		}
		if small == i {
			return top
		}
		h.items[i], h.items[small] = h.items[small], h.items[i]
		i = small
	}
}
