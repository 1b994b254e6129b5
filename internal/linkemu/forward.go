package linkemu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"
)

// model is the link model of a shard's directions: queues, serialisation,
// loss, jitter, cutting super-packets, ICMP errors and capture decisions.
// It makes no system call and reads no clock: every method takes the time
// (ns on the engine's clock) from its caller, packets come in as pool slots
// (ingest) and go out as deliveries in out, which the caller writes and
// empties. A new link behaviour goes here (forward, and direction in
// model.go), never into the shard's packet loop.
type model struct {
	portOf   map[netip.Addr]int
	dirs     []direction
	dirStats []DirStats
	portStat []PortStats
	paths    pathTable
	rng      *rand.Rand
	pool     pool
	events   eventHeap
	seq      uint64
	inFlight atomic.Int64
	icmpSent atomic.Uint64
	vnet     bool
	// fixedCoalesce is the engine's window for every direction, 0 when
	// each has its own (AutoCoalesce); windows is each direction's in
	// force, ns.
	fixedCoalesce int64
	windows       []int64
	// wakeAt is the release time the engine last chose to sleep until: the
	// latest within the coalescing window of the earliest, so that one
	// wake-up releases them all. heldUntil is min(wakeAt, now) while
	// releasing: what a packet waited before it is the coalescing's share.
	wakeAt, heldUntil int64
	hdrScratch        []byte // a piece's headers, for capture
	// crossDue is when the engine next brings every direction's cross
	// traffic up to date, so that counters move while no real packet comes;
	// crossDirs are the directions with cross traffic, as it last found.
	crossDue  int64
	crossDirs []int
	// out is the packets whose path is done, in order, for the caller to write.
	out []delivery
}

// init checks cfg's addresses, directions and paths and prepares their
// model; it opens nothing.
func (m *model) init(cfg Config) error {
	if len(cfg.Ports) == 0 {
		return errors.New("linkemu: no ports")
	}
	if cfg.MaxPacket <= 0 {
		cfg.MaxPacket = 1500
	}
	n := len(cfg.Ports)
	*m = model{
		portOf:        make(map[netip.Addr]int, n),
		dirs:          make([]direction, len(cfg.Dirs)),
		dirStats:      make([]DirStats, len(cfg.Dirs)),
		portStat:      make([]PortStats, n),
		rng:           rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		vnet:          cfg.Offloads,
		fixedCoalesce: int64(max(0, cfg.Coalesce)),
		windows:       make([]int64, len(cfg.Dirs)),
		hdrScratch:    make([]byte, smallSlot),
		out:           make([]delivery, 0, readBatch),
	}
	errMax := icmpMaxLen // the largest ICMP error a slot of one packet must hold
	for i, p := range cfg.Ports {
		addrs, err := p.addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if _, dup := m.portOf[a]; dup {
				return fmt.Errorf("linkemu: port %s: address %v used twice", p.Name, a)
			}
			m.portOf[a] = i
			if a.Is6() {
				errMax = icmp6MaxLen
			}
		}
	}
	m.pool.init(m.frameOff()+max(cfg.MaxPacket, errMax), poolBytes(cfg), m.vnet)
	for i, d := range cfg.Dirs {
		if err := d.check(); err != nil {
			return err
		}
		m.dirs[i] = newDirection(d, &m.dirStats[i])
		m.windows[i] = m.windowOf(d)
	}
	m.paths.init(n)
	for pair, path := range cfg.Paths {
		if err := checkPath(pair[0], pair[1], path, n, len(cfg.Dirs)); err != nil {
			return err
		}
		m.paths.set(pair[0], pair[1], path)
	}
	return nil
}

