package linkemu

import (
	"sync/atomic"
	"time"
)

// DirStats counts what one link direction did. Fields are updated by the
// engine thread and may be read at any time from others.
type DirStats struct {
	Packets    atomic.Uint64 // forwarded out of the direction
	Bytes      atomic.Uint64
	QueueDrops atomic.Uint64 // dropped by the drop-tail queue
	LossDrops  atomic.Uint64 // dropped by the loss model
	DownDrops  atomic.Uint64 // arrived while the direction was down
	MTUDrops   atomic.Uint64 // larger than the direction's MTU
	Expired    atomic.Uint64 // their TTL ran out at one of its hops
	// Cross traffic's virtual packets: carried, and dropped by the model.
	CrossPackets, CrossBytes, CrossDrops atomic.Uint64
}

// Drops is every packet the direction's model dropped.
func (d DirSnapshot) Drops() uint64 {
	return d.QueueDrops + d.LossDrops + d.DownDrops + d.MTUDrops + d.Expired
}

// DirSnapshot is a copy of DirStats at one moment.
type DirSnapshot struct {
	Name       string `json:"name"`
	Packets    uint64 `json:"packets"`
	Bytes      uint64 `json:"bytes"`
	QueueDrops uint64 `json:"queue_drops"`
	LossDrops  uint64 `json:"loss_drops"`
	DownDrops  uint64 `json:"down_drops,omitempty"`
	MTUDrops   uint64 `json:"mtu_drops,omitempty"`
	Expired    uint64 `json:"ttl_expired,omitempty"`
	// Cross traffic: not counted in Packets, Bytes or Drops.
	CrossPackets uint64 `json:"cross_packets,omitempty"`
	CrossBytes   uint64 `json:"cross_bytes,omitempty"`
	CrossDrops   uint64 `json:"cross_drops,omitempty"`
	// CoalesceUS is the direction's coalescing window in force: how long
	// a release may wait to share a wake-up or a write (engine.coalesce).
	CoalesceUS float64 `json:"coalesce_us"`
	// Backlog is the number of packets queued or in serialisation.
	Backlog int `json:"-"`
}

// PortStats counts what the engine did with packets from one host.
type PortStats struct {
	RxPackets  atomic.Uint64 // read from the host
	TxPackets  atomic.Uint64 // written to the host
	Unroutable atomic.Uint64 // no path to the destination (or neither IPv4 nor IPv6)
	WriteDrops atomic.Uint64 // the host's device refused a packet
}

// PortSnapshot is a copy of PortStats at one moment.
type PortSnapshot struct {
	Name       string `json:"name"`
	RxPackets  uint64 `json:"rx_packets"`
	TxPackets  uint64 `json:"tx_packets"`
	Unroutable uint64 `json:"unroutable"`
	WriteDrops uint64 `json:"write_drops"`
}

// Stats is a snapshot of the whole engine.
type Stats struct {
	Dirs  []DirSnapshot  `json:"directions"`
	Ports []PortSnapshot `json:"ports"`
	// PoolDrops counts packets dropped because the packet pool was at its
	// memory cap: a test-bed limit, never a link-model decision.
	PoolDrops uint64 `json:"pool_drops"`
	// Realtime says whether the engine thread runs under SCHED_FIFO.
	Realtime bool `json:"realtime"`
	// CPUsAwake says whether the engine holds CPUs out of deep idle states.
	CPUsAwake bool `json:"cpus_awake"`
	// InFlight is the number of packets the engine holds now.
	InFlight int64 `json:"in_flight"`
	// Lateness is how late each wire segment reached its host, when its
	// write completed, compared with the model's schedule.
	Lateness LatenessSummary `json:"lateness"`
	// LatenessHistogram is the counts behind Lateness, its non-empty
	// buckets in order: LatenessBetween of two snapshots is the lateness
	// of the segments written between them.
	LatenessHistogram []LatenessBucket `json:"lateness_histogram,omitempty"`
	// Coalescing is the share of Lateness that wire segments spent waiting
	// for the rest of their run (offloads) or for a wake-up shared with
	// later releases, and EngineLateness the share after it: the engine's
	// and the write's.
	Coalescing     LatenessSummary `json:"coalescing"`
	EngineLateness LatenessSummary `json:"engine_lateness"`
	// WriteTime is how long each write into a host took: the receiving
	// host's network stack runs inside it, so a host slow to take a packet
	// shows here rather than in the engine's own work.
	WriteTime LatenessSummary `json:"write_time"`
	// WakeLateness is how late the engine's timer woke it, past the time
	// it asked for: the machine's share of Lateness, which a busy or a
	// virtual machine makes long whatever the engine does.
	WakeLateness LatenessSummary `json:"wake_lateness"`
	// IO counts the engine's reads and writes of packets.
	IO IOSnapshot `json:"io"`
	// Threads is how many engine threads share the ports.
	Threads int `json:"threads"`
	// Offloads says whether the hosts hand over super-packets.
	Offloads bool `json:"offloads"`
	// Changes is how late the engine applied timed changes to directions.
	Changes LatenessSummary `json:"changes"`
	// ICMPSent counts the ICMP errors the engine's routers sent.
	ICMPSent uint64 `json:"icmp_sent"`
	// CPU is the engine process's CPU time so far.
	CPUSeconds float64 `json:"cpu_seconds"`
	Uptime     float64 `json:"uptime_seconds"`
}

// LatenessSummary summarises the release lateness histogram.
type LatenessSummary struct {
	Count  uint64  `json:"count"`
	P50us  float64 `json:"p50_us"`
	P99us  float64 `json:"p99_us"`
	P999us float64 `json:"p999_us"`
	Maxus  float64 `json:"max_us"`
}

