package twin

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// ErrHosts says the campaign does not name two hosts.
var ErrHosts = errors.New("a twin joins two distinct hosts, A and B")

// way is one direction of the path.
type way struct{ from, to string }

func (w way) is(from, to string) bool { return from == w.from && to == w.to }
func (w way) String() string          { return w.from + "->" + w.to }

// headerBytes are a probe's IP and UDP headers.
const headerBytes = 28

// New fits the twin of the path between c.A and c.B: it finds what changed
// during the campaign, keeps the latest stable part, and fits each way.
func New(c Campaign) (*Twin, error) {
	if c.A == "" || c.B == "" || c.A == c.B {
		return nil, fmt.Errorf("fitting a twin of %q and %q: %w", c.A, c.B, ErrHosts)
	}
	t := &Twin{A: c.A, B: c.B}
	first, last := c.span()
	t.Changes = detectChanges(c)
	cut := first
	for _, ch := range t.Changes {
		if ch.At.After(cut) {
			cut = ch.At
		}
	}
	t.Segment = Segment{From: cut, To: last, Why: "the whole campaign: nothing changed during it"}
	if len(t.Changes) > 0 {
		t.Segment.Why = fmt.Sprintf("the part after the last change (%s at %s): what came before describes another path", t.Changes[len(t.Changes)-1].Kind, cut.Format(time.RFC3339))
	}
	seg := c.since(cut)
	ways := [2]way{{c.A, c.B}, {c.B, c.A}}
	fits := [2]*Fit{&t.Forward, &t.Reverse}
	var rho [2]float64
	for i, w := range ways {
		f := fits[i]
		f.fitRate(seg, w)
		f.fitLoss(seg, w)
		f.fitCross(seg, w)
		f.fitMTU(seg, w)
		rho[i] = min(f.CrossBPS/f.RateBPS, 0.9)
	}
	t.Notes = append(hopChanges(c), fitDelay(seg, ways, fits, rho)...)
	if c.Family != "" {
		t.Notes = append(t.Notes, fmt.Sprintf("fitted from the path's %s measurements: over its other address family it may take another route", c.Family))
	}
	for i, w := range ways {
		fits[i].fitQueue(seg, w, rho[i], fits[0].DelayS+fits[1].DelayS)
	}
	t.Asymmetry = Asymmetry{RateRatio: t.Reverse.RateBPS / t.Forward.RateBPS, DelayDiffS: t.Reverse.DelayS - t.Forward.DelayS}
	if _, split := t.Forward.Evidence[KeySplit]; !split {
		t.Asymmetry.Note = "the one-way delays are split evenly: their difference is unknown"
	}
	return t, nil
}

// span is the first and last time of the campaign's measurements.
func (c Campaign) span() (first, last time.Time) {
	see := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	for _, r := range c.Probes {
		for _, p := range r.Probes {
			see(p.Sent)
		}
	}
	for _, s := range c.Summaries {
		see(s.At)
	}
	for _, l := range c.Loads {
		see(l.Start)
		for _, p := range l.During.Probes {
			see(p.Sent)
		}
	}
	for _, s := range slices.Concat(c.Capacity, c.Available) {
		see(s.At)
	}
	for _, s := range c.Throughput {
		see(s.At)
	}
	for _, s := range c.Traces {
		see(s.At)
	}
	return first, last
}

// since is the campaign from t on: probes sent then, loads started then,
// samples taken then (t zero: all of it).
func (c Campaign) since(t time.Time) Campaign {
	if t.IsZero() {
		return c
	}
	out := Campaign{A: c.A, B: c.B, Family: c.Family, MTUs: c.MTUs,
		Summaries:  from(c.Summaries, t, func(s ProbeSummary) time.Time { return s.At }),
		Loads:      from(c.Loads, t, func(l LoadTest) time.Time { return l.Start }),
		Capacity:   from(c.Capacity, t, func(s RateSample) time.Time { return s.At }),
		Available:  from(c.Available, t, func(s RateSample) time.Time { return s.At }),
		Throughput: from(c.Throughput, t, func(s ThroughputSample) time.Time { return s.At }),
		Traces:     from(c.Traces, t, func(s Trace) time.Time { return s.At }),
	}
	for _, r := range c.Probes {
		if r.Probes = from(r.Probes, t, func(p Probe) time.Time { return p.Sent }); len(r.Probes) > 0 {
			out.Probes = append(out.Probes, r)
		}
	}
	return out
}

