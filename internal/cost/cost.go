// Package cost predicts how long moving a number of bytes from one host to
// another takes, from what monitoring measured of the path and of the end
// hosts' disks: the network "cost" that a resource broker or a replica
// manager asks for.
package cost

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Sample is one measured rate.
type Sample struct {
	At            time.Time
	BitsPerSecond float64
	// Streams and Window are those of the test that measured it (Window 0:
	// the kernel's autotuning); Bytes is what it moved (0 unknown), from
	// which its start-up is taken out.
	Streams int
	Window  int
	Bytes   int64
}

// Evidence is what is known of a path and its end hosts.
type Evidence struct {
	Src, Dst string
	// Throughput are memory-to-memory TCP tests of the path; Transfers
	// disk-to-disk ones.
	Throughput, Transfers []Sample
	// RTT is the path's lowest round-trip time, Loss its probes' loss
	// ratio out of Probes probes; ProbesAt when they were last measured.
	RTT      time.Duration
	Loss     float64
	Probes   int
	ProbesAt time.Time
	// SrcRead and DstWrite are the end hosts' sequential disk rates.
	SrcRead, DstWrite []Sample
	// Target is the kind of far end Dst is when it runs no agent (a
	// target of the monitoring configuration: TargetIperf3, TargetSTAMP,
	// TargetPing); "" for a host.
	Target string
	// Twin is the twin of the path fitted from the same history (wanlab
	// serve's twin download), if the caller can offer one: a prediction
	// names it when the history holds what the twin needs of the path's
	// way, a measured rate and round trip.
	Twin *TwinRef
}

// TwinRef names the twin of a path fitted from the history a prediction
// rests on: where to download it, and the span of history it is fitted
// from.
type TwinRef struct {
	Href       string    `json:"href"`
	FittedFrom time.Time `json:"fitted_from"`
	To         time.Time `json:"to"`
}

// The kinds of target, far ends that run no agent: an iperf3 server has a
// measured throughput; a STAMP reflector and a ping target answer probes
// only.
const (
	TargetIperf3 = "iperf3"
	TargetSTAMP  = "stamp"
	TargetPing   = "ping"
)

// Prediction is a transfer's predicted time and what it rests on.
type Prediction struct {
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	Bytes int64  `json:"bytes"`
	// Mode is "disk" (file to file) or "memory".
	Mode             string     `json:"mode"`
	PredictedSeconds float64    `json:"predicted_seconds"`
	IntervalSeconds  [2]float64 `json:"interval_seconds"`
	// RateBitsPerSecond is the steady rate the prediction uses, Limit
	// what sets it.
	RateBitsPerSecond float64 `json:"rate_bits_per_second"`
	Limit             string  `json:"limit"`
	Streams           int     `json:"streams"`
	WindowBytes       int64   `json:"window_bytes"`
	RTTSeconds        float64 `json:"rtt_seconds,omitempty"`
	Basis             []Basis `json:"basis"`
	// AgeSeconds is the age of the oldest input the prediction rests on.
	AgeSeconds float64 `json:"age_seconds"`
	// Certainty is high (several recent direct measurements), medium
	// (few, or composed from the path and the disks), or low (a TCP model
	// from probes alone).
	Certainty string   `json:"certainty"`
	Caveats   []string `json:"caveats,omitempty"`
	// Target is the kind of far end the destination is when it runs no
	// agent; CannotPredict says what the prediction cannot know of it
	// (a measured throughput, its disk, its CPU), each also a caveat.
	Target        string   `json:"target,omitempty"`
	CannotPredict []string `json:"cannot_predict,omitempty"`
	// Twin is the twin of the path fitted from the same history, when it
	// holds a measured rate (TCP tests or transfers) and round trip of the
	// path: a scenario to rehearse the transfer on.
	Twin *TwinRef `json:"twin,omitempty"`
}

// Basis is one input of a prediction.
type Basis struct {
	What          string    `json:"what"`
	Samples       int       `json:"samples"`
	BitsPerSecond float64   `json:"bits_per_second,omitempty"`
	Newest        time.Time `json:"newest"`
}

// ErrNoData means there is nothing recent enough to predict from.
var ErrNoData = errors.New("no recent measurement")

// Segment sizes of the TCP model.
const (
	mss           = 1448
	initialWindow = 10 * mss
	// recent is how many of the newest samples a rate is the median of.
	recent = 5
)

