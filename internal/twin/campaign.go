// Package twin fits an emulated path to measurements of a real one (issue
// 35): a Campaign (what wanlab's measure verbs found on the path between
// two hosts, each way, or what a monitoring archive holds of it) goes in;
// a Twin comes out, each way's rate, base delay, jitter, bottleneck queue,
// loss model, cross traffic and MTU, every value with its evidence (which
// measurement, how many samples) and a 95% interval, and what could not be
// fitted named as unknown with the default used. It writes the twin as JSON
// and as a scenario (hosts A and B joined by one link) with a comment on
// every value. Plan lists a campaign's measurements within a budget.
//
// It is pure: it measures nothing and opens nothing. The CLI runs the
// campaign and fills the Campaign; a monitoring archive's history is read
// (ReadHistory) only through the HistoryReader interface the caller
// passes, an archive the caller opened, or given as points (FromHistory).
package twin

import "time"

// Campaign is what was measured on the path between hosts A and B. Every
// sample names its direction by From and To (A->B is forward, B->A
// reverse); samples of other hosts are ignored. The CLI fills it from the
// measure verbs' results (/work/notes/design35.md gives the mapping) or
// from an archive's points (FromHistory).
type Campaign struct {
	A, B string
	// Family is the address family measured over, "ipv4" or "ipv6" ("":
	// the hosts' preference, unknown).
	Family string
	// Probes are rounds of probes with nothing else on the path: each
	// gives both ways' one-way delays and losses (a probe round from A to
	// B sees A->B on the way out and B->A on the way back).
	Probes []ProbeRound
	// Summaries are rounds of probes of which only the summary is known
	// (an archive's points): no per-probe series, so no loss runs.
	Summaries []ProbeSummary
	// Loads are impact tests: probes before and during a bulk load (UDP
	// above the capacity, or TCP) on one direction.
	Loads []LoadTest
	// Capacity are measure capacity's estimates (and those measure
	// available makes first); Available measure available's.
	Capacity, Available []RateSample
	// Throughput are TCP tests (measure throughput, or an impact's load).
	Throughput []ThroughputSample
	// Traces are measure trace's hop lists.
	Traces []Trace
	// MTUs are what is known of each direction's path MTU.
	MTUs []MTU
}

// ProbeRound is a round of probes (probe.Summary's probes).
type ProbeRound struct {
	From, To string
	// Size is the probes' UDP payload in bytes.
	Size int
	// Synchronised says the one-way delays are true ones (a shared clock,
	// or both clocks synchronised), within Bound; otherwise they are
	// offset by the clocks' difference (their changes still hold).
	Synchronised bool
	Bound        time.Duration
	Probes       []Probe
}

// Probe is one probe of a round, in sequence order.
type Probe struct {
	Sent time.Time
	// Lost says no reply came back.
	Lost bool
	// RTT is the round trip without the reflector's turnaround; Forward
	// and Back the one-way delays on the prober's and the reflector's
	// clocks (probe.Result's RTT, Forward, Back).
	RTT, Forward, Back time.Duration
	// ReflectorCount is how many distinct probes the reflector had
	// received when it answered (0: it does not number them).
	ReflectorCount uint32
}

// ProbeSummary is a round of probes known by its figures only.
type ProbeSummary struct {
	From, To string
	At       time.Time
	// MinRTT is the least round trip; Jitter the mean difference between
	// consecutive round trips (IPDV), 0 unknown.
	MinRTT, Jitter time.Duration
	// Loss is the round-trip loss ratio; LossForward and LossBack each
	// way's (-1 unknown).
	Loss, LossForward, LossBack float64
	// OWDForward and OWDBack are the median one-way delays, 0 unknown
	// (an archive keeps them only where the clocks allow).
	OWDForward, OWDBack time.Duration
}

// LoadTest is an impact test (impact.Result): probes before a bulk load
// from LoadFrom to LoadTo and during it.
type LoadTest struct {
	LoadFrom, LoadTo string
	Start            time.Time
	Before, During   ProbeRound
	// UDP says the load was UDP at TargetBPS (a TCP one otherwise).
	UDP       bool
	TargetBPS float64
	Streams   int
	// Retransmits are a TCP load's: more than none says it reached the
	// point of loss, where the bottleneck queue is full.
	Retransmits int
	// SentBPS is what the load's sender sent (0 unknown), ThroughputBPS
	// what its receiver got.
	SentBPS, ThroughputBPS float64
}

// Overloaded says a UDP load sent a tenth more than got through, with
// the path's random loss (a ratio) put back: the bottleneck dropped the
// rest, so the queue was full and what got through is what the cross
// traffic left. It is judged by the receiver, not by a capacity estimate
// that may be off.
func (l LoadTest) Overloaded(loss float64) bool {
	return l.UDP && l.ThroughputBPS > 0 && l.SentBPS > 1.1*l.Through(loss)
}

// Through is what the bottleneck let through of the load: what its
// receiver got, with the path's random loss (a ratio, at most a half
// counted) put back.
func (l LoadTest) Through(loss float64) float64 {
	return l.ThroughputBPS / max(1-loss, 0.5)
}

// RateSample is one estimate of a rate in bit/s, with the spread the
// measurement gives (p25-p75 of capacity's trains, available's bounds).
type RateSample struct {
	From, To  string
	At        time.Time
	BPS       float64
	Low, High float64
	// N counts what the estimate rests on (trains, fleets).
	N int
}

// ThroughputSample is one TCP test.
type ThroughputSample struct {
	From, To    string
	At          time.Time
	Streams     int
	BPS         float64
	Retransmits int
	Seconds     float64
}

// Trace is one hop list, its end included; "*" is a hop that did not answer.
type Trace struct {
	From, To string
	At       time.Time
	Hops     []string
	Reached  bool
}

// MTU is a direction's path MTU in bytes and where it comes from (an
// inventory's host MTU, a path-MTU probe).
type MTU struct {
	From, To string
	Bytes    int
	Source   string
}
