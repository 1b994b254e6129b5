package twin

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// winProbes is how many received probes a window of a round holds: the
// unit the delay fit and the route-change detector read.
const winProbes = 50

// window is a stretch of one round of probes (or one archived summary),
// its delays in seconds, the ways indexed as the twin's (0 forward, 1
// reverse).
type window struct {
	at time.Time
	n  int
	// minRTT is the least round trip.
	minRTT float64
	// centre is each way's centre of the probes that did not queue behind
	// cross traffic, least its least: offset by the clocks unless synced.
	centre, least [2]float64
	// oneWay says centre and least hold; synced that they are true
	// one-way delays, within bound.
	oneWay, synced bool
	bound          float64
	// jitter is each way's half-width, where only a summary is known.
	jitter [2]float64
	// bits is a probe's size on the wire (0 unknown): its time at each
	// way's rate is part of the delays.
	bits float64
}

// rttCentre is the window's round trip centre.
func (w window) rttCentre() float64 {
	if w.oneWay {
		return w.centre[0] + w.centre[1]
	}
	return w.minRTT + w.jitter[0] + w.jitter[1]
}

// half is way i's jitter half-width.
func (w window) half(i int) float64 {
	if w.oneWay {
		return w.centre[i] - w.least[i]
	}
	return w.jitter[i]
}

// windows splits the unloaded rounds of the campaign (its probes, and the
// loads' probes before them) into windows, and adds its summaries. rho is
// each way's share of cross traffic: the probes that did not queue behind
// it are about 1-rho of them, and the centre of their uniform jitter is
// the (1-rho)/2 quantile.
func windows(c Campaign, ways [2]way, rho [2]float64) []window {
	var out []window
	rounds := slices.Clone(c.Probes)
	for _, l := range c.Loads {
		rounds = append(rounds, l.Before)
	}
	for _, r := range rounds {
		var i0 int // the index of the way the probes go out on
		switch {
		case ways[0].is(r.From, r.To):
			i0 = 0
		case ways[1].is(r.From, r.To):
			i0 = 1
		default:
			continue
		}
		var got []Probe
		for _, p := range r.Probes {
			if !p.Lost {
				got = append(got, p)
			}
		}
		for len(got) > 0 {
			k := min(len(got), winProbes)
			if len(got)-k < winProbes/2 {
				k = len(got)
			}
			out = append(out, windowOf(got[:k], r, i0, rho))
			got = got[k:]
		}
	}
	for _, s := range c.Summaries {
		if s.MinRTT <= 0 || !ways[0].is(s.From, s.To) && !ways[1].is(s.From, s.To) {
			continue
		}
		// The mean difference of consecutive round trips of two uniform
		// jitters of half-width J each way is 14/15 J.
		j := s.Jitter.Seconds() * 15 / 14 / 2
		w := window{at: s.At, n: 1, minRTT: s.MinRTT.Seconds(), jitter: [2]float64{j, j}}
		if f, b := s.OWDForward.Seconds(), s.OWDBack.Seconds(); f > 0 && b > 0 {
			// The medians' ratio splits the round trip's centre.
			i0 := 0
			if ways[1].is(s.From, s.To) {
				i0 = 1
			}
			centre := w.minRTT + 2*j
			w.centre[i0], w.centre[1-i0] = centre*f/(f+b), centre*b/(f+b)
			w.least[i0], w.least[1-i0] = w.centre[i0]-j, w.centre[1-i0]-j
			w.oneWay, w.synced = true, true
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b window) int { return a.at.Compare(b.at) })
	return out
}

// windowOf summarises received probes of round r, which go out on way i0.
func windowOf(ps []Probe, r ProbeRound, i0 int, rho [2]float64) window {
	w := window{at: ps[0].Sent, n: len(ps), synced: r.Synchronised, bound: r.Bound.Seconds(), bits: float64(8 * (r.Size + headerBytes)), minRTT: math.Inf(1)}
	var ways [2][]float64
	for _, p := range ps {
		w.minRTT = min(w.minRTT, p.RTT.Seconds())
		ways[i0] = append(ways[i0], p.Forward.Seconds())
		ways[1-i0] = append(ways[1-i0], p.Back.Seconds())
		w.oneWay = w.oneWay || p.Forward != 0 || p.Back != 0
	}
	for i := range ways {
		w.centre[i] = quantile(ways[i], (1-rho[i])/2)
		w.least[i] = quantile(ways[i], 0)
	}
	return w
}