// from is the items of xs at t or after.
func from[T any](xs []T, t time.Time, at func(T) time.Time) []T {
	var out []T
	for _, x := range xs {
		if !at(x).Before(t) {
			out = append(out, x)
		}
	}
	return out
}

// fitRate fits the bottleneck's rate: the median of the capacity
// estimates, or the fastest TCP test as a lower bound.
func (f *Fit) fitRate(c Campaign, w way) {
	var caps, spread []float64
	for _, s := range c.Capacity {
		if w.is(s.From, s.To) && s.BPS > 0 {
			caps = append(caps, s.BPS)
			spread = append(spread, (s.High-s.Low)/2)
		}
	}
	if len(caps) > 0 {
		m := median(caps)
		_, sd := meanSD(caps)
		// The median's standard error, and never tighter than the trains'
		// own spread over their number, nor than 1%.
		half := max(1.96*1.2533*sd/math.Sqrt(float64(len(caps))), median(spread)/math.Sqrt(float64(len(caps))), 0.01*m)
		f.RateBPS = m
		f.set(KeyRate, Estimate{Value: m, Low: m - half, High: m + half, Samples: len(caps),
			Evidence: fmt.Sprintf("median of %d capacity estimates (packet-train dispersion, measure capacity)", len(caps))})
		return
	}
	best := 0.0
	n := 0
	for _, s := range c.Throughput {
		if w.is(s.From, s.To) {
			best, n = max(best, s.BPS), n+1
		}
	}
	if best > 0 {
		f.RateBPS = best
		f.set(KeyRate, Estimate{Value: best, Low: best, Samples: n, AtLeast: true,
			Evidence: fmt.Sprintf("no capacity estimate: the fastest of %d TCP tests, a lower bound", n)})
		f.unknown(KeyRate, "no capacity estimate", "the fastest TCP test's "+units.Rate(best).String()+" (a lower bound)")
		return
	}
	f.RateBPS = DefaultRateBPS
	f.set(KeyRate, Estimate{Value: DefaultRateBPS, Low: DefaultRateBPS, High: DefaultRateBPS, Default: true, Evidence: "no capacity estimate and no TCP test: the default"})
	f.unknown(KeyRate, "no capacity estimate and no TCP test", units.Rate(DefaultRateBPS).String())
}

// fitMTU takes the smallest MTU known of the direction.
func (f *Fit) fitMTU(c Campaign, w way) {
	var src string
	for _, m := range c.MTUs {
		if w.is(m.From, m.To) && m.Bytes > 0 && (f.MTU == 0 || m.Bytes < f.MTU) {
			f.MTU, src = m.Bytes, m.Source
		}
	}
	if f.MTU == 0 {
		f.MTU = DefaultMTU
		f.set(KeyMTU, Estimate{Value: DefaultMTU, Low: DefaultMTU, High: DefaultMTU, Default: true, Evidence: "not measured: the default"})
		f.unknown(KeyMTU, "no MTU was measured", "1500")
		return
	}
	f.MTU = min(max(f.MTU, minMTU), 9000)
	f.set(KeyMTU, Estimate{Value: float64(f.MTU), Low: float64(f.MTU), High: float64(f.MTU), Samples: 1, Evidence: src})
}

