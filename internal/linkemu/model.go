// Package linkemu is wanlab's packet engine: it moves IPv4 and IPv6
// packets between packet file descriptors (TUN devices in the test-bed's hosts) through
// emulated link directions with serialisation at a rate, a drop-tail queue,
// loss, propagation delay and jitter, counting every packet it forwards or drops.
//
// It knows nothing of scenarios, YAML or agents: it takes a Config and exposes Stats.
package linkemu

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"
)

// DirConfig configures one direction of an emulated link.
type DirConfig struct {
	Name string
	// Rate is the serialisation rate in bit/s, counting whole IP packets; 0 is unlimited.
	Rate   float64
	Delay  time.Duration
	Jitter time.Duration // uniform in [-Jitter, +Jitter]
	// Reorder lets jitter reorder packets; otherwise a packet is never
	// released before the one admitted ahead of it.
	Reorder bool
	Loss    LossConfig
	// The drop-tail queue holds packets whose serialisation has not finished.
	// Exactly one limit applies: QueuePackets if set, else QueueBytes; with
	// neither the queue is unbounded.
	QueuePackets int
	QueueBytes   int64
	// Down drops every packet that arrives; those already on the wire arrive.
	Down bool
	// MTU is the largest packet the direction carries; 0 is no limit. A
	// larger packet is dropped and, unless Blackhole is set and if it
	// forbids fragmentation, answered with ICMP "fragmentation needed".
	MTU       int
	Blackhole bool
	// Hops are the routers along the direction, in order: each decrements
	// a packet's TTL (an IPv6 packet's hop limit) and answers one that
	// expires with ICMP (ICMPv6) time exceeded. A hop's address is IPv4,
	// or IPv6 on a router that has no IPv4 one.
	Hops []netip.Addr
	// Hops6 are the IPv6 addresses of the Hops of a dual-stack path, one
	// for one, or none. A router answers a packet from its address of the
	// packet's family; one that has none of it still forwards the packet,
	// and drops it silently when its TTL runs out.
	Hops6 []netip.Addr
	// Entry is the router that forwards packets into the direction (the
	// zero Addr for none: a host's own link). It checks a packet's TTL
	// before the direction's MTU, as Linux's ip_forward does, and answers
	// ICMP time exceeded and fragmentation needed (ICMPv6 time exceeded
	// and packet too big) from its address: IPv4, or IPv6 on a router that
	// has no IPv4 one.
	Entry netip.Addr
	// Entry6 is the entry router's IPv6 address on a dual-stack path; the
	// zero Addr for none.
	Entry6 netip.Addr
	// Cross is background traffic sharing the direction; nil for none.
	Cross *CrossConfig
	// Trace makes the rate (or deliveries) and delay follow a recording.
	Trace *Trace
}

// LossConfig is Bernoulli loss with probability Random, or a Gilbert-Elliott
// model when GE is set.
type LossConfig struct {
	Random float64
	GE     *GilbertElliott
}

// GilbertElliott is the two-state burst loss model; see netem's gemodel.
type GilbertElliott struct {
	P, R              float64 // good->bad and bad->good transition probabilities
	BadLoss, GoodLoss float64
}

// verdict is what a direction decides for an admitted packet.
type verdict uint8

const (
	pass verdict = iota
	dropQueue
	dropLoss
)

// MaxHops bounds the routers of one direction: more than a TTL could cross.
const MaxHops = 64

// direction is the state of one link direction. admit is pure given the random
// source, so the model is tested with a synthetic clock.
type direction struct {
	cfg       DirConfig
	nsPerByte float64
	busyUntil int64 // when the link finishes serialising what it has accepted
	lastOut   int64 // release time of the latest packet, to keep order
	geBad     bool
	backlog   finishRing // packets still being serialised, for the queue limit
	stats     *DirStats
	cross     *crossGen // nil without cross traffic
	// opp is the next delivery opportunity of a mahimahi trace, counted
	// from the engine's start over its repeats (-1: none yet), and
	// oppLeft the bytes it still carries.
	opp     int64
	oppLeft int
	traced  bool         // the settings have a trace
	capture *captureRing // nil unless captured
	// entry says the direction has an entry router; routers counts it and
	// the hops along the direction, the routers a packet crossing it meets.
	entry   bool
	routers int32
}

func newDirection(cfg DirConfig, stats *DirStats) direction {
	d := direction{stats: stats, opp: -1}
	d.set(cfg, 0)
	return d
}