// Predict estimates a transfer of bytes from ev's source to its
// destination: disk to disk (disk) or memory to memory. It refuses with
// ErrNoData rather than guess for a path with nothing measured.
func Predict(ev Evidence, bytes int64, disk bool, now time.Time) (Prediction, error) {
	if bytes <= 0 {
		return Prediction{}, fmt.Errorf("bytes: %d: give a positive size", bytes)
	}
	p := Prediction{Src: ev.Src, Dst: ev.Dst, Bytes: bytes, Mode: "memory", Streams: 1, RTTSeconds: ev.RTT.Seconds(), Target: ev.Target}
	if disk {
		p.Mode = "disk"
	}
	var oldest time.Time
	use := func(b Basis) {
		p.Basis = append(p.Basis, b)
		if oldest.IsZero() || b.Newest.Before(oldest) {
			oldest = b.Newest
		}
	}
	var lo, mid, hi float64 // steady rates, bits/s
	modelled := false
	switch {
	case disk && len(ev.Transfers) > 0 || len(ev.Throughput) > 0:
		// Disk to disk, the path's own transfers are direct evidence;
		// else its memory-to-memory tests. Either's average includes its
		// slow start, which over a long path is much of a short test: it
		// is taken out, so that any size can be predicted.
		samples, what, limit := ev.Throughput, "memory-to-memory throughput tests", "network"
		if disk && len(ev.Transfers) > 0 {
			samples, what, limit = ev.Transfers, "disk-to-disk transfers", "disk-to-disk transfers of the path"
		}
		var rates []float64
		for _, s := range newest(samples) {
			rates = append(rates, steadyRate(s, ev.RTT))
		}
		lo, mid, hi = spread(rates)
		s := newest(samples)[0]
		p.Streams, p.Limit = max(s.Streams, 1), limit
		use(Basis{What: what, Samples: len(rates), BitsPerSecond: mid, Newest: s.At})
	case ev.Probes > 0 && ev.RTT > 0:
		// Only probes: the Mathis et al. bound of a loss-limited TCP
		// stream. Probes see neither the capacity nor the queue, so the
		// interval is wide and the certainty low.
		loss := max(ev.Loss, 0.5/float64(ev.Probes))
		mid = mss * 8 / ev.RTT.Seconds() * math.Sqrt(1.5/loss)
		lo, hi, modelled = mid/3, mid*1.5, true
		p.Limit = "TCP model of the path's loss and round-trip time"
		use(Basis{What: fmt.Sprintf("TCP model (Mathis) from %d probes: loss %.3g%%, RTT %s", ev.Probes, loss*100, ev.RTT.Round(time.Microsecond)),
			Samples: ev.Probes, BitsPerSecond: mid, Newest: ev.ProbesAt})
		if ev.Target == "" || ev.Target == TargetIperf3 { // a latency-only target's is said by cannot
			p.Caveats = append(p.Caveats, "no throughput test of the path: the rate is modelled from probes, not measured")
		}
	default:
		return Prediction{}, fmt.Errorf("%s->%s: %w of throughput, transfers or probes", ev.Src, ev.Dst, ErrNoData)
	}
	cannot(&p, ev, disk)
	if ev.Twin != nil && ev.RTT > 0 && len(ev.Throughput)+len(ev.Transfers) > 0 {
		p.Twin = ev.Twin
	}
	if disk && len(ev.Transfers) == 0 {
		for _, d := range []struct {
			what, host string
			s          []Sample
			limit      string
		}{{"disk read of " + ev.Src, ev.Src, ev.SrcRead, "the source's disk read"}, {"disk write of " + ev.Dst, ev.Dst, ev.DstWrite, "the destination's disk write"}} {
			if len(d.s) == 0 {
				if d.host != ev.Dst || ev.Target == "" { // a target's is said by cannot
					p.Caveats = append(p.Caveats, "no disk test of "+d.host+": a disk-to-disk transfer may be slower than predicted")
				}
				continue
			}
			rates := make([]float64, 0, len(d.s))
			for _, s := range newest(d.s) {
				rates = append(rates, s.BitsPerSecond)
			}
			dlo, dmid, dhi := spread(rates)
			use(Basis{What: d.what, Samples: len(rates), BitsPerSecond: dmid, Newest: newest(d.s)[0].At})
			if dmid < mid {
				p.Limit = d.limit
			}
			lo, mid, hi = min(lo, dlo), min(mid, dmid), min(hi, dhi)
		}
	}
	p.RateBitsPerSecond = mid
	p.PredictedSeconds = Seconds(bytes, mid, ev.RTT, p.Streams)
	// The interval: the spread of what was measured, never narrower than
	// the model's own error as BenchmarkCostAccuracy measures it against
	// real transfers (p90 11-12%, most of it transfers taking longer than
	// predicted): 10% below, 15% above.
	p.IntervalSeconds = [2]float64{
		min(Seconds(bytes, hi, ev.RTT, p.Streams), p.PredictedSeconds*0.90),
		max(Seconds(bytes, lo, ev.RTT, p.Streams), p.PredictedSeconds*1.15),
	}
	p.WindowBytes = window(mid, ev.RTT, p.Streams)
	p.AgeSeconds = max(now.Sub(oldest).Seconds(), 0)
	switch {
	case modelled:
		p.Certainty = "low"
	case p.Basis[0].Samples >= 3 && len(p.Caveats) == 0:
		p.Certainty = "high"
	default:
		p.Certainty = "medium"
	}
	return p, nil
}

