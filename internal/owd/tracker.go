package owd

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/delay"
)

// bin is the lowest delay of a run of consecutive samples (its point),
// with the times of the run's first and last samples (s since the origin).
type bin struct {
	point
	start, end float64
}

// Tracker follows one direction's one-way delay, summary after summary.
// It is not safe for concurrent use.
type Tracker struct {
	cfg Config
	// capBins bounds window (Config.capacity).
	capBins int
	// origin is the first sample's time: times are seconds since it.
	origin  time.Time
	started bool
	// window are the bins the envelope is fitted over, oldest first;
	// pending the bins beyond the threshold in a row, all on side sign.
	window  []bin
	pending []bin
	sign    int
	// The fit over window: the envelope, a scale of its slope's error (ms
	// per s), the window's mean time, and its bins' heights over the
	// envelope (base: the median; spread: 1.4826 times their MAD, ms).
	fit          line
	fitOK        bool
	skewErr      float64
	mean         float64
	base, spread float64
	// load is how far the window's bins rise above base at loadQuantile.
	load float64
	// lastEnd is the end of the last bin judged (valid if judged).
	lastEnd float64
	judged  bool
	// change is the sum of the steps since the window started, changeVar
	// the sum of their uncertainties' squares (ms, ms²).
	change, changeVar float64
	// restarted is why the window restarted since the last report.
	restarted string
	// Scratch, of the window's capacity.
	pts, hull []point
	res       []float64
}

