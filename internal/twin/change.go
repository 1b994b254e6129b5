package twin

import (
	"container/heap"
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

// Binary segmentation's bounds. Each side of a step holds at least
// minSide values, and a minShare-th of the series: a level must persist
// (in three days of 30 s summaries each way, about 20 minutes). The
// values nearest a step (persistence each side, or a side's least if
// more) must differ by spreads times their robust spread: jitter does
// not pass. At
// most maxDepth rounds of splits are made and the latest maxSteps steps
// kept: the twin describes the part after the last one.
const (
	minSide     = 2
	minShare    = 200
	persistence = 10
	spreads     = 3
	maxDepth    = 4
	maxSteps    = 8
)

// steps finds where a series changes level, by binary segmentation: the
// split that leaves the least absolute deviation from each side's median,
// if significant says its two sides differ and the values nearest it
// differ beyond their spread, then each side again. It returns the
// indices that begin a new level, in order. A split's scan takes
// O(n log n).
func steps(vs []float64, significant func(a, b []float64) bool) []int {
	side := max(minSide, len(vs)/minShare)
	near := max(side, persistence)
	var out []int
	var split func(lo, hi, depth int)
	split = func(lo, hi, depth int) {
		if depth == maxDepth {
			return
		}
		at := bestSplit(vs[lo:hi], side)
		if at < 0 {
			return
		}
		at += lo
		if !significant(vs[lo:at], vs[at:hi]) || !apart(vs[max(lo, at-near):at], vs[at:min(hi, at+near)]) {
			return
		}
		split(lo, at, depth+1)
		out = append(out, at)
		split(at, hi, depth+1)
	}
	split(0, len(vs), 0)
	return out[max(0, len(out)-maxSteps):]
}

// bestSplit is the k, with at least side values each side of it, that
// leaves the least sum of vs[:k]'s and vs[k:]'s absolute deviations from
// their medians (-1 if there is none): running medians, each side's sums
// for every k in one pass.
func bestSplit(vs []float64, side int) int {
	n := len(vs)
	if n < 2*side {
		return -1
	}
	left := make([]float64, n+1) // left[k] is vs[:k]'s, right[k] vs[k:]'s
	right := make([]float64, n+1)
	var h halves
	for k, v := range vs {
		h.add(v)
		left[k+1] = h.deviation()
	}
	h = halves{}
	for k := n - 1; k >= 0; k-- {
		h.add(vs[k])
		right[k] = h.deviation()
	}
	// The first of equal sums, as the running sums round them.
	best, at := 0.0, -1
	for k := side; k <= n-side; k++ {
		if c := left[k] + right[k]; at < 0 || c < best-1e-9*best {
			best, at = c, k
		}
	}
	return at
}

// apart says the values each side of a step differ by more than spreads
// times their robust spread: the step is not noise.
func apart(a, b []float64) bool {
	return math.Abs(median(a)-median(b)) > spreads*max(spread(a), spread(b))
}

// spread is the robust standard deviation of vs: 1.4826 x the median
// absolute deviation from their median.
func spread(vs []float64) float64 {
	m := median(vs)
	d := make([]float64, len(vs))
	for i, v := range vs {
		d[i] = math.Abs(v - m)
	}
	return 1.4826 * median(d)
}

// halves is a running median: the lower half of the values added in a
// max-heap, the upper half in a min-heap, and each half's sum.
type halves struct {
	lo, hi       floatHeap // lo holds the values negated
	sumLo, sumHi float64
}

// add adds v in O(log n); the lower half keeps as many values as the
// upper or one more.
func (h *halves) add(v float64) {
	if len(h.lo) == 0 || v <= -h.lo[0] {
		heap.Push(&h.lo, -v)
		h.sumLo += v
	} else {
		heap.Push(&h.hi, v)
		h.sumHi += v
	}
	switch {
	case len(h.lo) > len(h.hi)+1:
		v := -heap.Pop(&h.lo).(float64)
		h.sumLo -= v
		heap.Push(&h.hi, v)
		h.sumHi += v
	case len(h.hi) > len(h.lo):
		v := heap.Pop(&h.hi).(float64)
		h.sumHi -= v
		heap.Push(&h.lo, -v)
		h.sumLo += v
	}
}

// deviation is the sum of the values' absolute deviations from their
// median (the lower half's greatest: any value between the middle two
// gives the same sum).
func (h *halves) deviation() float64 {
	if len(h.lo) == 0 {
		return 0
	}
	m := -h.lo[0]
	return max(0, m*float64(len(h.lo))-h.sumLo+h.sumHi-m*float64(len(h.hi)))
}

// floatHeap is a min-heap of float64 (container/heap's).
type floatHeap []float64

func (f floatHeap) Len() int           { return len(f) }
func (f floatHeap) Less(i, j int) bool { return f[i] < f[j] }
func (f floatHeap) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *floatHeap) Push(x any)        { *f = append(*f, x.(float64)) }
func (f *floatHeap) Pop() any {
	old := *f
	x := old[len(old)-1]
	*f = old[:len(old)-1]
	return x
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