// set changes the settings at time now; what is being serialised finishes
// at the old rate. Cross traffic whose settings change starts again.
func (d *direction) set(cfg DirConfig, now int64) {
	switch {
	case cfg.Cross == nil:
		d.cross = nil
	case d.cross == nil || d.cross.cfg != *cfg.Cross:
		d.cross = newCrossGen(*cfg.Cross, now)
	}
	d.cfg = cfg
	d.traced = cfg.Trace != nil
	d.entry = cfg.hasEntry()
	d.routers = int32(cfg.routerCount())
	d.opp = -1
	d.nsPerByte = 0
	if cfg.Rate > 0 {
		d.nsPerByte = 8e9 / cfg.Rate
	}
	if cfg.Loss.GE == nil {
		d.geBad = false
	}
}

// check refuses settings the engine's arithmetic cannot honour.
func (d DirConfig) check() error {
	if !(d.Rate >= 0 && d.Rate <= MaxRate) || d.Delay < 0 || d.Delay > MaxDelay || d.Jitter < 0 || d.Jitter > MaxDelay ||
		!(d.Loss.Random >= 0 && d.Loss.Random <= 1) || d.QueueBytes < 0 || d.QueuePackets < 0 ||
		d.MTU < 0 || d.MTU > 0 && d.MTU < 68 {
		return fmt.Errorf("linkemu: direction %s: impossible parameters %+v", d.Name, d)
	}
	if d.Entry.IsValid() && !d.Entry.Is4() && !isIPv6(d.Entry) {
		return fmt.Errorf("linkemu: direction %s: entry router %v is neither IPv4 nor IPv6 as packets carry it", d.Name, d.Entry)
	}
	if d.Entry6.IsValid() && !isIPv6(d.Entry6) {
		return fmt.Errorf("linkemu: direction %s: entry router's Entry6 %v is not an IPv6 address", d.Name, d.Entry6)
	}
	if n := d.routerCount(); n > MaxHops {
		return fmt.Errorf("linkemu: direction %s: %d routers, at most %d", d.Name, n, MaxHops)
	}
	for _, h := range d.Hops {
		if !h.Is4() && !isIPv6(h) {
			return fmt.Errorf("linkemu: direction %s: hop %v is neither IPv4 nor IPv6 as packets carry it", d.Name, h)
		}
	}
	if len(d.Hops6) > 0 && len(d.Hops6) != len(d.Hops) {
		return fmt.Errorf("linkemu: direction %s: %d IPv6 addresses for %d hops", d.Name, len(d.Hops6), len(d.Hops))
	}
	for _, h := range d.Hops6 {
		if !isIPv6(h) {
			return fmt.Errorf("linkemu: direction %s: Hops6 address %v is not an IPv6 address", d.Name, h)
		}
	}
	if err := d.Cross.check(); err != nil {
		return fmt.Errorf("linkemu: direction %s: %w", d.Name, err)
	}
	if err := d.Trace.check(); err != nil {
		return fmt.Errorf("linkemu: direction %s: %w", d.Name, err)
	}
	return nil
}

// routerCount is the routers a packet crossing the direction meets: its
// entry router, if any, and its hops.
func (d DirConfig) routerCount() int {
	n := len(d.Hops)
	if d.hasEntry() {
		n++
	}
	return n
}

// hasEntry says whether the direction has an entry router.
func (d DirConfig) hasEntry() bool { return d.Entry.IsValid() || d.Entry6.IsValid() }

// entryAddr is the address the entry router answers a packet of IPv6 (v6)
// or IPv4 from: the zero Addr if it has none of that family.
func (d *DirConfig) entryAddr(v6 bool) netip.Addr { return ofFamily(v6, d.Entry, d.Entry6) }

// hopAddr is the address hop k answers a packet of IPv6 (v6) or IPv4
// from: the zero Addr if it has none of that family.
func (d *DirConfig) hopAddr(k int, v6 bool) netip.Addr {
	var a6 netip.Addr
	if k < len(d.Hops6) {
		a6 = d.Hops6[k]
	}
	return ofFamily(v6, d.Hops[k], a6)
}

