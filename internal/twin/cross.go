package twin

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// Cross traffic's patterns, as a scenario names them.
const (
	Poisson = "poisson"
	OnOff   = "onoff"
)

// fitCross fits the cross traffic on the bottleneck: what the capacity
// has that the available bandwidth does not, over time. Its mean is
// well determined; its pattern only at the scale of the samples' spacing:
// two levels far apart (idle, and busy at a rate) make onoff, anything
// else poisson (constant, poisson and flows differ within a packet train,
// which available-bandwidth samples do not resolve).
func (f *Fit) fitCross(c Campaign, w way) {
	type sample struct {
		at   time.Time
		v    float64
		half float64
		// least is the cross traffic the sample's upper bound of the
		// available bandwidth leaves: what it surely saw.
		least float64
	}
	var ss []sample
	for _, s := range c.Available {
		if w.is(s.From, s.To) && s.BPS >= 0 {
			high := max(s.High, s.BPS)
			ss = append(ss, sample{s.At, max(0, f.RateBPS-s.BPS), (s.High - s.Low) / 2, max(0, f.RateBPS-high)})
		}
	}
	over, overN := f.overloadCross(c, w)
	if len(ss) == 0 && overN == 0 {
		f.set(KeyCross, Estimate{Default: true, Evidence: "no available-bandwidth estimate and no load above the capacity: none assumed"})
		f.unknown(KeyCross, "no available-bandwidth estimate of this direction", "no cross traffic")
		return
	}
	slices.SortFunc(ss, func(a, b sample) int { return a.at.Compare(b.at) })
	vs, halves, leasts := make([]float64, len(ss)), make([]float64, len(ss)), make([]float64, len(ss))
	for i, s := range ss {
		vs[i], halves[i], leasts[i] = s.v, s.half, s.least
	}
	// A load above the capacity sees the cross traffic's mean over its
	// seconds, which for one level is the mean, and reads right where the
	// available-bandwidth trains cannot keep up with a fast path; two
	// levels (onoff) change over seconds, which the samples spread over
	// the campaign follow better than one load does.
	if overN > 0 && !trainsAgree(vs, over, f.RateBPS) {
		f.fitCrossOverload(over, overN)
		return
	}
	mean, sd := meanSD(vs)
	least, _ := meanSD(leasts)
	n := float64(len(vs))
	half := max(1.96*sd/math.Sqrt(n), median(halves)/math.Sqrt(n))
	e := Estimate{Value: mean, Low: max(0, mean-half), High: min(f.RateBPS, mean+half), Samples: len(vs),
		Evidence: fmt.Sprintf("capacity less the available bandwidth (pathload's method, measure available), mean of %d estimates", len(vs))}
	f.CrossBPS = mean
	// The search for the available bandwidth stops a step short of the
	// capacity on a clean path, and a loss now and then reads as a rising
	// trend: what its estimates' upper bounds leave is what was surely seen.
	if mean < 0.01*f.RateBPS || least < 0.01*f.RateBPS {
		e.Evidence += fmt.Sprintf(": none to speak of (the estimates' upper bounds leave %s on average)", units.Rate(least))
		e.Value, e.Low = 0, 0
		f.CrossBPS = 0
		f.set(KeyCross, e)
		return
	}
	f.Cross = &Cross{Pattern: Poisson, RateBPS: mean}
	if on, rate, ok := twoLevels(vs, f.RateBPS); ok {
		// The mean run of busy samples and of idle ones, in time.
		gap := ss[len(ss)-1].at.Sub(ss[0].at) / time.Duration(len(ss)-1)
		frac := float64(len(on)) / n
		f.Cross = &Cross{Pattern: OnOff, RateBPS: rate, On: time.Second, Off: time.Duration(float64(time.Second) * (1 - frac) / frac)}
		e.Evidence += fmt.Sprintf("; two levels: %d of %d samples saw %s, the rest next to none (onoff; samples %s apart do not resolve its periods, whose ratio is kept)",
			len(on), len(vs), units.Rate(rate), gap.Round(time.Millisecond))
	} else {
		e.Evidence += fmt.Sprintf("; spread %s: one level (poisson, the scenario's default pattern)", units.Rate(sd))
	}
	f.set(KeyCross, e)
}

