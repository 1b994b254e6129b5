package twin

import (
	"maps"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
)

// The monitoring service's metric names a history holds (monitor/core's
// Name constants, which the tests compare these with; twin does not
// import the service).
const (
	metricRTTMin      = "rtt_min_seconds"
	metricLoss        = "loss_ratio"
	metricLossForward = "loss_forward_ratio"
	metricLossBack    = "loss_back_ratio"
	metricJitter      = "jitter_seconds"
	metricOWDForward  = "owd_forward_seconds"
	metricOWDBack     = "owd_back_seconds"
	metricThroughput  = "throughput_bits_per_second"
)

// HistoryOptions choose the part of a path's history a twin is fitted
// from.
type HistoryOptions struct {
	// From and To bound the span (either zero: unbounded).
	From, To time.Time
	// Limit bounds the probe summaries ReadHistory reads (0: no bound; it
	// needs a From). FromHistory takes every point it is given.
	Limit int
	// Family is the address family fitted: "ipv4" or "ipv6" (a test run
	// once per family), or "" for the one of the history's families
	// (theirs, and that of the tests run once) with the most probe
	// summaries.
	Family string
}

// FromHistory builds the campaign of the path between a and b from an
// archive's points (wanlab serve's history, SeriesStore.Points of both
// ways) between o.From and o.To, of one address family (o.Family). A
// probe test's points of one family and time are one summary; throughput,
// capacity and available bandwidth points are samples, of the family
// fitted or of none (a test run once, a measure run's estimate). An
// archive keeps no per-probe series and no loaded test, so a twin of it
// names the loss model and the queue as unknown.
func FromHistory(a, b string, points []archive.Point, o HistoryOptions) Campaign {
	c := Campaign{A: a, B: b}
	type key struct {
		src, dst, test, family string
		t                      time.Time
	}
	sums := map[key]*ProbeSummary{}
	var order []key
	var rates []archive.Point
	for _, p := range points {
		if !(p.Src == a && p.Dst == b || p.Src == b && p.Dst == a) ||
			!o.From.IsZero() && p.T.Before(o.From) || !o.To.IsZero() && p.T.After(o.To) {
			continue
		}
		switch p.Metric {
		case results.BandwidthCapacity, results.BandwidthAvailable, metricThroughput:
			rates = append(rates, p)
			continue
		}
		k := key{p.Src, p.Dst, p.Test, p.Family, p.T}
		s := sums[k]
		if s == nil {
			s = &ProbeSummary{From: p.Src, To: p.Dst, At: p.T, Loss: -1, LossForward: -1, LossBack: -1}
			sums[k] = s
			order = append(order, k)
		}
		d := time.Duration(p.Value * float64(time.Second))
		switch p.Metric {
		case metricRTTMin:
			s.MinRTT = d
		case metricJitter:
			s.Jitter = d
		case metricOWDForward:
			s.OWDForward = d
		case metricOWDBack:
			s.OWDBack = d
		case metricLoss:
			s.Loss = p.Value
		case metricLossForward:
			s.LossForward = p.Value
		case metricLossBack:
			s.LossBack = p.Value
		}
	}
	// The family fitted: asked for, or the one with the most summaries
	// (with none, rates; of a tie, the first by name).
	count := map[string]int{}
	for _, k := range order {
		if s := sums[k]; s.MinRTT > 0 || s.Loss >= 0 {
			count[k.family]++
		}
	}
	if len(count) == 0 {
		for _, p := range rates {
			count[p.Family]++
		}
	}
	c.Family = o.Family
	if c.Family == "" {
		for _, f := range slices.Sorted(maps.Keys(count)) {
			if count[f] > count[c.Family] {
				c.Family = f
			}
		}
	}
	for _, k := range order {
		if s := sums[k]; k.family == c.Family && (s.MinRTT > 0 || s.Loss >= 0) {
			c.Summaries = append(c.Summaries, *s)
		}
	}
	slices.SortStableFunc(c.Summaries, func(x, y ProbeSummary) int { return x.At.Compare(y.At) })
	for _, p := range rates {
		if p.Family != c.Family && p.Family != "" {
			continue
		}
		rate := RateSample{From: p.Src, To: p.Dst, At: p.T, BPS: p.Value, Low: p.Value, High: p.Value, N: 1}
		switch p.Metric {
		case results.BandwidthCapacity:
			c.Capacity = append(c.Capacity, rate)
		case results.BandwidthAvailable:
			c.Available = append(c.Available, rate)
		case metricThroughput:
			c.Throughput = append(c.Throughput, ThroughputSample{From: p.Src, To: p.Dst, At: p.T, BPS: p.Value})
		}
	}
	return c
}
