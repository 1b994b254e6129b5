package twin

import (
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

// FromHistory builds the campaign of the path between a and b from an
// archive's points (wanlab serve's history, SeriesStore.Points of both
// ways) between from and to (either zero: unbounded). A probe test's
// points of one time are one summary; throughput, capacity and available
// bandwidth points are samples. An archive keeps no per-probe series and
// no loaded test, so a twin of it names the loss model and the queue as
// unknown.
func FromHistory(a, b string, points []archive.Point, from, to time.Time) Campaign {
	c := Campaign{A: a, B: b}
	type key struct {
		src, dst, test string
		t              time.Time
	}
	sums := map[key]*ProbeSummary{}
	var order []key
	for _, p := range points {
		if !(p.Src == a && p.Dst == b || p.Src == b && p.Dst == a) ||
			!from.IsZero() && p.T.Before(from) || !to.IsZero() && p.T.After(to) {
			continue
		}
		rate := RateSample{From: p.Src, To: p.Dst, At: p.T, BPS: p.Value, Low: p.Value, High: p.Value, N: 1}
		switch p.Metric {
		case results.BandwidthCapacity:
			c.Capacity = append(c.Capacity, rate)
			continue
		case results.BandwidthAvailable:
			c.Available = append(c.Available, rate)
			continue
		case metricThroughput:
			c.Throughput = append(c.Throughput, ThroughputSample{From: p.Src, To: p.Dst, At: p.T, BPS: p.Value})
			continue
		}
		k := key{p.Src, p.Dst, p.Test, p.T}
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
	for _, k := range order {
		if s := sums[k]; s.MinRTT > 0 || s.Loss >= 0 {
			c.Summaries = append(c.Summaries, *s)
		}
	}
	slices.SortStableFunc(c.Summaries, func(x, y ProbeSummary) int { return x.At.Compare(y.At) })
	return c
}