// New makes a Tracker, refusing a Config that makes no sense or holds too
// much (ErrConfig).
func New(cfg Config) (*Tracker, error) {
	if cfg.Confirm == 0 {
		cfg.Confirm = cfg.Bins
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	n := cfg.capacity()
	return &Tracker{cfg: cfg, capBins: n, window: make([]bin, 0, n), pending: make([]bin, 0, cfg.Confirm),
		pts: make([]point, 0, n), hull: make([]point, 0, n), res: make([]float64, 0, n)}, nil
}

// Observe takes one summary's samples (any order; lost probes left out)
// and reports the steps they confirm. A summary with fewer than
// MinBinSamples samples is skipped; samples no later than a bin already
// judged are dropped as late.
func (t *Tracker) Observe(samples []Sample) (Report, error) {
	if len(samples) > MaxSamples {
		return Report{}, fmt.Errorf("%w: %d samples, at most %d", ErrTooMany, len(samples), MaxSamples)
	}
	rep := Report{Restarted: t.restarted}
	t.restarted = ""
	ss := slices.Clone(samples)
	slices.SortStableFunc(ss, func(a, b Sample) int { return a.Sent.Compare(b.Sent) })
	if !t.started && len(ss) > 0 {
		t.origin, t.started = ss[0].Sent, true
	}
	if t.judged {
		late := 0
		for late < len(ss) && t.secs(ss[late].Sent) <= t.lastEnd {
			late++
		}
		rep.Late, ss = late, ss[late:]
	}
	nb := min(t.cfg.Bins, len(ss)/t.cfg.MinBinSamples)
	if nb == 0 {
		rep.Skipped = 1
		return t.report(rep), nil
	}
	for i := range nb {
		t.add(t.binOf(ss[i*len(ss)/nb:(i+1)*len(ss)/nb]), &rep)
		rep.Bins++
	}
	return t.report(rep), nil
}

// Restart empties the window, as after a step of the clocks the caller
// learnt of (an NTP step): the next report says why, and the Tracker
// learns again.
func (t *Tracker) Restart(reason string) {
	t.reset()
	t.restarted = join(t.restarted, reason)
}

// reset empties the window and forgets the steps.
func (t *Tracker) reset() {
	t.window, t.pending = t.window[:0], t.pending[:0]
	t.fitOK, t.judged = false, false
	t.skewErr, t.base, t.spread = 0, 0, 0
	t.change, t.changeVar = 0, 0
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (t *Tracker) secs(at time.Time) float64 { return at.Sub(t.origin).Seconds() }

func (t *Tracker) at(s float64) time.Time {
	return t.origin.Add(time.Duration(math.Round(s * 1e9)))
}

// binOf is the bin of ss (not empty, sorted).
func (t *Tracker) binOf(ss []Sample) bin {
	lo := 0
	for i, s := range ss {
		if s.Delay < ss[lo].Delay {
			lo = i
		}
	}
	return bin{point: point{t: t.secs(ss[lo].Sent), d: float64(ss[lo].Delay) / 1e6},
		start: t.secs(ss[0].Sent), end: t.secs(ss[len(ss)-1].Sent)}
}

// state is Learning until the window spans MinSpan and has a fit.
func (t *Tracker) state() State {
	if !t.fitOK || len(t.window) == 0 || t.window[len(t.window)-1].t-t.window[0].t < t.cfg.MinSpan.Seconds() {
		return Learning
	}
	return Tracking
}

// add judges a bin: into the window when it is within the threshold (or
// while learning), else pending, until a run of Confirm confirms a step.
func (t *Tracker) add(b bin, rep *Report) {
	if t.judged && b.start-t.lastEnd > t.cfg.Window.Seconds() {
		gap := time.Duration((b.start - t.lastEnd) * 1e9).Round(time.Second)
		t.reset()
		rep.Restarted = join(rep.Restarted, fmt.Sprintf("no data for %s, longer than the window of %s: the window restarts", gap, t.cfg.Window))
	}
	t.lastEnd, t.judged = b.end, true
	if t.state() == Learning {
		t.accept(b)
		t.refit()
		return
	}
	dev := b.d - t.fit.at(b.t) - t.base
	thr := t.threshold(b.t)
	if dev >= -thr && dev <= max(thr, t.load) {
		t.settle(rep)
		t.accept(b)
		t.refit()
		return
	}
	sign := 1
	if dev < 0 {
		sign = -1
	}
	if len(t.pending) > 0 && sign != t.sign {
		t.settle(rep)
		t.refit()
	}
	t.pending, t.sign = append(t.pending, b), sign
	if len(t.pending) < t.cfg.Confirm {
		return
	}
	// A step is a new floor, which the run's minima agree on: queueing
	// bursts in a row raise them unevenly. The run's median may stand
	// above its lowest bin (a burst in one bin) by half the threshold.
	devs := t.devs(t.pending)
	if med, lo := delay.Quantile(devs, 0.5), devs[0]; med-lo <= thr/2 {
		t.confirm(rep)
		return
	}
	// Not a floor yet: the run's oldest bin goes as a transient would.
	if first := t.pending[0]; t.sign > 0 {
		t.accept(first)
		t.refit()
	} else {
		rep.Outliers++
	}
	t.pending = slices.Delete(t.pending, 0, 1)
}

// devs are the heights of bins over the envelope and the window's typical
// bin (ms), sorted, in the scratch space.
func (t *Tracker) devs(bins []bin) []float64 {
	out := t.res[:0]
	for _, b := range bins {
		out = append(out, b.d-t.fit.at(b.t)-t.base)
	}
	slices.Sort(out)
	return out
}

// settle ends a run of pending bins too short for a step: bins above the
// envelope join the window (queues come and go); bins below it do not,
// since a single low point would tilt the envelope (they are outliers).
func (t *Tracker) settle(rep *Report) {
	if t.sign > 0 {
		for _, b := range t.pending {
			t.accept(b)
		}
	} else {
		rep.Outliers += len(t.pending)
	}
	t.pending = t.pending[:0]
}

// confirm makes a step of the pending run: its size is the run's lower
// median height over the envelope, less the window's median (bursts only
// raise a bin, so the lower half of the run is its floor; the lowest bin
// alone could be a glitch), uncertain by the window's uncertainty and by
// how far the lowest bin is below it. The window's history moves to the
// new level, so that the envelope (and the skew) carries on.
func (t *Tracker) confirm(rep *Report) {
	devs := t.devs(t.pending)
	size := lowerMedian(devs)
	last := t.pending[len(t.pending)-1]
	u := t.uncertainty(last.end) + size - devs[0]
	rep.Steps = append(rep.Steps, Step{At: t.at(t.pending[0].start), Found: t.at(last.end), Size: durMS(size), Uncertainty: durMS(u)})
	for i := range t.window {
		t.window[i].d += size
	}
	for _, b := range t.pending {
		t.accept(b)
	}
	t.pending = t.pending[:0]
	t.change += size
	t.changeVar += u * u
	t.refit()
}

// pendingDev is the lower median height of the pending bins over the
// envelope (ms), and how many there are.
func (t *Tracker) pendingDev() (float64, int) {
	if len(t.pending) == 0 {
		return 0, 0
	}
	return lowerMedian(t.devs(t.pending)), len(t.pending)
}

// lowerMedian is the lower of the middle values of sorted (not empty).
func lowerMedian(sorted []float64) float64 { return sorted[(len(sorted)-1)/2] }

// accept appends a bin to the window, dropping the bins older than the
// window and, past its capacity, the oldest.
func (t *Tracker) accept(b bin) {
	cut := 0
	for cut < len(t.window) && (t.window[cut].t < b.t-t.cfg.Window.Seconds() || len(t.window)-cut >= t.capBins) {
		cut++
	}
	if cut > 0 {
		t.window = slices.Delete(t.window, 0, cut)
	}
	t.window = append(t.window, b)
}

// refit fits the envelope over the window: the lower convex hull's edge
// over the mean time (envelope.go), or with synchronised clocks the
// lowest delay (no skew); then the bins' heights over it.
func (t *Tracker) refit() {
	t.pts = t.pts[:0]
	t.mean = 0
	for _, b := range t.window {
		t.pts = append(t.pts, b.point)
		t.mean += b.t
	}
	if len(t.pts) == 0 {
		t.fitOK = false
		return
	}
	t.mean /= float64(len(t.pts))
	if t.cfg.Synchronised {
		lo := t.pts[0].d
		for _, p := range t.pts {
			lo = min(lo, p.d)
		}
		t.fit, t.fitOK, t.skewErr = line{icept: lo}, true, 0
	} else {
		t.fit, t.hull, t.fitOK = fitEnvelope(t.pts, t.hull)
		if !t.fitOK {
			return
		}
		// A rough scale of the slope's error: half the difference of the
		// two halves' slopes (each fitted over half the span).
		t.skewErr = 0
		if h := len(t.pts) / 2; h >= 4 {
			var a, b line
			var okA, okB bool
			a, t.hull, okA = fitEnvelope(t.pts[:h], t.hull)
			b, t.hull, okB = fitEnvelope(t.pts[h:], t.hull)
			if okA && okB {
				t.skewErr = math.Abs(a.slope-b.slope) / 2
			}
		}
	}
	t.res = t.res[:0]
	for _, p := range t.pts {
		t.res = append(t.res, p.d-t.fit.at(p.t))
	}
	slices.Sort(t.res)
	t.load = delay.Quantile(t.res, loadQuantile)
	m, mad := medianMAD(t.res)
	t.base, t.spread, t.load = m, 1.4826*mad, t.load-m
}

// loadQuantile is the share of the window's bins a bin must rise above to
// count towards a step up: on a loaded path queueing raises many bins, and
// runs of them must not pass for a new floor.
const loadQuantile = 0.9

// uncertainty is how far a change found at time s may be off (ms): twice
// the spread of the bins' minima, plus the skew's error extrapolated from
// the window's middle; at least a microsecond.
func (t *Tracker) uncertainty(s float64) float64 {
	return max(2*t.spread+t.skewErr*math.Abs(s-t.mean), 1e-3)
}

// threshold is how far from the envelope a bin at time s must be to count
// towards a step (ms): twice the uncertainty, and at least MinStep; a bin
// above it must also rise above the window's load (add).
func (t *Tracker) threshold(s float64) float64 {
	return max(float64(t.cfg.MinStep)/1e6, 2*t.uncertainty(s))
}

// report fills in what the Tracker knows now.
func (t *Tracker) report(rep Report) Report {
	rep.State, rep.Synchronised, rep.ClockBound = t.state(), t.cfg.Synchronised, t.cfg.ClockBound
	rep.SkewPPM, rep.SkewErrPPM, rep.Floor, rep.Uncertainty = 0, 0, 0, 0
	if t.fitOK && len(t.window) > 0 {
		last := t.window[len(t.window)-1].t
		rep.Floor = durMS(t.fit.at(last) + t.base)
		rep.Uncertainty = durMS(t.uncertainty(t.lastEnd))
		if !t.cfg.Synchronised {
			rep.SkewPPM, rep.SkewErrPPM = t.fit.slope*1e3, t.skewErr*1e3
		}
	}
	rep.Change, rep.ChangeUncertainty = durMS(t.change), durMS(math.Sqrt(t.changeVar))
	return rep
}

// medianMAD is the median of vs and the median of the absolute deviations
// from it; it sorts vs. Both are 0 for no values.
func medianMAD(vs []float64) (median, mad float64) {
	if len(vs) == 0 {
		return 0, 0
	}
	slices.Sort(vs)
	median = delay.Quantile(vs, 0.5)
	for i, v := range vs {
		vs[i] = math.Abs(v - median)
	}
	slices.Sort(vs)
	return median, delay.Quantile(vs, 0.5)
}
