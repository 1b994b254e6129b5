package linkemu

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Config is everything the engine needs: ports, link directions and, for each
// ordered pair of ports, the directions a packet crosses.
type Config struct {
	Ports []PortConfig
	Dirs  []DirConfig
	// Paths maps {src port, dst port} to indexes into Dirs, in crossing order.
	// A pair with no entry is unreachable; an empty path forwards directly.
	Paths map[[2]int][]int
	// Joined are groups of directions that run on one thread, with the
	// ports whose paths cross them, as if one path crossed them all: a
	// PathChange may route a port's packets over any direction of a group
	// that one of its paths crosses (a component of routers, with the
	// links into it).
	Joined [][]int
	Seed   uint64
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

// shard forwards packets between its ports through its link model, on a
// thread of its own and its writer's: it waits for the ports' fds, reads
// through each Port into the model's pool, tells the model the time, and
// writes what the model delivers. Everything here is I/O, clocks and
// threads; what happens to a packet on a link is the model's. An Engine runs
// one shard per group of ports that share no direction, so that no state
// crosses threads.
type shard struct {
	m       model // the link model, which the loop below drives
	portCfg []PortConfig
	ports   []Port // the same, as the packet loop moves packets through them
	// readBufs and readSizes are the engine's read batch; writeBatch its writes.
	readBufs   [1][]byte
	readSizes  [1]int
	writeBatch writeBatch
	current    []DirConfig // the settings in force, under changeMu
	// Lateness of each wire segment when its write completed: in all, the
	// share it waited for the rest of its run, and the engine's share.
	late, lateCoalesce, lateEngine latenessHist
	writeTime                      latenessHist // each write's system call
	wakeLate                       latenessHist // the engine's timer, past its time
	io                             ioCounters

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

	changeMu   sync.Mutex
	pending    []change // in due order; immediate ones are due at 0
	nextDue    atomic.Int64
	applied    []Applied
	changeLate latenessHist
	captured   []bool // directions with a capture, under changeMu
}

// change is new settings for one direction, due at an engine time; or,
// with path, a new path for a pair of ports; or, with captureSet, the
// start (capture set) or end (nil) of a capture.
type change struct {
	due        int64
	dir        int
	cfg        DirConfig
	path       *PathChange
	what       string
	tag        string
	ref        int
	capture    *captureRing
	captureSet bool
}

// TimedChange is new settings for direction Dir from time At on or, with
// Path set, a new path for a pair of ports (Dir and Config unused).
// Changes with the same Tag can be cancelled together; What says what the
// change is, in the words of whoever asked for it.
type TimedChange struct {
	At     time.Time
	Dir    int
	Config DirConfig
	Path   *PathChange
	What   string
	Tag    string
	// Ref is the caller's, returned with the change once applied.
	Ref int
}

// Applied is a change the engine made: when it was due and when it took
// effect, on the engine's clock turned into wall-clock time. A new path
// has Path set and Dir -1.
type Applied struct {
	Dir  int
	Path *PathChange
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

// newShard checks the configuration and prepares a shard: its model, its
// ports and the poller that waits for them.
func newShard(cfg Config) (*shard, error) {
	n := len(cfg.Ports)
	e := &shard{
		portCfg:  cfg.Ports,
		ports:    make([]Port, n),
		current:  slices.Clone(cfg.Dirs),
		captured: make([]bool, len(cfg.Dirs)),
		seed:     cfg.Seed,
		epoch:    time.Now(),
		realtime: cfg.Realtime,
		awake:    cfg.KeepCPUsAwake,
		spin:     int64(cfg.Spin),
	}
	if err := e.m.init(cfg); err != nil {
		return nil, err
	}
	e.nextDue.Store(noneDue)
	e.m.crossDue = 0 // look once: directions may start with cross traffic
	for i, p := range cfg.Ports {
		e.ports[i] = tunPort{fd: p.FD}
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
		if e.m.releaseDue(now) > 0 {
			e.spinning = false
		}
		e.flush()
		if now >= e.m.crossDue {
			e.m.crossAll(now)
		}
		wait := min(idleWait, max(0, e.nextDue.Load()-e.now()), max(0, e.m.crossDue-e.now()))
		if e.m.events.len() > 0 {
			// Sleep until the latest release within the coalescing window,
			// so that one wake-up makes them all; when one is due already,
			// there is no sleep to share.
			e.m.wakeAt = e.m.events.top().at
			if e.m.wakeAt > now {
				e.m.wakeAt = e.m.events.wakeTime()
			}
			wait = min(wait, max(0, e.m.wakeAt-e.now()))
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
				return fmt.Errorf("linkemu: port %s: device closed or failed", e.portCfg[e.polled[r.index]].Name)
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
		todo = append(todo, change{due: due, dir: c.Dir, cfg: c.Config, path: c.Path, what: c.What, tag: c.Tag, ref: c.Ref})
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
		if c.path == nil {
			c.cfg.Name = e.current[c.dir].Name
			e.current[c.dir] = c.cfg
		}
		if c.due > 0 {
			e.changeLate.record(at - c.due)
		}
		if len(e.applied) < maxApplied {
			due := c.due
			if due == 0 {
				due = at
			}
			e.applied = append(e.applied, Applied{Dir: c.dir, Path: c.path, What: c.what, Tag: c.tag, Ref: c.ref,
				Due: e.epoch.Add(time.Duration(due)), At: e.epoch.Add(time.Duration(at))})
		}
	}
	e.changeMu.Unlock()
	for _, c := range todo {
		switch {
		case c.captureSet:
			e.m.dirs[c.dir].capture = c.capture
		case c.path != nil:
			e.m.paths.set(c.path.From, c.path.To, c.path.Dirs)
		default:
			e.m.set(c.dir, c.cfg, at)
		}
	}
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
	e.m.crossCatchUp(e.now())
	port := e.ports[src]
	for range readBatch {
		if len(e.m.pool.free[e.m.pool.largest()]) == 0 {
			e.reclaim() // before the pool grows, take back what the writer is done with
		}
		slot, buf := e.m.pool.get(e.m.pool.largest())
		if slot < 0 {
			// The pool is at its cap: read into scratch to drain the device, and count it.
			e.io.reads.Add(1)
			e.readBufs[0] = e.m.pool.scratch
			if _, err := port.Read(e.readBufs[:], e.readSizes[:]); err != nil {
				return
			}
			e.m.pool.drops.Add(1)
			continue
		}
		e.io.reads.Add(1)
		e.readBufs[0] = buf
		got, err := port.Read(e.readBufs[:], e.readSizes[:])
		n := e.readSizes[0]
		if err != nil || got == 0 || n <= e.m.frameOff() {
			e.m.pool.put(slot)
			return
		}
		e.io.readBytes.Add(uint64(n))
		now := e.now()
		e.m.ingest(src, slot, n, now)
		e.flush()
		// A release due by this read goes before the next read: a
		// sender's burst of super-packets takes tens of microseconds each
		// to read.
		if e.m.dueBy(now) {
			return
		}
	}
}

// flush writes the model's deliveries, or hands them to the writer.
func (e *shard) flush() {
	for i, d := range e.m.out {
		e.m.out[i] = delivery{}
		// An idle writer with nothing queued would have to be woken: a
		// light load is cheaper written here, and nothing queued can be
		// overtaken.
		if e.writer.idle.Load() && e.writer.out.empty() {
			e.write(d, &e.writeBatch)
			e.m.drop(d.slot)
			continue
		}
		e.writer.submit(d)
	}
	e.m.out = e.m.out[:0]
}

// write puts a packet into its destination host; the engine or the writer
// calls it. Each of its wire segments is as late as its write's end.
func (e *shard) write(d delivery, b *writeBatch) {
	start := e.now()
	b.heads[0], b.payloads[0] = d.head, d.payload
	_, err := e.ports[d.dst].Write(b.heads[:], b.payloads[:])
	b.heads[0], b.payloads[0] = nil, nil
	done := e.now()
	e.writeTime.record(done - start)
	e.io.writes.Add(1)
	if err != nil {
		e.m.portStat[d.dst].WriteDrops.Add(uint64(d.segs))
		return
	}
	e.io.writeBytes.Add(uint64(len(d.head) + len(d.payload)))
	e.m.portStat[d.dst].TxPackets.Add(uint64(d.segs))
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
		e.m.pool.put(slot)
	}
}

// Stats returns a snapshot of every counter.
func (e *shard) Stats() Stats {
	late := e.late.load()
	s := Stats{
		PoolDrops:         e.m.pool.drops.Load(),
		Realtime:          e.rtActive.Load(),
		CPUsAwake:         e.awakeOK.Load(),
		InFlight:          e.m.inFlight.Load(),
		Lateness:          late.summary(),
		LatenessHistogram: late.histogram(),
		Coalescing:        e.lateCoalesce.summary(),
		EngineLateness:    e.lateEngine.summary(),
		WriteTime:         e.writeTime.summary(),
		WakeLateness:      e.wakeLate.summary(),
		IO:                e.io.snapshot(),
		Offloads:          e.m.vnet,
		Changes:           e.changeLate.summary(),
		ICMPSent:          e.m.icmpSent.Load(),
		Uptime:            time.Since(e.epoch).Seconds(),
	}
	settings := e.Settings()
	for i := range e.m.dirStats {
		st := &e.m.dirStats[i]
		s.Dirs = append(s.Dirs, DirSnapshot{
			Name:         settings[i].Name, // not the model's copy, which the engine thread writes
			CoalesceUS:   float64(e.m.windowOf(settings[i])) / 1e3,
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
	for i := range e.m.portStat {
		st := &e.m.portStat[i]
		s.Ports = append(s.Ports, PortSnapshot{
			Name:       e.portCfg[i].Name,
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