// ingest takes the frame of n bytes just read from port src into slot (of
// the pool's largest class) at now, and admits it to the first direction of
// its path, or drops it as unroutable.
func (m *model) ingest(src int, slot int32, n int, now int64) {
	slot = m.settle(slot, n)
	pkt := m.pool.buf(slot)
	var vnet []byte
	if m.vnet {
		vnet = m.pool.mem[slot][:VnetHdrLen]
	}
	sh := shapeOf(vnet, pkt)
	m.pool.shapes[slot] = sh
	st := &m.portStat[src]
	st.RxPackets.Add(uint64(sh.segs))
	path := int32(-1)
	if dst, ok := m.dest(pkt); ok && dst != src {
		path = m.paths.of[src*m.paths.nPorts+dst]
	}
	if path < 0 {
		st.Unroutable.Add(uint64(sh.segs))
		m.pool.put(slot)
		return
	}
	m.pool.path[slot] = path
	m.pool.hop[slot] = 0
	m.pool.born[slot] = now
	m.inFlight.Add(1)
	m.forward(slot, now, now)
}

// dueBy says whether a release is due by now.
func (m *model) dueBy(now int64) bool {
	return m.events.len() > 0 && m.events.top().at <= now
}

// set gives direction dir new settings from now on.
func (m *model) set(dir int, cfg DirConfig, now int64) {
	m.dirs[dir].set(cfg, now)
	m.windows[dir] = m.windowOf(cfg)
	m.crossDue = 0 // the direction may have gained cross traffic
}

// crossTick is how often the engine brings cross traffic up to date.
const crossTick = int64(10 * time.Millisecond)

// crossCatchUp brings the cross traffic of the directions that have some up
// to now, before a real packet joins their queues.
func (m *model) crossCatchUp(now int64) {
	for _, i := range m.crossDirs {
		if d := &m.dirs[i]; d.cross != nil { // a change may just have ended it
			m.crossUpTo(d, now)
		}
	}
}

// deliver hands a packet whose path is done to the caller, in out; its
// wire segments were due from first to last.
func (m *model) deliver(slot int32, first, last int64) {
	head, payload := m.pool.frame(slot)
	m.out = append(m.out, delivery{head: head, payload: payload, dst: m.paths.dst[m.pool.path[slot]], slot: slot,
		segs: int32(m.pool.shapes[slot].segs), first: first, last: last, held: max(0, m.heldUntil-last)})
}

// crossAll brings every direction's cross traffic up to now.
func (m *model) crossAll(now int64) {
	m.crossDirs = m.crossDirs[:0]
	for i := range m.dirs {
		if d := &m.dirs[i]; d.cross != nil {
			m.crossUpTo(d, now)
			m.crossDirs = append(m.crossDirs, i)
		}
	}
	m.crossDue = noneDue
	if len(m.crossDirs) > 0 {
		m.crossDue = now + crossTick
	}
}

// frameOff is where a packet starts in a frame: after the virtio-net
// header, when the ports carry one.
func (m *model) frameOff() int {
	if m.vnet {
		return VnetHdrLen
	}
	return 0
}

// settle moves a frame of n bytes just read into the largest class's slot
// to the smallest class it fits, so that the big slot serves the next read.
func (m *model) settle(slot int32, n int) int32 {
	for c := range m.pool.largest() {
		if n > m.pool.classes[c] {
			continue
		}
		small, buf := m.pool.get(c)
		if small < 0 {
			break
		}
		copy(buf, m.pool.mem[slot][:n])
		m.pool.put(slot)
		slot = small
		break
	}
	m.pool.len[slot] = int32(n)
	m.pool.off[slot] = int16(m.frameOff())
	return slot
}

// dest returns the port that owns the packet's destination address,
// IPv4 or IPv6.
func (m *model) dest(pkt []byte) (int, bool) {
	if len(pkt) >= ipHeaderLen && pkt[0]>>4 == 4 {
		dst, ok := m.portOf[netip.AddrFrom4([4]byte(pkt[16:20]))]
		return dst, ok
	}
	if len(pkt) >= ip6HeaderLen && pkt[0]>>4 == 6 {
		dst, ok := m.portOf[netip.AddrFrom16([16]byte(pkt[24:40]))]
		return dst, ok
	}
	return 0, false
}

