package linkemu

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Port is one host's attachment to the engine: a non-blocking packet fd (a TUN
// device opened without packet information) and the host's IPv4 address.
type Port struct {
	Name string
	FD   int
	Addr netip.Addr
	// writeOnly marks, in a shard, a port another shard reads: this one
	// only delivers to it.
	writeOnly bool
}

// Config is everything the engine needs: ports, link directions and, for each
// ordered pair of ports, the directions a packet crosses.
type Config struct {
	Ports []Port
	Dirs  []DirConfig
	// Paths maps {src port, dst port} to indexes into Dirs, in crossing order.
	// A pair with no entry is unreachable; an empty path forwards directly.
	Paths map[[2]int][]int
	Seed  uint64
	// MaxPacket is the largest packet a port can deliver (the largest MTU).
	MaxPacket int
	// PoolBytes caps the memory for packets in flight; 0 means 1 GiB.
	PoolBytes int64
	// Realtime runs the engine thread under SCHED_FIFO, so that a packet due
	// now is not kept waiting behind the hosts' processes. If the kernel
	// refuses, the engine runs as a normal thread and Stats says so.
	Realtime bool
	// Spin is how long before a release the engine stops sleeping and polls
	// instead, trading CPU for punctuality. 0 never spins.
	Spin time.Duration
	// KeepCPUsAwake asks the kernel (PM QoS, /dev/cpu_dma_latency) to keep
	// CPUs out of deep idle states while the engine runs: waking from them
	// takes tens to hundreds of microseconds, which would delay packets on
	// an idle machine. It costs power, not CPU time.
	KeepCPUsAwake bool
	// Offloads says the ports' fds carry a virtio-net header before each
	// packet (TUN devices opened with IFF_VNET_HDR and offloads): hosts
	// then hand over super-packets, which the engine models per wire
	// segment and moves in as few writes as the model allows.
	Offloads bool
	// Coalesce bounds how long a wire segment may wait for the rest of its
	// run, so that a run moves in one write, and how long the engine may
	// hold a release to make it in the same wake-up as later ones (on many
	// slow links, a wake-up costs more than the packet). 0 gives each
	// direction a window of its own, AutoCoalesce.
	Coalesce time.Duration
	// Threads is how many engine threads (each with a writer) may share
	// the ports: groups of ports that share no direction run apart, the
	// groups spread over at most this many threads. 0 is 1.
	Threads int
}

// DefaultCoalesce is the coalescing window of fast directions: a
// fraction of the engine's lateness target (p99 200 us), and at 10 Gbit/s
// the time of a few jumbo frames or of a whole 64 KB super-packet of
// 1500-byte segments.
const DefaultCoalesce = 50 * time.Microsecond

// MaxAutoCoalesce caps the window AutoCoalesce gives a slow direction.
const MaxAutoCoalesce = 250 * time.Microsecond

// AutoCoalesce is the coalescing window of a direction whose engine has
// no fixed one: half the time a packet of its MTU (1500 bytes if it has
// none) takes on its wire, from DefaultCoalesce to MaxAutoCoalesce. Two
// full-size packets that leave one direction back to back are then never
// released together, so the dispersion that capacity and available
// bandwidth probes measure stays the model's; what shares a wake-up on a
// slow link is the releases of other links and small packets (ACKs). On
// many slow links, where each release would otherwise cost a timer
// wake-up of 20-30 us, that is most of the engine's CPU. A direction
// without a rate, or driven by a trace, has DefaultCoalesce.
func AutoCoalesce(cfg DirConfig) time.Duration {
	if cfg.Rate <= 0 || cfg.Trace != nil {
		return DefaultCoalesce
	}
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = 1500
	}
	half := time.Duration(float64(mtu) * 8 / cfg.Rate / 2 * float64(time.Second))
	return min(max(half, DefaultCoalesce), MaxAutoCoalesce)
}

