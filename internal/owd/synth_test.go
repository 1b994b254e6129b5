package owd

import (
	"math"
	"math/rand/v2"
	"time"
)

// truth is a synthetic path with known delays and clocks: probes at rate
// a second, summarised every period, as the monitor's probes are.
type truth struct {
	seed uint64
	// base are the true lowest delays, forward and back (ms).
	base [2]float64
	// steps are the changes of each direction's true delay.
	steps [2][]change
	// offset is the clocks' offset at 0 (ms: the reflector's clock less
	// the prober's), drifting at ppm and stepping at clockSteps.
	offset, ppm float64
	clockSteps  []change
	// jitter is the mean of each probe's exponential extra delay (ms);
	// burstEvery the mean time between queueing bursts (s, 0: none);
	// spikes the share of probes delayed by up to 30 ms; loss the share
	// of probes lost.
	jitter, burstEvery, spikes, loss float64
}

// change is a step of size (ms) at time at (s).
type change struct{ at, size float64 }

// burst is a queue that builds for 80% of its time to its peak (ms), then
// drains.
type burst struct{ start, dur, peak float64 }

func (b burst) at(t float64) float64 {
	x := (t - b.start) / b.dur
	switch {
	case x < 0 || x > 1:
		return 0
	case x < 0.8:
		return b.peak * x / 0.8
	}
	return b.peak * (1 - x) / 0.2
}

var epoch = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

const (
	rate   = 10.0             // probes a second
	period = 10 * time.Second // the summaries'
)

// run simulates n summaries and calls each with every one's end (the last
// probe's time) and its forward and back samples (the same probes').
func (tr truth) run(n int, each func(i int, end time.Time, fwd, back []Sample)) {
	rng := rand.New(rand.NewPCG(tr.seed, 37))
	horizon := float64(n) * period.Seconds()
	var bursts [2][]burst
	for dir := range bursts {
		for t := 0.0; tr.burstEvery > 0; {
			t += rng.ExpFloat64() * tr.burstEvery
			if t > horizon {
				break
			}
			bursts[dir] = append(bursts[dir], burst{start: t, dur: 0.5 + 3.5*rng.Float64(), peak: 2 + 18*rng.Float64()})
		}
	}
	level := func(steps []change, t float64) float64 {
		v := 0.0
		for _, s := range steps {
			if t >= s.at {
				v += s.size
			}
		}
		return v
	}
	extra := func(dir int, t float64) float64 {
		q := rng.ExpFloat64() * tr.jitter
		for _, b := range bursts[dir] {
			q += b.at(t)
		}
		if rng.Float64() < tr.spikes {
			q += 30 * rng.Float64()
		}
		return q
	}
	per := int(rate * period.Seconds())
	for i := range n {
		var fwd, back []Sample
		for k := range per {
			t := float64(i*per+k) / rate
			if rng.Float64() < tr.loss {
				continue
			}
			theta := tr.offset + tr.ppm*1e-3*t + level(tr.clockSteps, t)
			f := tr.base[0] + level(tr.steps[0], t) + extra(0, t)
			b := tr.base[1] + level(tr.steps[1], t+f/1e3) + extra(1, t+f/1e3)
			sent := epoch.Add(sec(t))
			fwd = append(fwd, Sample{Sent: sent, Delay: msDur(f + theta)})
			// The reflector stamps its reply by its own clock.
			back = append(back, Sample{Sent: sent.Add(msDur(f + theta)), Delay: msDur(b - theta)})
		}
		each(i, epoch.Add(sec(float64((i+1)*per-1)/rate)), fwd, back)
	}
}

func sec(s float64) time.Duration   { return time.Duration(math.Round(s * 1e9)) }
func msDur(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }

// loaded is a loaded path's noise: jitter, a queueing burst every 30 s on
// average, a spike in 500 probes, 1% loss.
func loaded(seed uint64) truth {
	return truth{seed: seed, base: [2]float64{12, 17}, jitter: 0.3, burstEvery: 30, spikes: 0.002, loss: 0.01}
}