// forward sends the packet in slot into the next direction of its path, or
// delivers it when the path is done. Its wire segments arrive from tFirst
// (the first) to tLast (the last), evenly spaced.
func (m *model) forward(slot int32, tFirst, tLast int64) {
	path := m.paths.dirs[m.pool.path[slot]]
	hop := m.pool.hop[slot]
	if int(hop) == len(path) {
		m.deliver(slot, tFirst, tLast)
		return
	}
	sh := m.pool.shapes[slot]
	segs := uint64(sh.segs)
	dir := path[hop]
	d := &m.dirs[dir]
	if d.cross != nil {
		m.crossUpTo(d, tFirst)
	}
	if d.cfg.Down {
		d.stats.DownDrops.Add(segs)
		m.dropAt(d, dir, slot, ByDown, tFirst, tLast)
		return
	}
	if d.entry && m.entryExpired(slot, d, tFirst) {
		d.stats.Expired.Add(segs)
		m.dropAt(d, dir, slot, ByTTL, tFirst, tLast)
		return
	}
	if d.cfg.MTU > 0 && sh.wire(0) > d.cfg.MTU {
		d.stats.MTUDrops.Add(segs)
		if !d.cfg.Blackhole {
			m.fragNeeded(slot, d, tFirst)
		}
		m.dropAt(d, dir, slot, ByMTU, tFirst, tLast)
		return
	}
	if d.routers > 0 && !m.crossHops(slot, d, tFirst) {
		d.stats.Expired.Add(segs)
		m.dropAt(d, dir, slot, ByTTL, tFirst, tLast)
		return
	}
	if sh.segs == 1 {
		release, v := d.admit(tFirst, sh.wire(0), m.rng)
		switch v {
		case dropQueue:
			d.stats.QueueDrops.Add(1)
			m.dropAt(d, dir, slot, ByQueue, tFirst, tLast)
		case dropLoss:
			d.stats.LossDrops.Add(1)
			m.dropAt(d, dir, slot, ByLoss, tFirst, tLast)
		default:
			m.seq++
			m.events.push(event{at: release, first: release, seq: m.seq, slot: slot, window: int32(m.windows[dir])})
		}
		return
	}
	m.forwardSegments(slot, sh, d, dir, tFirst, tLast)
}

// forwardSegments admits a super-packet's wire segments one by one and
// releases each run of them that the model passed and released within
// the coalescing window of each other, in order, as one piece.
func (m *model) forwardSegments(slot int32, sh shape, d *direction, dir int32, tFirst, tLast int64) {
	runFirst, runCount := 0, 0
	var runStart, runLast int64
	cut := false
	flush := func() {
		if runCount == 0 {
			return
		}
		piece := slot
		if runFirst != 0 || runCount != sh.segs {
			piece = m.cut(slot, sh, runFirst, runCount)
			cut = true
		}
		if piece >= 0 {
			m.seq++
			m.events.push(event{at: runLast, first: runStart, seq: m.seq, slot: piece, window: int32(m.windows[dir])})
		} else {
			m.pool.drops.Add(uint64(runCount)) // no slot for the piece's headers
		}
		runCount = 0
	}
	for k := range sh.segs {
		t := segmentTime(tFirst, tLast, k, sh.segs)
		release, v := d.admit(t, sh.wire(k), m.rng)
		if v != pass {
			flush()
			cut = true
			reason := ByLoss
			if v == dropQueue {
				d.stats.QueueDrops.Add(1)
				reason = ByQueue
			} else {
				d.stats.LossDrops.Add(1)
			}
			if d.capture != nil {
				m.captureSegment(d, dir, slot, k, reason, t)
			}
			continue
		}
		if runCount > 0 && (release < runLast || release-runStart > m.windows[dir]) {
			flush()
		}
		if runCount == 0 {
			runFirst, runStart = k, release
		}
		runLast = release
		runCount++
	}
	if !cut && runFirst == 0 && runCount == sh.segs {
		flush() // the whole super-packet, as it came
		return
	}
	flush()
	m.drop(slot) // its pieces hold its payload
}