// shard forwards packets between its ports through the link model, on a
// thread of its own and its writer's. An Engine runs one shard per group of
// ports that share no direction, so that no state crosses threads.
type shard struct {
	ports    []Port
	portOf   map[netip.Addr]int
	dirs     []direction
	current  []DirConfig // the settings in force, under changeMu
	dirStats []DirStats
	portStat []PortStats
	pathOf   []int32   // [src*len(ports)+dst] -> index into paths, -1 if none
	paths    [][]int32 // direction indexes
	pathDst  []int32   // destination port of each path
	rng      *rand.Rand
	pool     pool
	events   eventHeap
	seq      uint64
	inFlight atomic.Int64
	// Lateness of each wire segment when its write completed: in all, the
	// share it waited for the rest of its run, and the engine's share.
	late, lateCoalesce, lateEngine latenessHist
	writeTime                      latenessHist // each write's system call
	wakeLate                       latenessHist // the engine's timer, past its time
	io                             ioCounters
	vnet                           bool
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

	poller *poller
	polled []int // the ports the poller watches, by its index; the wake fd after them
	wakeFD int
	epoch  time.Time

	realtime bool
	awake    bool
	awakeOK  atomic.Bool
	spin     int64
	spinning bool // woke early from a long sleep: poll until the next release
	// spinSpent is the spinning done in the current budget period, from spinFrom.
	spinSpent, spinFrom int64
	writer              *writer
	rtActive            atomic.Bool

	stopOnce sync.Once
	stopped  atomic.Bool

	seed uint64
	// globalDir and globalPort are the Engine's index of each direction
	// and port; nil when the Engine has this one shard.
	globalDir, globalPort []int
	pathSrc               []int32 // source port of each path
	// crossDue is when the engine next brings every direction's cross
	// traffic up to date, so that counters move while no real packet comes;
	// crossDirs are the directions with cross traffic, as it last found.
	crossDue  int64
	crossDirs []int
	local     []int32 // per port, an empty path: packets the engine makes for it
	icmpSent  atomic.Uint64

	changeMu   sync.Mutex
	pending    []change // in due order; immediate ones are due at 0
	nextDue    atomic.Int64
	applied    []Applied
	changeLate latenessHist
	captured   []bool // directions with a capture, under changeMu
}

// change is new settings for one direction, due at an engine time; or,
// with captureSet, the start (capture set) or end (nil) of a capture.
type change struct {
	due        int64
	dir        int
	cfg        DirConfig
	what       string
	tag        string
	ref        int
	capture    *captureRing
	captureSet bool
}

// TimedChange is new settings for direction Dir from time At on. Changes
// with the same Tag can be cancelled together; What says what the change
// is, in the words of whoever asked for it.
type TimedChange struct {
	At     time.Time
	Dir    int
	Config DirConfig
	What   string
	Tag    string
	// Ref is the caller's, returned with the change once applied.
	Ref int
}

// Applied is a change the engine made: when it was due and when it took
// effect, on the engine's clock turned into wall-clock time.
type Applied struct {
	Dir  int
	What string
	Tag  string
	Ref  int
	Due  time.Time
	At   time.Time
}

// maxApplied bounds the record of applied changes nobody has read.
const maxApplied = 100000

// spinMinWait is the shortest sleep before which the engine spins.
const spinMinWait = int64(200 * time.Microsecond)

// spinShare is the share of the time the engine may spend spinning, and
// spinPeriod the period over which it counts.
const (
	spinShare  = 0.02
	spinPeriod = int64(100 * time.Millisecond)
)

// spinBudget is what spinning the current period still allows at now.
func (e *shard) spinBudget(now int64) int64 {
	if now-e.spinFrom >= spinPeriod {
		e.spinFrom, e.spinSpent = now, 0
	}
	return int64(spinShare*float64(spinPeriod)) - e.spinSpent
}

// readBatch bounds how many packets one port may deliver before the engine
// looks at its release schedule again.
const readBatch = 64

// Bounds of a direction the engine accepts: beyond them its nanosecond
// arithmetic would lose meaning long before it overflowed.
const (
	MaxDelay = time.Hour
	MaxRate  = 10e12 // bit/s
)

// poolBytes is cfg's cap on the memory for packets in flight.
func poolBytes(cfg Config) int64 {
	if cfg.PoolBytes <= 0 {
		return 1 << 30
	}
	return cfg.PoolBytes
}