// twoLevels finds whether vs form two clusters, one next to nothing and
// one busy, far apart (by a fifth of the capacity) with at least two
// samples and a fifth of them each: on are the busy ones, rate their mean.
func twoLevels(vs []float64, capacity float64) (on []float64, rate float64, ok bool) {
	if len(vs) < 4 {
		return nil, 0, false
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	best, split := math.Inf(1), 0
	for k := 1; k < len(s); k++ {
		_, a := meanSD(s[:k])
		_, b := meanSD(s[k:])
		if ss := a*a*float64(k-1) + b*b*float64(len(s)-k-1); ss < best {
			best, split = ss, k
		}
	}
	low, high := s[:split], s[split:]
	lm, _ := meanSD(low)
	hm, _ := meanSD(high)
	least := max(2, (len(s)+4)/5)
	if len(low) < least || len(high) < least || lm > 0.1*capacity || hm-lm < 0.2*capacity || high[0]-low[len(low)-1] < 0.1*capacity {
		return nil, 0, false
	}
	return high, hm, true
}

// trainsAgree says the available-bandwidth samples vs show two levels
// (onoff, whose periods one load's seconds do not average) and the loads
// saw cross traffic over at their busy level or their mean, within 15% of
// the capacity. Two levels beside loads that saw next to none are trains
// reading short at random (a sender that cannot keep up with a fast
// path), not trusted for the pattern either.
func trainsAgree(vs []float64, over, capacity float64) bool {
	_, busy, two := twoLevels(vs, capacity)
	if !two {
		return false
	}
	mean, _ := meanSD(vs)
	return math.Abs(busy-over) <= 0.15*capacity || math.Abs(mean-over) <= 0.15*capacity
}

// overloadCross is the mean cross traffic the way's UDP loads above the
// capacity saw: the capacity less what got through, which the path's
// random loss had thinned (the cross traffic does not yield to the load,
// so the load gets the rest); n counts the loads.
func (f *Fit) overloadCross(c Campaign, w way) (mean float64, n int) {
	var sum float64
	for _, l := range c.Loads {
		if w.is(l.LoadFrom, l.LoadTo) && l.Overloaded(f.Loss) {
			sum, n = sum+max(0, f.RateBPS-l.Through(f.Loss)), n+1
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// overloadNone is the least cross traffic, over the capacity, that loads
// above it say is there: less is within the capacity estimate's error.
const overloadNone = 0.03

// fitCrossOverload fits the cross traffic, of one level, from n loads
// above the capacity that saw mean of it.
func (f *Fit) fitCrossOverload(mean float64, n int) {
	rate := f.Evidence[KeyRate]
	// The capacity's interval bounds the mean's.
	half := max(rate.High-rate.Value, rate.Value-rate.Low, 0.01*f.RateBPS)
	e := Estimate{Value: mean, Low: max(0, mean-half), High: min(f.RateBPS, mean+half), Samples: n,
		Evidence: fmt.Sprintf("the capacity less what %d UDP load(s) at %gx it got through (with the path's random loss put back): the cross traffic that does not yield", n, Overload)}
	if mean < overloadNone*f.RateBPS {
		e.Evidence += fmt.Sprintf(": none to speak of (under %g%% of the capacity, its estimate's error)", 100*overloadNone)
		e.Value, e.Low = 0, 0
		f.CrossBPS = 0
		f.set(KeyCross, e)
		return
	}
	f.CrossBPS = mean
	f.Cross = &Cross{Pattern: Poisson, RateBPS: mean}
	e.Evidence += "; poisson, the scenario's default pattern (no two levels in the available-bandwidth samples that the load agrees with)"
	f.set(KeyCross, e)
}