// LatenessBucket is one bucket of a lateness histogram: Count segments were
// late by at most UpToUS (and more than the bucket before's edge).
type LatenessBucket struct {
	UpToUS float64 `json:"up_to_us"`
	Count  uint64  `json:"count"`
}

// LatenessBetween summarises the segments counted in after but not in
// before, two LatenessHistograms of the same engine; its maximum is the
// upper edge of the highest bucket that grew.
func LatenessBetween(before, after []LatenessBucket) LatenessSummary {
	var counts [fineBuckets + coarseBuckets]uint64
	var total uint64
	for _, b := range after {
		counts[bucketOfEdge(b.UpToUS)] += b.Count
	}
	for _, b := range before {
		i := bucketOfEdge(b.UpToUS)
		counts[i] -= min(counts[i], b.Count)
	}
	top := -1
	for i, c := range counts {
		total += c
		if c > 0 {
			top = i
		}
	}
	s := LatenessSummary{Count: total}
	if total == 0 {
		return s
	}
	s.Maxus = bucketEdgeUS(top)
	s.P50us = quantileUS(counts[:], total, 0.50)
	s.P99us = quantileUS(counts[:], total, 0.99)
	s.P999us = quantileUS(counts[:], total, 0.999)
	return s
}

// ioCounters count the engine's system calls on its ports.
type ioCounters struct {
	reads, readBytes, writes, writeBytes atomic.Uint64
}

// IOSnapshot is the engine's reads and writes so far: system calls (an
// empty read included) and bytes, with virtio-net headers.
type IOSnapshot struct {
	Reads      uint64 `json:"reads"`
	ReadBytes  uint64 `json:"read_bytes"`
	Writes     uint64 `json:"writes"`
	WriteBytes uint64 `json:"write_bytes"`
}

func (c *ioCounters) snapshot() IOSnapshot {
	return IOSnapshot{Reads: c.reads.Load(), ReadBytes: c.readBytes.Load(), Writes: c.writes.Load(), WriteBytes: c.writeBytes.Load()}
}

// latenessHist has 1 us buckets below 2 ms and 1 ms buckets up to 1 s.
type latenessHist struct {
	buckets [fineBuckets + coarseBuckets]atomic.Uint64
	max     atomic.Int64
}

const (
	fineBuckets   = 2000
	coarseBuckets = 1000
)

func (h *latenessHist) record(ns int64) { h.recordN(ns, 1) }

// add adds o's counts to h, which nothing else is recording into.
func (h *latenessHist) add(o *latenessHist) {
	for i := range h.buckets {
		h.buckets[i].Add(o.buckets[i].Load())
	}
	h.max.Store(max(h.max.Load(), o.max.Load()))
}

// recordN records n events of the same lateness.
func (h *latenessHist) recordN(ns int64, n uint64) {
	if ns < 0 {
		ns = 0
	}
	var i int64
	if us := ns / 1000; us < fineBuckets {
		i = us
	} else {
		i = fineBuckets + min(ns/int64(time.Millisecond), coarseBuckets-1)
	}
	h.buckets[i].Add(n)
	if ns > h.max.Load() {
		h.max.Store(ns)
	}
}

// latenessCounts is one read of a latenessHist: a summary and a
// histogram made from the same read agree on the count.
type latenessCounts struct {
	counts [fineBuckets + coarseBuckets]uint64
	total  uint64
	maxNS  int64
}

func (h *latenessHist) load() *latenessCounts {
	c := &latenessCounts{maxNS: h.max.Load()}
	for i := range h.buckets {
		c.counts[i] = h.buckets[i].Load()
		c.total += c.counts[i]
	}
	return c
}

func (h *latenessHist) summary() LatenessSummary { return h.load().summary() }

// histogram lists c's non-empty buckets.
func (c *latenessCounts) histogram() []LatenessBucket {
	var out []LatenessBucket
	for i, n := range c.counts {
		if n > 0 {
			out = append(out, LatenessBucket{UpToUS: bucketEdgeUS(i), Count: n})
		}
	}
	return out
}

func (c *latenessCounts) summary() LatenessSummary {
	s := LatenessSummary{Count: c.total, Maxus: float64(c.maxNS) / 1e3}
	if c.total == 0 {
		return s
	}
	s.P50us = quantileUS(c.counts[:], c.total, 0.50)
	s.P99us = quantileUS(c.counts[:], c.total, 0.99)
	s.P999us = quantileUS(c.counts[:], c.total, 0.999)
	return s
}

// quantileUS returns the upper edge of the bucket holding quantile q, in us.
func quantileUS(counts []uint64, total uint64, q float64) float64 {
	rank := uint64(q*float64(total-1)) + 1
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return bucketEdgeUS(i)
		}
	}
	return 0
}

// bucketEdgeUS is bucket i's upper edge, in us.
func bucketEdgeUS(i int) float64 {
	if i < fineBuckets {
		return float64(i + 1)
	}
	return float64(i-fineBuckets+1) * 1000
}

// bucketOfEdge is the bucket whose upper edge is us, the inverse of
// bucketEdgeUS; an edge that is none (a malformed snapshot) lands in the
// bucket that holds it.
func bucketOfEdge(us float64) int {
	if us <= fineBuckets {
		return min(max(int(us)-1, 0), fineBuckets-1)
	}
	return fineBuckets + min(max(int(us/1000)-1, 0), coarseBuckets-1)
}
