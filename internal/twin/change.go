package twin

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// detectChanges finds what changed during the campaign: a route change
// (the least round trip of the probes' windows steps to another level)
// and a rate step (a direction's capacity estimates fall in two groups in
// time). Each is where the latest stable part may begin.
func detectChanges(c Campaign) []Change {
	ways := [2]way{{c.A, c.B}, {c.B, c.A}}
	var out []Change
	ws := windows(c, ways, [2]float64{})
	rtts := make([]float64, len(ws))
	for i, w := range ws {
		rtts[i] = w.minRTT
	}
	for _, k := range steps(rtts, routeStep) {
		a, b := median(rtts[:k]), median(rtts[k:])
		out = append(out, Change{Kind: RouteChange, At: ws[k].at, From: c.A, To: c.B, Before: a, After: b,
			Evidence: fmt.Sprintf("the least round trip of the probes' windows went from %.3f ms to %.3f ms (%d windows before, %d after)", a*1e3, b*1e3, k, len(ws)-k)})
	}
	for _, w := range ways {
		var ss []RateSample
		for _, s := range c.Capacity {
			if w.is(s.From, s.To) && s.BPS > 0 {
				ss = append(ss, s)
			}
		}
		slices.SortFunc(ss, func(a, b RateSample) int { return a.At.Compare(b.At) })
		vs := make([]float64, len(ss))
		for i, s := range ss {
			vs[i] = s.BPS
		}
		for _, k := range steps(vs, rateStep) {
			a, b := median(vs[:k]), median(vs[k:])
			out = append(out, Change{Kind: RateStep, At: ss[k].At, From: w.from, To: w.to, Before: a, After: b,
				Evidence: fmt.Sprintf("the capacity estimates went from %s to %s (%d before, %d after)", units.Rate(a), units.Rate(b), k, len(vs)-k)})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return a.At.Compare(b.At) })
	return out
}

// minSide is how many values each side of a step needs.
const minSide = 2

// steps finds where a series changes level, by binary segmentation: the
// split that leaves the least absolute deviation from each side's median,
// if significant says its two sides differ, then each side again. It
// returns the indices that begin a new level, in order.
func steps(vs []float64, significant func(a, b []float64) bool) []int {
	var out []int
	var split func(lo, hi int)
	split = func(lo, hi int) {
		best, at := math.Inf(1), -1
		for k := lo + minSide; k <= hi-minSide; k++ {
			if c := deviation(vs[lo:k]) + deviation(vs[k:hi]); c < best {
				best, at = c, k
			}
		}
		if at < 0 || !significant(vs[lo:at], vs[at:hi]) {
			return
		}
		split(lo, at)
		out = append(out, at)
		split(at, hi)
	}
	split(0, len(vs))
	return out
}

// deviation is the sum of vs's absolute deviations from their median.
func deviation(vs []float64) float64 {
	m, sum := median(vs), 0.0
	for _, v := range vs {
		sum += math.Abs(v - m)
	}
	return sum
}

// noise is the standard deviation of a series' values about its levels,
// from its consecutive differences (which a step of level hardly moves):
// 1.4826 x their median absolute value / sqrt 2.
func noise(vs []float64) float64 {
	if len(vs) < 2 {
		return 0
	}
	d := make([]float64, len(vs)-1)
	for i := range d {
		d[i] = math.Abs(vs[i+1] - vs[i])
	}
	return 1.4826 * median(d) / math.Sqrt2
}

// routeStep says two runs of least round trips are two routes: they
// differ by half a millisecond and 3%, and by five times their noise.
func routeStep(a, b []float64) bool {
	ma, mb := median(a), median(b)
	d := math.Abs(ma - mb)
	return d > max(routeStepMin.Seconds(), 0.03*min(ma, mb), 5*noise(slices.Concat(a, b)))
}

// routeStepMin is the least step of the round trip taken for a route change.
const routeStepMin = 500 * time.Microsecond

// rateStep says two runs of capacity estimates are two rates: they differ
// by 10% and do not overlap.
func rateStep(a, b []float64) bool {
	ma, mb := median(a), median(b)
	if math.Abs(ma-mb) <= 0.1*min(ma, mb) {
		return false
	}
	lo, hi := a, b
	if ma > mb {
		lo, hi = b, a
	}
	return slices.Max(lo) < slices.Min(hi)
}

// hopChanges says where a direction's hop list changed from one trace to
// the next (a hop that did not answer matches any): a route change that
// the round trip may not show. They are noted, not cut at, since a
// load-balanced path lists other hops from one trace to the next.
func hopChanges(c Campaign) []string {
	var out []string
	for _, w := range [2]way{{c.A, c.B}, {c.B, c.A}} {
		var ts []Trace
		for _, t := range c.Traces {
			if w.is(t.From, t.To) && t.Reached {
				ts = append(ts, t)
			}
		}
		slices.SortFunc(ts, func(a, b Trace) int { return a.At.Compare(b.At) })
		for i := 1; i < len(ts); i++ {
			if !sameHops(ts[i-1].Hops, ts[i].Hops) {
				out = append(out, fmt.Sprintf("the hops of %s changed between the traces at %s and %s (%d hops, then %d)",
					w, ts[i-1].At.UTC().Format(time.RFC3339), ts[i].At.UTC().Format(time.RFC3339), len(ts[i-1].Hops), len(ts[i].Hops)))
			}
		}
	}
	return out
}

// sameHops says two hop lists agree where both hops answered.
func sameHops(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && a[i] != "*" && b[i] != "*" {
			return false
		}
	}
	return true
}