// newShard checks the configuration and prepares a shard.
func newShard(cfg Config) (*shard, error) {
	if len(cfg.Ports) == 0 {
		return nil, errors.New("linkemu: no ports")
	}
	if cfg.MaxPacket <= 0 {
		cfg.MaxPacket = 1500
	}
	cfg.PoolBytes = poolBytes(cfg)
	n := len(cfg.Ports)
	e := &shard{
		ports:    cfg.Ports,
		portOf:   make(map[netip.Addr]int, n),
		dirs:     make([]direction, len(cfg.Dirs)),
		current:  slices.Clone(cfg.Dirs),
		captured: make([]bool, len(cfg.Dirs)),
		dirStats: make([]DirStats, len(cfg.Dirs)),
		portStat: make([]PortStats, n),
		pathOf:   make([]int32, n*n),
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		seed:     cfg.Seed,
		epoch:    time.Now(),
		local:    make([]int32, n),
		realtime: cfg.Realtime,
		awake:    cfg.KeepCPUsAwake,
		spin:     int64(cfg.Spin),
	}
	e.nextDue.Store(noneDue)
	e.crossDue = 0 // look once: directions may start with cross traffic
	e.vnet = cfg.Offloads
	e.fixedCoalesce = int64(max(0, cfg.Coalesce))
	e.windows = make([]int64, len(cfg.Dirs))
	e.hdrScratch = make([]byte, smallSlot)
	e.pool.init(e.frameOff()+max(cfg.MaxPacket, icmpMaxLen), cfg.PoolBytes, e.vnet)
	for i, p := range cfg.Ports {
		if !p.Addr.Is4() {
			return nil, fmt.Errorf("linkemu: port %s: address %v is not IPv4", p.Name, p.Addr)
		}
		if _, dup := e.portOf[p.Addr]; dup {
			return nil, fmt.Errorf("linkemu: port %s: address %v used twice", p.Name, p.Addr)
		}
		e.portOf[p.Addr] = i
	}
	for i, d := range cfg.Dirs {
		if err := d.check(); err != nil {
			return nil, err
		}
		e.dirs[i] = newDirection(d, &e.dirStats[i])
		e.windows[i] = e.windowOf(d)
	}
	for i := range e.pathOf {
		e.pathOf[i] = -1
	}
	for pair, path := range cfg.Paths {
		src, dst := pair[0], pair[1]
		if src < 0 || src >= n || dst < 0 || dst >= n || src == dst {
			return nil, fmt.Errorf("linkemu: path %v: no such pair of ports", pair)
		}
		p := make([]int32, len(path))
		for j, d := range path {
			if d < 0 || d >= len(cfg.Dirs) {
				return nil, fmt.Errorf("linkemu: path %v: no direction %d", pair, d)
			}
			p[j] = int32(d)
		}
		e.pathOf[src*n+dst] = int32(len(e.paths))
		e.paths = append(e.paths, p)
		e.pathDst = append(e.pathDst, int32(dst))
		e.pathSrc = append(e.pathSrc, int32(src))
	}
	for port := range n {
		e.local[port] = int32(len(e.paths))
		e.paths = append(e.paths, nil)
		e.pathDst = append(e.pathDst, int32(port))
		e.pathSrc = append(e.pathSrc, -1)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("linkemu: eventfd: %w", err)
	}
	e.wakeFD = wake
	var fds []int
	for i, p := range cfg.Ports {
		if !p.writeOnly {
			e.polled = append(e.polled, i)
			fds = append(fds, p.FD)
		}
	}
	if e.poller, err = newPoller(append(fds, wake)); err != nil {
		unix.Close(wake)
		return nil, err
	}
	return e, nil
}

