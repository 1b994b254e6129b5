package linkemu

import "sync/atomic"

// pool holds packet buffers in slots of a few size classes, so that an ACK
// does not hold a 64 KB slot. It grows a chunk at a time up to its byte
// cap, so that steady forwarding allocates nothing. A slot holds one
// packet as the engine reads or writes it (with its virtio-net header
// when the ports use one), or a piece of a super-packet: the piece's own
// headers, its payload staying in its parent's slot.
type pool struct {
	classes  []int // slot sizes, ascending
	maxBytes int64
	bytes    int64
	free     [][]int32 // per class
	mem      [][]byte  // per slot, its whole buffer
	class    []uint8
	len      []int32 // bytes in the slot: frame, or a piece's headers
	off      []int16 // where the IP packet starts: after the virtio-net header
	path     []int32 // path index of the packet in each slot
	hop      []int16 // how many directions of its path the packet has crossed
	born     []int64 // when the engine read the packet
	// refs counts who still needs the slot: the packet itself while in
	// flight, and each piece whose payload it holds.
	refs []int32
	// parent is the slot holding a piece's payload (-1 for a packet whose
	// payload follows its headers), and pay its place there.
	parent  []int32
	payOff  []int32
	payLen  []int32
	shapes  []shape
	scratch []byte // drains a device when the pool is full
	drops   atomic.Uint64
}

// chunkBytes is the memory one growth of a class adds: small, since a
// growth stalls the engine while the kernel maps and zeroes it.
const chunkBytes = 2 << 20

// Size classes: headers and ACKs; one packet of the largest MTU; a
// super-packet (offloads).
const (
	classSmall = iota
	classPacket
	classSuper
)

// smallSlot holds a pure ACK, or a piece's headers (virtio-net, IP and TCP
// with options: at most 10 + 60 + 60 bytes).
const smallSlot = 256

// superSlot holds the largest super-packet a TUN device hands over.
const superSlot = VnetHdrLen + 65535

func (p *pool) init(maxPacket int, capBytes int64, super bool) {
	p.classes = []int{smallSlot, max(maxPacket, smallSlot+1)}
	if super {
		p.classes = append(p.classes, superSlot)
	}
	p.free = make([][]int32, len(p.classes))
	p.scratch = make([]byte, p.classes[len(p.classes)-1])
	p.maxBytes = capBytes
	// The first chunk of each class now, its pages touched, so that the
	// first packets do not wait for memory.
	for c := range p.classes {
		if chunk := p.grow(c); chunk != nil {
			for i := 0; i < len(chunk); i += 4096 {
				chunk[i] = 0
			}
		}
	}
}

// largest is the class a read goes into: it fits whatever a device hands over.
func (p *pool) largest() int { return len(p.classes) - 1 }

// get returns a free slot of class c and its whole buffer, or -1 if the
// pool is at its cap. The slot holds one reference.
func (p *pool) get(c int) (int32, []byte) {
	if len(p.free[c]) == 0 && p.grow(c) == nil {
		return -1, nil
	}
	s := p.free[c][len(p.free[c])-1]
	p.free[c] = p.free[c][:len(p.free[c])-1]
	p.refs[s], p.parent[s], p.off[s] = 1, -1, 0
	return s, p.mem[s]
}

// put drops one reference to slot s and frees it, and then its parent's
// reference, when none is left.
func (p *pool) put(s int32) {
	for s >= 0 {
		if p.refs[s]--; p.refs[s] > 0 {
			return
		}
		p.free[p.class[s]] = append(p.free[p.class[s]], s)
		s, p.parent[s] = p.parent[s], -1
	}
}

// buf returns the IP packet in slot s: a piece's headers alone.
func (p *pool) buf(s int32) []byte { return p.mem[s][p.off[s]:p.len[s]] }

// frame returns slot s as the device takes it: its virtio-net header and
// packet (a piece's headers), and the piece's payload, nil for a packet.
func (p *pool) frame(s int32) (head, payload []byte) {
	head = p.mem[s][:p.len[s]]
	if par := p.parent[s]; par >= 0 {
		payload = p.mem[par][p.payOff[s] : p.payOff[s]+p.payLen[s]]
	}
	return head, payload
}

// grow adds a chunk of slots of class c and returns its memory, nil if
// the pool is at its cap.
func (p *pool) grow(c int) []byte {
	size := p.classes[c]
	n := max(1, chunkBytes/size)
	if p.bytes+int64(n*size) > p.maxBytes && p.bytes > 0 {
		return nil
	}
	chunk := make([]byte, n*size)
	p.bytes += int64(n * size)
	base := len(p.mem)
	for i := range n {
		p.mem = append(p.mem, chunk[i*size:(i+1)*size:(i+1)*size])
	}
	p.class = append(p.class, make([]uint8, n)...)
	for i := base; i < base+n; i++ {
		p.class[i] = uint8(c)
	}
	p.len = append(p.len, make([]int32, n)...)
	p.off = append(p.off, make([]int16, n)...)
	p.path = append(p.path, make([]int32, n)...)
	p.hop = append(p.hop, make([]int16, n)...)
	p.born = append(p.born, make([]int64, n)...)
	p.refs = append(p.refs, make([]int32, n)...)
	p.parent = append(p.parent, make([]int32, n)...)
	p.payOff = append(p.payOff, make([]int32, n)...)
	p.payLen = append(p.payLen, make([]int32, n)...)
	p.shapes = append(p.shapes, make([]shape, n)...)
	for i := base + n - 1; i >= base; i-- {
		p.parent[i] = -1
		p.free[c] = append(p.free[c], int32(i))
	}
	return chunk
}

// event is a packet's release from a direction: of a run of segments, the
// release of its last; first is that of its first, which waited for the
// rest (the coalescing window bounds how long).
type event struct {
	at    int64
	first int64
	seq   uint64 // breaks ties in admission order
	slot  int32
	// window is how long, in ns, the event's segments may wait in all
	// (their direction's coalescing window).
	window int32
}

// eventHeap is a binary min-heap of events by (at, seq). container/heap would
// box every event in an interface, allocating per packet.
type eventHeap struct {
	items []event
	stack []int // latestWithin's, kept to save allocations
}

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

// wakeTime is when to wake to release the earliest event together with
// those due soon after it: the latest release among the events due no
// later than the bound, where the bound is the earliest first+window of
// those same events. So no wire segment released in that wake-up waits
// longer than its own direction's window in all, for its run and for the
// others. It visits only the events within the top's window and their
// children.
func (h *eventHeap) wakeTime() int64 {
	top := h.items[0]
	bound := top.first + int64(top.window)
	// The bound only falls as events are seen; an event beyond it when
	// seen has first+window >= at beyond it too, so it cannot lower it.
	h.visit(bound, func(ev event) int64 {
		bound = min(bound, ev.first+int64(ev.window))
		return bound
	})
	latest := top.at
	h.visit(bound, func(ev event) int64 {
		latest = max(latest, ev.at)
		return bound
	})
	return latest
}

// visit calls f with each event due no later than the bound that f
// returns, in heap order.
func (h *eventHeap) visit(bound int64, f func(event) int64) {
	stack := append(h.stack[:0], 0)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if h.items[i].at > bound {
			continue
		}
		bound = f(h.items[i])
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h.items) {
				stack = append(stack, c)
			}
		}
	}
	h.stack = stack
}