// fitDelay fits both ways' base delay and jitter: the centres of the
// probes' unqueued delays, less the time the probe takes at the rate.
// Without synchronised clocks the round trip is split evenly, and it
// says so.
func fitDelay(c Campaign, ways [2]way, fits [2]*Fit, rho [2]float64) (notes []string) {
	ws := windows(c, ways, rho)
	if len(ws) == 0 {
		return fitDelayDefault(fits)
	}
	wire := func(w window, i int) float64 { return w.bits / fits[i].RateBPS }
	var rtt, jit [2][]weighted
	var rttAll []weighted
	synced, n, bound := true, 0, 0.0
	for _, w := range ws {
		n += w.n
		synced = synced && w.synced
		bound = max(bound, w.bound)
		rttAll = append(rttAll, weighted{w.rttCentre() - wire(w, 0) - wire(w, 1), float64(w.n)})
		for i := range 2 {
			rtt[i] = append(rtt[i], weighted{w.centre[i] - wire(w, i), float64(w.n)})
			jit[i] = append(jit[i], weighted{w.half(i), float64(w.n)})
		}
	}
	base := weightedMedian(rttAll)
	spread := windowSpread(rttAll)
	src := fmt.Sprintf("%d probes in %d windows", n, len(ws))
	for i, f := range fits {
		f.JitterS = max(0, weightedMedian(jit[i]))
		f.set(KeyJitter, Estimate{Value: f.JitterS, Low: 0, High: 2 * f.JitterS, Samples: n,
			Evidence: fmt.Sprintf("half-width of the unqueued %s delays (centre less least), median of %s", ways[i], src)})
		e := Estimate{Samples: n}
		if synced {
			d := weightedMedian(rtt[i])
			s := windowSpread(rtt[i])
			e.Value, e.Low, e.High = d, d-s-bound, d+s+bound
			e.Evidence = fmt.Sprintf("centre of the unqueued one-way delays of %s (synchronised clocks, within %.3g ms), less the probe's time at the rate", src, bound*1e3)
		} else {
			d := base / 2
			e.Value, e.Low, e.High = d, d-spread/2, d+spread/2
			e.Evidence = fmt.Sprintf("half the centre of the unqueued round trips of %s, less the probe's time at the rate: the clocks are not synchronised, so the round trip (%.3f ms) is split evenly", src, base*1e3)
		}
		f.DelayS = max(0, e.Value)
		f.set(KeyDelay, e)
		if synced {
			f.set(KeySplit, Estimate{Value: 1, Samples: n, Evidence: "one-way delays of synchronised clocks"})
		} else {
			f.unknown(KeySplit, "the clocks are not synchronised: one-way delays are offset by their difference", "the round trip split evenly")
		}
	}
	if !synced {
		notes = append(notes, fmt.Sprintf("the base round trip (%.3f ms) is split evenly between the ways: the hosts' clocks are not synchronised, so the true split is unknown", base*1e3))
	}
	return notes
}

// windowSpread is the 95% interval's half-width of the weighted median of
// windows' values: 1.96 x 1.4826 x their median absolute deviation over
// the root of their number, and at least a microsecond.
func windowSpread(ws []weighted) float64 {
	m := weightedMedian(ws)
	dev := make([]weighted, len(ws))
	for i, w := range ws {
		dev[i] = weighted{math.Abs(w.v - m), w.w}
	}
	return max(1e-6, 1.96*1.4826*weightedMedian(dev)/math.Sqrt(float64(len(ws))))
}

// fitDelayDefault sets the delays without probes: the default round trip.
func fitDelayDefault(fits [2]*Fit) []string {
	d := DefaultRTT.Seconds() / 2
	for _, f := range fits {
		f.DelayS = d
		f.set(KeyDelay, Estimate{Value: d, Low: d, High: d, Default: true, Evidence: "no probes: half the default round trip"})
		f.unknown(KeyDelay, "no probes", fmt.Sprintf("half the default round trip, %g ms", d*1e3))
		f.set(KeyJitter, Estimate{Default: true, Evidence: "no probes: none"})
		f.unknown(KeyJitter, "no probes", "none")
		f.unknown(KeySplit, "no probes", "the round trip split evenly")
	}
	return []string{"no probes: the delays are the default"}
}