// Run forwards packets until Stop is called. It locks its goroutine to an OS
// thread with 1 ns timer slack, because Go's timers wake about a millisecond
// late and a link model needs microseconds.
func (e *shard) Run() error {
	runtime.LockOSThread() // for good: tuneThread
	defer unix.Close(e.wakeFD)
	defer e.poller.close()
	if err := e.tuneThread(); err != nil {
		return err
	}
	if e.awake {
		if qos, err := keepCPUsAwake(); err == nil {
			defer qos.Close()
			e.awakeOK.Store(true)
		}
	}
	w, err := newWriter(e)
	if err != nil {
		return fmt.Errorf("linkemu: starting the writer: %w", err)
	}
	e.writer = w
	go w.run()
	defer func() {
		w.stop()
		e.reclaim()
	}()
	const idleWait = int64(time.Second)
	for !e.stopped.Load() {
		now := e.now()
		if now >= e.nextDue.Load() {
			e.applyChanges(now)
		}
		e.reclaim()
		e.releaseDue(now)
		if now >= e.crossDue {
			e.crossAll(now)
		}
		wait := min(idleWait, max(0, e.nextDue.Load()-e.now()), max(0, e.crossDue-e.now()))
		if e.events.len() > 0 {
			// Sleep until the latest release within the coalescing window,
			// so that one wake-up makes them all; when one is due already,
			// there is no sleep to share.
			e.wakeAt = e.events.top().at
			if e.wakeAt > now {
				e.wakeAt = e.events.wakeTime()
			}
			wait = min(wait, max(0, e.wakeAt-e.now()))
			// Before a long sleep, wake early and poll through the last
			// stretch: waking from a long sleep is the least punctual. When
			// packets are dense, sleeps are short and spinning would only
			// take a core from the hosts.
			// Spinning has a budget, a share of the time that passes:
			// with many links each waking the engine, spinning before
			// every release would cost more than it buys.
			if wait >= spinMinWait {
				e.spinning = e.spin > 0 && e.spinBudget(now) >= e.spin
				if e.spinning {
					wait -= e.spin
					e.spinSpent += e.spin
				}
			} else if e.spinning {
				wait = 0
			}
		}
		slept := e.now()
		ready, err := e.poller.wait(wait)
		if err != nil {
			return err
		}
		if len(ready) == 0 && wait > 0 {
			e.wakeLate.record(e.now() - slept - wait)
		}
		for _, r := range ready {
			switch {
			case r.index == len(e.polled):
				var drain [8]byte
				unix.Read(e.wakeFD, drain[:]) // a Set (applied at the top of the loop) or Stop
			case r.failed:
				return fmt.Errorf("linkemu: port %s: device closed or failed", e.ports[e.polled[r.index]].Name)
			default:
				e.readPort(e.polled[r.index])
			}
		}
	}
	return nil
}

// schedule queues changes, which Engine.Schedule has checked and put in
// this shard's numbering, to take effect at their times (a zero or past
// time is now). It is safe to call from any goroutine while Run runs.
func (e *shard) schedule(changes []TimedChange) {
	todo := make([]change, 0, len(changes))
	for _, c := range changes {
		due := int64(0)
		if !c.At.IsZero() {
			due = max(0, int64(c.At.Sub(e.epoch)))
		}
		todo = append(todo, change{due: due, dir: c.Dir, cfg: c.Config, what: c.What, tag: c.Tag, ref: c.Ref})
	}
	e.changeMu.Lock()
	e.queue(todo)
	e.changeMu.Unlock()
}

// queue adds changes to those pending and wakes the engine; changeMu is held.
func (e *shard) queue(changes []change) {
	e.pending = append(e.pending, changes...)
	slices.SortStableFunc(e.pending, func(a, b change) int { return cmp.Compare(a.due, b.due) })
	e.publishDue()
	var one = [8]byte{1}
	unix.Write(e.wakeFD, one[:])
}

// Cancel drops the changes with tag that have not taken effect yet and says
// how many there were.
func (e *shard) Cancel(tag string) int {
	e.changeMu.Lock()
	defer e.changeMu.Unlock()
	n := len(e.pending)
	e.pending = slices.DeleteFunc(e.pending, func(c change) bool { return c.tag == tag })
	e.publishDue()
	return n - len(e.pending)
}

// Applied returns the changes made since the last call, oldest first.
func (e *shard) Applied() []Applied {
	e.changeMu.Lock()
	defer e.changeMu.Unlock()
	out := e.applied
	e.applied = nil
	return out
}

// crossTick is how often the engine brings cross traffic up to date.
const crossTick = int64(10 * time.Millisecond)

// crossAll brings every direction's cross traffic up to now.
func (e *shard) crossAll(now int64) {
	e.crossDirs = e.crossDirs[:0]
	for i := range e.dirs {
		if d := &e.dirs[i]; d.cross != nil {
			e.crossUpTo(d, now)
			e.crossDirs = append(e.crossDirs, i)
		}
	}
	e.crossDue = noneDue
	if len(e.crossDirs) > 0 {
		e.crossDue = now + crossTick
	}
}

// noneDue is nextDue when no change is pending.
const noneDue = int64(1<<63 - 1)

// publishDue tells the engine thread when the next change is due; changeMu is held.
func (e *shard) publishDue() {
	if len(e.pending) == 0 {
		e.nextDue.Store(noneDue)
		return
	}
	e.nextDue.Store(e.pending[0].due)
}

// Settings are the directions' current settings, in Config order.
func (e *shard) Settings() []DirConfig {
	e.changeMu.Lock()
	defer e.changeMu.Unlock()
	out := make([]DirConfig, len(e.current))
	copy(out, e.current)
	return out
}