// fitQueue fits the bottleneck queue from the loads: the delay a load
// adds to the direction with the queue full, times the rate. A load
// fills it when a TCP one loses (at the point of loss), or a UDP one
// sends more than gets through and its delays stop growing; else the
// queue is at least what the load added.
func (f *Fit) fitQueue(c Campaign, w way, rho, rttS float64) {
	var qs, los, his []float64
	atLeast, n := false, 0
	for _, l := range c.Loads {
		if !w.is(l.LoadFrom, l.LoadTo) {
			continue
		}
		before, during, ok := loadedDelays(l, w, rho)
		if !ok {
			continue
		}
		// The peak's jitter is not the queue's.
		base := quantile(before, (1-rho)/2) + f.JitterS
		q := func(d float64) float64 { return max(0, d-base) * f.RateBPS / 8 }
		qs, los, his = append(qs, q(quantile(during, 0.99))), append(los, q(quantile(during, 0.9))), append(his, q(quantile(during, 1)))
		n += len(during)
		added := make([]float64, len(during))
		for k, d := range during {
			added[k] = d - base
		}
		full := !l.UDP && (l.Retransmits > 0 || anyLost(l.During.Probes)) || l.Overloaded(f.Loss) && plateaued(added, f.JitterS)
		atLeast = atLeast || !full
	}
	bdp := f.RateBPS * rttS / 8
	if len(qs) == 0 {
		f.QueueBytes = defaultQueue(f.RateBPS, rttS/2, f.MTU)
		f.set(KeyQueue, Estimate{Value: float64(f.QueueBytes), Default: true, Evidence: "no loaded test: the scenario's default queue (one BDP, at least 100 packets and 10 ms)"})
		f.unknown(KeyQueue, "no loaded test of this direction", "the scenario's default, "+units.Size(f.QueueBytes).String())
		f.QueueBDP = float64(f.QueueBytes) / max(bdp, 1)
		return
	}
	rate := f.Evidence[KeyRate]
	rel := func(bound float64) float64 { return bound / max(rate.Value, 1) }
	e := Estimate{Value: median(qs), Low: median(los) * min(1, rel(rate.Low)), High: median(his) * max(1, rel(rate.High)), Samples: n,
		Evidence: fmt.Sprintf("the delay %d loads added to %s at their peak (p99 of %d probes; p90-max as the interval), times the rate", len(qs), w, n)}
	if atLeast {
		e.AtLeast, e.High = true, 0
		e.Evidence += "; no load filled it, so the queue is at least this"
		f.unknown(KeyQueue, "no load filled the queue", "the largest delay a load added (a lower bound)")
	}
	f.QueueBytes = int64(math.Round(e.Value))
	if min1 := int64(f.MTU); f.QueueBytes < min1 {
		f.QueueBytes = min1
		e.Evidence += fmt.Sprintf("; raised to one MTU (%d bytes), the scenario's least queue", min1)
	}
	f.QueueBDP = float64(f.QueueBytes) / max(bdp, 1)
	switch {
	case f.QueueBDP > 20:
		e.Evidence += fmt.Sprintf("; %.0f BDP: a very large buffer (bufferbloat), or the load was not alone", f.QueueBDP)
	case f.QueueBDP < 0.05:
		e.Evidence += fmt.Sprintf("; %.3f BDP: a very small buffer, or the load did not fill it", f.QueueBDP)
	}
	f.set(KeyQueue, e)
}

// plateaued says the delays a load added (in seconds, in the order sent)
// stopped growing: the median of their last fifth is within twice the
// jitter, or 5%, of the fifth's before (a queue still filling at the end
// of its load was not full).
func plateaued(added []float64, jitterS float64) bool {
	k := len(added) / 5
	if k < 3 {
		return false
	}
	last, before := median(added[len(added)-k:]), median(added[len(added)-2*k:len(added)-k])
	return last-before <= max(2*jitterS, 0.05*before)
}

func anyLost(ps []Probe) bool {
	return slices.ContainsFunc(ps, func(p Probe) bool { return p.Lost })
}

// loadedDelays are the delays of the load's direction before and during
// it, in seconds: one-way where the probes have them (the clocks' offset
// drops out of the difference), round trips otherwise.
func loadedDelays(l LoadTest, w way, rho float64) (before, during []float64, ok bool) {
	pick := func(r ProbeRound) []float64 {
		fwd := w.is(r.From, r.To)
		if !fwd && !w.is(r.To, r.From) {
			return nil
		}
		oneWay := slices.ContainsFunc(r.Probes, func(p Probe) bool { return p.Forward != 0 || p.Back != 0 })
		var out []float64
		for _, p := range r.Probes {
			switch {
			case p.Lost:
			case !oneWay:
				out = append(out, p.RTT.Seconds())
			case fwd:
				out = append(out, p.Forward.Seconds())
			default:
				out = append(out, p.Back.Seconds())
			}
		}
		return out
	}
	before, during = pick(l.Before), pick(l.During)
	return before, during, len(before) >= 5 && len(during) >= 5
}