// cannot says what a prediction toward a target cannot know: the far
// end runs no agent, so neither its disk nor (a STAMP reflector, a ping
// target) its CPU is measured, and a latency-only target has no
// throughput test, only the TCP model of its round trips and loss.
func cannot(p *Prediction, ev Evidence, disk bool) {
	if ev.Target == "" {
		return
	}
	say := func(what, why string) {
		p.CannotPredict = append(p.CannotPredict, what)
		p.Caveats = append(p.Caveats, "cannot predict "+what+": "+why)
	}
	if ev.Target != TargetIperf3 {
		say("measured throughput", fmt.Sprintf("%s is a %s target, which answers probes only: the rate is the TCP model's of its round trips and loss", ev.Dst, ev.Target))
		say("the far end's CPU", ev.Dst+" runs no agent")
	}
	if disk {
		say("the far end's disk", ev.Dst+" runs no agent: a file written there may go slower than predicted")
	}
}

// newest returns up to the recent newest samples, newest first.
func newest(s []Sample) []Sample {
	s = slices.Clone(s)
	sort.Slice(s, func(i, j int) bool { return s[i].At.After(s[j].At) })
	return s[:min(len(s), recent)]
}

// spread returns the lowest, the median and the highest of rates.
func spread(rates []float64) (lo, mid, hi float64) {
	s := slices.Clone(rates)
	slices.Sort(s)
	n := len(s)
	mid = s[n/2]
	if n%2 == 0 {
		mid = (s[n/2-1] + s[n/2]) / 2
	}
	return s[0], mid, s[n-1]
}

// steadyRate is a transfer's rate once its streams have opened their
// windows: its bytes over its time less the start-up the model predicts.
func steadyRate(s Sample, rtt time.Duration) float64 {
	if s.Bytes <= 0 || s.BitsPerSecond <= 0 {
		return s.BitsPerSecond
	}
	took := float64(s.Bytes) * 8 / s.BitsPerSecond
	// The lowest rate that moves the bytes in that time: a short transfer
	// on a long path spends its time in slow start, and any higher rate
	// would have taken as long, so that is all it shows. Seconds is not
	// quite monotonic in the rate (a faster path adds a slow-start round),
	// hence a scan up in 1% steps, then bisection within the last.
	r := s.BitsPerSecond
	for Seconds(s.Bytes, r, rtt, s.Streams) > took && r < s.BitsPerSecond*100 {
		r *= 1.01
	}
	lo, hi := r/1.01, r
	for range 40 {
		m := (lo + hi) / 2
		if Seconds(s.Bytes, m, rtt, s.Streams) > took {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// Seconds is the time to move bytes over streams TCP streams sharing a
// steady rate (bits/s) on a path of round-trip rtt: each stream's slow
// start doubles its window every round trip from the initial window until
// it carries its share of the rate, and then the rest flows at the rate.
// The clock starts when the connections are open, as measure transfer's.
func Seconds(bytes int64, rate float64, rtt time.Duration, streams int) float64 {
	if rate <= 0 {
		return math.Inf(1)
	}
	streams = max(streams, 1)
	left := float64(bytes) / float64(streams)
	share := rate / 8 / float64(streams) // bytes/s per stream
	r := rtt.Seconds()
	t := 0.0
	for cwnd := float64(initialWindow); left > 0 && r > 0 && cwnd < share*r; cwnd *= 2 {
		sent := min(cwnd, left)
		left -= sent
		if left == 0 {
			// The last flight arrives half a round trip after it left,
			// and its bytes at the rate.
			return t + r/2 + sent/share
		}
		t += r
	}
	return t + left/share
}

// window is the TCP window each stream needs to carry its share of rate
// over rtt (the bandwidth-delay product), rounded up to 64 KiB.
func window(rate float64, rtt time.Duration, streams int) int64 {
	bdp := rate / 8 * rtt.Seconds() / float64(max(streams, 1))
	const unit = 64 << 10
	return max(int64(math.Ceil(bdp/unit))*unit, unit)
}

// Refusal is a candidate that could not be predicted, and why.
type Refusal struct {
	Src    string `json:"src"`
	Reason string `json:"reason"`
}

// Rank predicts a transfer from each candidate source (replica) and orders
// them fastest first; candidates with nothing to predict from are listed
// apart with the reason.
func Rank(evs []Evidence, bytes int64, disk bool, now time.Time) ([]Prediction, []Refusal) {
	var ranked []Prediction
	var refused []Refusal
	for _, ev := range evs {
		p, err := Predict(ev, bytes, disk, now)
		if err != nil {
			refused = append(refused, Refusal{Src: ev.Src, Reason: err.Error()})
			continue
		}
		ranked = append(ranked, p)
	}
	slices.SortStableFunc(ranked, func(a, b Prediction) int {
		switch {
		case a.PredictedSeconds < b.PredictedSeconds:
			return -1
		case a.PredictedSeconds > b.PredictedSeconds:
			return 1
		}
		return 0
	})
	return ranked, refused
}