// ofFamily is, of a router's address a (IPv4, or IPv6 if it has no IPv4
// one) and its IPv6 address a6 (the zero Addr for none), the one of the
// family asked for; the zero Addr if it has none.
func ofFamily(v6 bool, a, a6 netip.Addr) netip.Addr {
	switch {
	case !v6 && a.Is4():
		return a
	case v6 && a6.IsValid():
		return a6
	case v6 && a.Is6():
		return a
	}
	return netip.Addr{}
}

// admit decides the fate of a packet of size bytes arriving at time t (ns) and,
// if it passes, when it leaves the far end of the direction.
func (d *direction) admit(t int64, size int, rng *rand.Rand) (release int64, v verdict) {
	d.backlog.drain(t)
	if d.full(size) {
		return 0, dropQueue
	}
	finish := d.serialise(t, size)
	// A lost packet still occupied the wire: it is lost in transit, after serialisation.
	if d.lose(rng) {
		return 0, dropLoss
	}
	release = finish + int64(d.cfg.Delay)
	if d.traced {
		release = finish + d.delayAt(finish)
	}
	if j := int64(d.cfg.Jitter); j > 0 {
		release += int64((rng.Float64()*2 - 1) * float64(j))
		release = max(release, finish)
	}
	if !d.cfg.Reorder {
		release = max(release, d.lastOut)
		d.lastOut = release
	}
	return release, pass
}

// serialise puts size bytes arriving at t on the link after what it holds
// and returns when their serialisation finishes.
func (d *direction) serialise(t int64, size int) int64 {
	start := max(t, d.busyUntil)
	finish := start + int64(float64(size)*d.nsPerByte)
	if d.traced {
		finish = d.tracedFinish(start, size)
	}
	d.busyUntil = finish
	if finish > t {
		d.backlog.push(finish, size)
	}
	return finish
}

// admitCross takes a virtual packet of cross traffic at time t. It is what
// other users' flows carried, their congestion control having settled
// their share: it takes link time and queue space, but the queue drops it
// only when it is twice over its limit (cross traffic alone beyond the
// rate), and the loss model never does.
func (d *direction) admitCross(t int64, size int) bool {
	d.backlog.drain(t)
	switch {
	case d.cfg.QueuePackets > 0 && d.backlog.len() >= 2*d.cfg.QueuePackets,
		d.cfg.QueuePackets == 0 && d.cfg.QueueBytes > 0 && d.backlog.bytes+int64(size) > 2*d.cfg.QueueBytes:
		return false
	}
	d.serialise(t, size)
	return true
}

func (d *direction) full(size int) bool {
	switch {
	case d.cfg.QueuePackets > 0:
		return d.backlog.len() >= d.cfg.QueuePackets
	case d.cfg.QueueBytes > 0:
		return d.backlog.bytes+int64(size) > d.cfg.QueueBytes
	}
	return false
}

func (d *direction) lose(rng *rand.Rand) bool {
	ge := d.cfg.Loss.GE
	if ge == nil {
		return d.cfg.Loss.Random > 0 && rng.Float64() < d.cfg.Loss.Random
	}
	if d.geBad {
		if rng.Float64() < ge.R {
			d.geBad = false
		}
	} else if rng.Float64() < ge.P {
		d.geBad = true
	}
	p := ge.GoodLoss
	if d.geBad {
		p = ge.BadLoss
	}
	return p > 0 && rng.Float64() < p
}

// finishRing is a FIFO of (finish time, size) of packets in serialisation.
// Finish times are non-decreasing, so draining pops from the front.
type finishRing struct {
	at    []int64
	size  []int32
	head  int
	n     int
	bytes int64
}

func (r *finishRing) len() int { return r.n }

func (r *finishRing) push(at int64, size int) {
	if r.n == len(r.at) {
		r.grow()
	}
	i := (r.head + r.n) % len(r.at)
	r.at[i], r.size[i] = at, int32(size)
	r.n++
	r.bytes += int64(size)
}

func (r *finishRing) drain(t int64) {
	for r.n > 0 && r.at[r.head] <= t {
		r.bytes -= int64(r.size[r.head])
		r.head = (r.head + 1) % len(r.at)
		r.n--
	}
}

func (r *finishRing) grow() {
	c := max(64, 2*len(r.at))
	at, size := make([]int64, c), make([]int32, c)
	for i := 0; i < r.n; i++ {
		j := (r.head + i) % len(r.at)
		at[i], size[i] = r.at[j], r.size[j]
	}
	r.at, r.size, r.head = at, size, 0
}