// applyChanges makes the changes due by now; it runs on the engine's
// thread, between two packets.
func (e *shard) applyChanges(now int64) {
	e.changeMu.Lock()
	n := 0
	for n < len(e.pending) && e.pending[n].due <= now {
		n++
	}
	todo := slices.Clone(e.pending[:n])
	e.pending = slices.Delete(e.pending, 0, n)
	e.publishDue()
	at := e.now()
	for i := range todo {
		c := &todo[i]
		if c.captureSet {
			continue
		}
		c.cfg.Name = e.current[c.dir].Name
		e.current[c.dir] = c.cfg
		if c.due > 0 {
			e.changeLate.record(at - c.due)
		}
		if len(e.applied) < maxApplied {
			due := c.due
			if due == 0 {
				due = at
			}
			e.applied = append(e.applied, Applied{Dir: c.dir, What: c.what, Tag: c.tag, Ref: c.ref,
				Due: e.epoch.Add(time.Duration(due)), At: e.epoch.Add(time.Duration(at))})
		}
	}
	e.changeMu.Unlock()
	for _, c := range todo {
		if c.captureSet {
			e.dirs[c.dir].capture = c.capture
			continue
		}
		e.dirs[c.dir].set(c.cfg, at)
		e.windows[c.dir] = e.windowOf(c.cfg)
	}
	e.crossDue = 0 // a direction may have gained cross traffic
}

// keepCPUsAwake holds a PM QoS request for zero CPU wake-up latency; the
// kernel honours it for as long as the file stays open.
func keepCPUsAwake() (*os.File, error) {
	f, err := os.OpenFile("/dev/cpu_dma_latency", os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	var zero [4]byte
	if _, err := f.Write(zero[:]); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tuneThread gives the calling OS thread 1 ns timer slack and, if asked,
// SCHED_FIFO at priority 1: the lowest real-time priority, enough to run
// ahead of every normal process and below kernel threads that use FIFO.
// The caller keeps the thread locked to its goroutine to the end, so that
// the runtime destroys it rather than run other goroutines on it; and a
// process forked from it starts as a normal one: a host's busy process
// under SCHED_FIFO on every CPU starves the kernel's own threads (an RCU
// grace period, and with it every cgroup move, waits for ever).
func (e *shard) tuneThread() error {
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("linkemu: setting timer slack: %w", err)
	}
	if e.realtime {
		err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1, Flags: unix.SCHED_FLAG_RESET_ON_FORK}, 0)
		e.rtActive.Store(err == nil)
	}
	return nil
}

// close releases what newShard took, for a shard that never ran.
func (e *shard) close() {
	unix.Close(e.wakeFD)
	e.poller.close()
}

// Stop makes Run return soon. It is safe to call more than once and from any goroutine.
func (e *shard) Stop() {
	e.stopOnce.Do(func() {
		e.stopped.Store(true)
		var one = [8]byte{1}
		unix.Write(e.wakeFD, one[:])
	})
}

func (e *shard) now() int64 { return int64(time.Since(e.epoch)) }

// readPort reads up to readBatch packets from port src and admits each to the
// first direction of its path.
func (e *shard) readPort(src int) {
	// A change due by now applies to what arrives now, and cross traffic
	// that arrived before it is in the queues first (the engine may have
	// been kept from running for a while).
	if now := e.now(); now >= e.nextDue.Load() {
		e.applyChanges(now)
	}
	for _, i := range e.crossDirs {
		if d := &e.dirs[i]; d.cross != nil { // a change may just have ended it
			e.crossUpTo(d, e.now())
		}
	}
	fd := e.ports[src].FD
	st := &e.portStat[src]
	for range readBatch {
		if len(e.pool.free[e.pool.largest()]) == 0 {
			e.reclaim() // before the pool grows, take back what the writer is done with
		}
		slot, buf := e.pool.get(e.pool.largest())
		if slot < 0 {
			// The pool is at its cap: read into scratch to drain the device, and count it.
			e.io.reads.Add(1)
			if _, err := rawRead(fd, e.pool.scratch); err != nil {
				return
			}
			e.pool.drops.Add(1)
			continue
		}
		e.io.reads.Add(1)
		n, err := rawRead(fd, buf)
		if err != nil || n <= e.frameOff() {
			e.pool.put(slot)
			return
		}
		e.io.readBytes.Add(uint64(n))
		slot = e.settle(slot, n)
		pkt := e.pool.buf(slot)
		var vnet []byte
		if e.vnet {
			vnet = e.pool.mem[slot][:VnetHdrLen]
		}
		sh := shapeOf(vnet, pkt)
		e.pool.shapes[slot] = sh
		st.RxPackets.Add(uint64(sh.segs))
		path := int32(-1)
		if dst, ok := e.dest(pkt); ok && dst != src {
			path = e.pathOf[src*len(e.ports)+dst]
		}
		if path < 0 {
			st.Unroutable.Add(uint64(sh.segs))
			e.pool.put(slot)
			continue
		}
		now := e.now()
		e.pool.path[slot] = path
		e.pool.hop[slot] = 0
		e.pool.born[slot] = now
		e.inFlight.Add(1)
		e.forward(slot, now, now)
		// A release due by this read goes before the next read: a
		// sender's burst of super-packets takes tens of microseconds each
		// to read.
		if e.events.len() > 0 && e.events.top().at <= now {
			return
		}
	}
}