// segmentTime is when segment k of segs, spread evenly from first to
// last, arrives.
func segmentTime(first, last int64, k, segs int) int64 {
	if segs <= 1 || last <= first {
		return last
	}
	return first + (last-first)*int64(k)/int64(segs-1)
}

// cut makes a piece of the super-packet in slot: segments first to
// first+count-1, with headers of its own and its payload left in place.
// It returns the piece's slot, -1 if the pool is at its cap.
func (m *model) cut(slot int32, sh shape, first, count int) int32 {
	piece, buf := m.pool.get(classSmall)
	if piece < 0 {
		return -1
	}
	head, _ := m.pool.frame(slot)
	m.pool.len[piece] = int32(cutHeader(buf, head, sh, first, count))
	m.pool.off[piece] = VnetHdrLen
	parent, payOff := slot, int32(VnetHdrLen+sh.hdr)
	if p := m.pool.parent[slot]; p >= 0 { // a piece of a piece: its payload is still in the first parent
		parent, payOff = p, m.pool.payOff[slot]
	}
	m.pool.parent[piece] = parent
	m.pool.refs[parent]++
	m.pool.payOff[piece] = payOff + int32(first*sh.mss)
	m.pool.payLen[piece] = int32(sh.payloadOf(first, count))
	ps := sh
	ps.payload, ps.segs = sh.payloadOf(first, count), count
	m.pool.shapes[piece] = ps
	if count == 1 {
		m.pool.shapes[piece] = single(sh.wire(first))
	}
	m.pool.path[piece], m.pool.hop[piece], m.pool.born[piece] = m.pool.path[slot], m.pool.hop[slot], m.pool.born[slot]
	m.inFlight.Add(1)
	return piece
}

// releaseDue moves every packet whose release time has come out of its
// direction, and says how many releases there were.
func (m *model) releaseDue(now int64) int {
	m.heldUntil = min(m.wakeAt, now)
	released := 0
	for m.events.len() > 0 && m.events.top().at <= now {
		released++
		ev := m.events.pop()
		slot := ev.slot
		// A packet the engine made (an ICMP error) crosses no direction.
		if path, hop := m.paths.dirs[m.pool.path[slot]], m.pool.hop[slot]; int(hop) < len(path) {
			d := &m.dirs[path[hop]]
			sh := m.pool.shapes[slot]
			d.stats.Packets.Add(uint64(sh.segs))
			d.stats.Bytes.Add(uint64(sh.wireBytes(0, sh.segs)))
			if d.capture != nil {
				for k := range sh.segs {
					m.captureSegment(d, path[hop], slot, k, Passed, segmentTime(ev.first, ev.at, k, sh.segs))
				}
			}
			m.pool.hop[slot]++
		}
		// The next direction sees the packet arrive when the model says, not
		// when this thread got round to it, so lateness does not accumulate.
		m.forward(slot, ev.first, ev.at)
	}
	m.heldUntil = 0 // a packet delivered outside a release was not held
	return released
}

// windowOf is the coalescing window, ns, of a direction with cfg.
func (m *model) windowOf(cfg DirConfig) int64 {
	if m.fixedCoalesce > 0 {
		return m.fixedCoalesce
	}
	return int64(AutoCoalesce(cfg))
}

// dropAt drops the packet in slot, whose wire segments arrived from
// tFirst to tLast and which direction dir's model refused for reason,
// capturing each segment if the direction is captured.
func (m *model) dropAt(d *direction, dir int32, slot int32, reason string, tFirst, tLast int64) {
	if d.capture != nil {
		segs := m.pool.shapes[slot].segs
		for k := range segs {
			m.captureSegment(d, dir, slot, k, reason, segmentTime(tFirst, tLast, k, segs))
		}
	}
	m.drop(slot)
}

func (m *model) drop(slot int32) {
	m.inFlight.Add(-1)
	m.pool.put(slot)
}