// frameOff is where a packet starts in a frame: after the virtio-net
// header, when the ports carry one.
func (e *shard) frameOff() int {
	if e.vnet {
		return VnetHdrLen
	}
	return 0
}

// settle moves a frame of n bytes just read into the largest class's slot
// to the smallest class it fits, so that the big slot serves the next read.
func (e *shard) settle(slot int32, n int) int32 {
	for c := range e.pool.largest() {
		if n > e.pool.classes[c] {
			continue
		}
		small, buf := e.pool.get(c)
		if small < 0 {
			break
		}
		copy(buf, e.pool.mem[slot][:n])
		e.pool.put(slot)
		slot = small
		break
	}
	e.pool.len[slot] = int32(n)
	e.pool.off[slot] = int16(e.frameOff())
	return slot
}

// dest returns the port that owns the packet's IPv4 destination address.
func (e *shard) dest(pkt []byte) (int, bool) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return 0, false
	}
	dst, ok := e.portOf[netip.AddrFrom4([4]byte(pkt[16:20]))]
	return dst, ok
}

// forward sends the packet in slot into the next direction of its path, or
// delivers it when the path is done. Its wire segments arrive from tFirst
// (the first) to tLast (the last), evenly spaced.
func (e *shard) forward(slot int32, tFirst, tLast int64) {
	path := e.paths[e.pool.path[slot]]
	hop := e.pool.hop[slot]
	if int(hop) == len(path) {
		e.deliver(slot, tFirst, tLast)
		return
	}
	sh := e.pool.shapes[slot]
	segs := uint64(sh.segs)
	dir := path[hop]
	d := &e.dirs[dir]
	if d.cross != nil {
		e.crossUpTo(d, tFirst)
	}
	if d.cfg.Down {
		d.stats.DownDrops.Add(segs)
		e.dropAt(d, dir, slot, ByDown, tFirst, tLast)
		return
	}
	if d.cfg.MTU > 0 && sh.wire(0) > d.cfg.MTU {
		d.stats.MTUDrops.Add(segs)
		if !d.cfg.Blackhole {
			e.fragNeeded(slot, d, tFirst)
		}
		e.dropAt(d, dir, slot, ByMTU, tFirst, tLast)
		return
	}
	if len(d.cfg.Hops) > 0 && !e.crossHops(slot, d, tFirst) {
		d.stats.Expired.Add(segs)
		e.dropAt(d, dir, slot, ByTTL, tFirst, tLast)
		return
	}
	if sh.segs == 1 {
		release, v := d.admit(tFirst, sh.wire(0), e.rng)
		switch v {
		case dropQueue:
			d.stats.QueueDrops.Add(1)
			e.dropAt(d, dir, slot, ByQueue, tFirst, tLast)
		case dropLoss:
			d.stats.LossDrops.Add(1)
			e.dropAt(d, dir, slot, ByLoss, tFirst, tLast)
		default:
			e.seq++
			e.events.push(event{at: release, first: release, seq: e.seq, slot: slot, window: int32(e.windows[dir])})
		}
		return
	}
	e.forwardSegments(slot, sh, d, dir, tFirst, tLast)
}

// forwardSegments admits a super-packet's wire segments one by one and
// releases each run of them that the model passed and released within
// the coalescing window of each other, in order, as one piece.
func (e *shard) forwardSegments(slot int32, sh shape, d *direction, dir int32, tFirst, tLast int64) {
	runFirst, runCount := 0, 0
	var runStart, runLast int64
	cut := false
	flush := func() {
		if runCount == 0 {
			return
		}
		piece := slot
		if runFirst != 0 || runCount != sh.segs {
			piece = e.cut(slot, sh, runFirst, runCount)
			cut = true
		}
		if piece >= 0 {
			e.seq++
			e.events.push(event{at: runLast, first: runStart, seq: e.seq, slot: piece, window: int32(e.windows[dir])})
		} else {
			e.pool.drops.Add(uint64(runCount)) // no slot for the piece's headers
		}
		runCount = 0
	}
	for k := range sh.segs {
		t := segmentTime(tFirst, tLast, k, sh.segs)
		release, v := d.admit(t, sh.wire(k), e.rng)
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
				e.captureSegment(d, dir, slot, k, reason, t)
			}
			continue
		}
		if runCount > 0 && (release < runLast || release-runStart > e.windows[dir]) {
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
	e.drop(slot) // its pieces hold its payload
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
func (e *shard) cut(slot int32, sh shape, first, count int) int32 {
	piece, buf := e.pool.get(classSmall)
	if piece < 0 {
		return -1
	}
	head, _ := e.pool.frame(slot)
	e.pool.len[piece] = int32(cutHeader(buf, head, sh, first, count))
	e.pool.off[piece] = VnetHdrLen
	parent, payOff := slot, int32(VnetHdrLen+sh.hdr)
	if p := e.pool.parent[slot]; p >= 0 { // a piece of a piece: its payload is still in the first parent
		parent, payOff = p, e.pool.payOff[slot]
	}
	e.pool.parent[piece] = parent
	e.pool.refs[parent]++
	e.pool.payOff[piece] = payOff + int32(first*sh.mss)
	e.pool.payLen[piece] = int32(sh.payloadOf(first, count))
	e.pool.shapes[piece] = shape{hdr: sh.hdr, ihl: sh.ihl, mss: sh.mss, payload: sh.payloadOf(first, count), segs: count, udp: sh.udp}
	if count == 1 {
		e.pool.shapes[piece] = single(sh.wire(first))
	}
	e.pool.path[piece], e.pool.hop[piece], e.pool.born[piece] = e.pool.path[slot], e.pool.hop[slot], e.pool.born[slot]
	e.inFlight.Add(1)
	return piece
}

// releaseDue moves every packet whose release time has come out of its direction.
func (e *shard) releaseDue(now int64) {
	e.heldUntil = min(e.wakeAt, now)
	for e.events.len() > 0 && e.events.top().at <= now {
		e.spinning = false
		ev := e.events.pop()
		slot := ev.slot
		// A packet the engine made (an ICMP error) crosses no direction.
		if path, hop := e.paths[e.pool.path[slot]], e.pool.hop[slot]; int(hop) < len(path) {
			d := &e.dirs[path[hop]]
			sh := e.pool.shapes[slot]
			d.stats.Packets.Add(uint64(sh.segs))
			d.stats.Bytes.Add(uint64(sh.wireBytes(0, sh.segs)))
			if d.capture != nil {
				for k := range sh.segs {
					e.captureSegment(d, path[hop], slot, k, Passed, segmentTime(ev.first, ev.at, k, sh.segs))
				}
			}
			e.pool.hop[slot]++
		}
		// The next direction sees the packet arrive when the model says, not
		// when this thread got round to it, so lateness does not accumulate.
		e.forward(slot, ev.first, ev.at)
	}
	e.heldUntil = 0 // a packet delivered outside a release was not held
}

// deliver hands a packet whose path is done to the writer; its wire
// segments were due from first to last.
func (e *shard) deliver(slot int32, first, last int64) {
	head, payload := e.pool.frame(slot)
	d := delivery{head: head, payload: payload, dst: e.pathDst[e.pool.path[slot]], slot: slot,
		segs: int32(e.pool.shapes[slot].segs), first: first, last: last, held: max(0, e.heldUntil-last)}
	// An idle writer with nothing queued would have to be woken: a light
	// load is cheaper written here, and nothing queued can be overtaken.
	if e.writer.idle.Load() && e.writer.out.empty() {
		e.write(d)
		e.drop(slot)
		return
	}
	e.writer.submit(d)
}

// write puts a packet into its destination host; the engine or the writer
// calls it. Each of its wire segments is as late as its write's end.
func (e *shard) write(d delivery) {
	start := e.now()
	var err error
	if d.payload == nil {
		err = rawWrite(e.ports[d.dst].FD, d.head)
	} else {
		err = writev2(e.ports[d.dst].FD, d.head, d.payload)
	}
	done := e.now()
	e.writeTime.record(done - start)
	e.io.writes.Add(1)
	if err != nil {
		e.portStat[d.dst].WriteDrops.Add(uint64(d.segs))
		return
	}
	e.io.writeBytes.Add(uint64(len(d.head) + len(d.payload)))
	e.portStat[d.dst].TxPackets.Add(uint64(d.segs))
	e.lateEngine.recordN(done-d.last-d.held, uint64(d.segs))
	for k := range int(d.segs) {
		due := segmentTime(d.first, d.last, k, int(d.segs))
		e.late.record(done - due)
		e.lateCoalesce.record(d.last - due + d.held)
	}
}

// reclaim takes back the slots the writer has finished with.
func (e *shard) reclaim() {
	for {
		slot, ok := e.writer.back.pop()
		if !ok {
			return
		}
		e.pool.put(slot)
	}
}

// windowOf is the coalescing window, ns, of a direction with cfg.
func (e *shard) windowOf(cfg DirConfig) int64 {
	if e.fixedCoalesce > 0 {
		return e.fixedCoalesce
	}
	return int64(AutoCoalesce(cfg))
}

// dropAt drops the packet in slot, whose wire segments arrived from
// tFirst to tLast and which direction dir's model refused for reason,
// capturing each segment if the direction is captured.
func (e *shard) dropAt(d *direction, dir int32, slot int32, reason string, tFirst, tLast int64) {
	if d.capture != nil {
		segs := e.pool.shapes[slot].segs
		for k := range segs {
			e.captureSegment(d, dir, slot, k, reason, segmentTime(tFirst, tLast, k, segs))
		}
	}
	e.drop(slot)
}

func (e *shard) drop(slot int32) {
	e.inFlight.Add(-1)
	e.pool.put(slot)
}

// Stats returns a snapshot of every counter.
func (e *shard) Stats() Stats {
	late := e.late.load()
	s := Stats{
		PoolDrops:         e.pool.drops.Load(),
		Realtime:          e.rtActive.Load(),
		CPUsAwake:         e.awakeOK.Load(),
		InFlight:          e.inFlight.Load(),
		Lateness:          late.summary(),
		LatenessHistogram: late.histogram(),
		Coalescing:        e.lateCoalesce.summary(),
		EngineLateness:    e.lateEngine.summary(),
		WriteTime:         e.writeTime.summary(),
		WakeLateness:      e.wakeLate.summary(),
		IO:                e.io.snapshot(),
		Offloads:          e.vnet,
		Changes:           e.changeLate.summary(),
		ICMPSent:          e.icmpSent.Load(),
		Uptime:            time.Since(e.epoch).Seconds(),
	}
	settings := e.Settings()
	for i := range e.dirStats {
		st := &e.dirStats[i]
		s.Dirs = append(s.Dirs, DirSnapshot{
			Name:         e.dirs[i].cfg.Name,
			CoalesceUS:   float64(e.windowOf(settings[i])) / 1e3,
			Packets:      st.Packets.Load(),
			Bytes:        st.Bytes.Load(),
			QueueDrops:   st.QueueDrops.Load(),
			LossDrops:    st.LossDrops.Load(),
			DownDrops:    st.DownDrops.Load(),
			MTUDrops:     st.MTUDrops.Load(),
			Expired:      st.Expired.Load(),
			CrossPackets: st.CrossPackets.Load(),
			CrossBytes:   st.CrossBytes.Load(),
			CrossDrops:   st.CrossDrops.Load(),
		})
	}
	for i := range e.portStat {
		st := &e.portStat[i]
		s.Ports = append(s.Ports, PortSnapshot{
			Name:       e.ports[i].Name,
			RxPackets:  st.RxPackets.Load(),
			TxPackets:  st.TxPackets.Load(),
			Unroutable: st.Unroutable.Load(),
			WriteDrops: st.WriteDrops.Load(),
		})
	}
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		s.CPUSeconds = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	return s
}
