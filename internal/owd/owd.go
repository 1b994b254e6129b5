// Package owd follows the one-way delay of one direction of a path and
// finds the steps in it, with or without synchronised clocks.
//
// A one-way delay as measured is the receiver's stamp less the sender's:
// the true delay plus the clocks' offset, which drifts with the clocks'
// rates (their skew: 50 ppm moves it by 3 ms a minute), plus queueing,
// which only ever adds. Without synchronised clocks the offset is unknown,
// but a step in the true delay (a route change, a new queue) is still a
// step in what is measured, once the drift is removed. A Tracker does
// that over a window of recent summaries: it keeps each bin's lowest
// delay (a summary is cut into a few bins), fits the lower envelope of
// those minima (the linear programme of Moon, Skelly and Towsley, solved
// on their lower convex hull: envelope.go), and judges each new bin
// against the envelope extrapolated: a run of bins a whole summary long
// beyond the threshold, all on one side, whose minima agree on a new floor
// (queueing bursts in a row raise them unevenly) and, going up, rise above
// nine in ten of the window's bins (a loaded path's queues raise many), is
// a step, reported with its size and uncertainty ("offset unknown, changes
// reliable to ±X ms"). The window's history is then moved to the new
// level, so that the skew estimate survives the step.
//
// With synchronised clocks (Config.Synchronised) the offset is taken as
// zero within the clocks' bound and steps are judged on the delays
// directly, against the window's floor. A Pair follows both directions of
// a path: a step of the clocks' offset moves the two by opposite amounts
// at once and leaves the round trip alone, so the Pair restarts both
// windows and says so instead of reporting two steps; a step the caller
// learns of otherwise (an NTP step, probe.ErrClockStep) is Restart's.
//
// The package is pure (samples in, reports out) and its memory is
// bounded: Config.check counts a window's bins before anything is
// allocated.
package owd

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Sample is one probe's one-way delay as measured.
type Sample struct {
	// Sent is when the probe left, by the sender's clock.
	Sent time.Time
	// Delay is the receiver's stamp less the sender's: the true delay
	// plus the clocks' offset (and its drift) plus queueing.
	Delay time.Duration
}

// ErrConfig is what every refused Config wraps.
var ErrConfig = errors.New("owd: configuration refused")

// ErrTooMany is what Observe's error wraps when a summary holds more than
// MaxSamples samples.
var ErrTooMany = errors.New("owd: too many samples in one summary")

// Bounds on what a Tracker holds.
const (
	// MaxBins bounds a window's bins (its memory: about 64 bytes a bin).
	MaxBins = 1 << 14
	// MaxSamples bounds one summary's samples (Observe copies them).
	MaxSamples = 1 << 16
)

// Config says how a Tracker cuts, keeps and judges.
type Config struct {
	// Period is the summaries' period (the monitor's summary: 10 s).
	Period time.Duration
	// Bins are the bins each summary is cut into, by count of samples: a
	// step is found within one summary and the bins of the next.
	Bins int
	// MinBinSamples is the fewest samples a bin is judged on; a summary
	// with too few for one bin gives no judgement rather than a guess.
	MinBinSamples int
	// Window is the span of history the envelope is fitted over.
	Window time.Duration
	// MinSpan is how much history the window needs before bins are judged
	// (learning until then).
	MinSpan time.Duration
	// Confirm are the bins in a row beyond the threshold, on one side,
	// that make a step (0: Bins, one summary's worth).
	Confirm int
	// MinStep is the smallest change reported as a step.
	MinStep time.Duration
	// Synchronised says the clocks are synchronised (or shared): no skew
	// is removed, and ClockBound is how far the offset may be from zero.
	Synchronised bool
	ClockBound   time.Duration
}

// DefaultConfig suits the monitor's probes: 10 probes a second summarised
// every 10 s, a 10-minute window learnt for a minute, steps of 1 ms and
// more.
func DefaultConfig() Config {
	return Config{Period: 10 * time.Second, Bins: 4, MinBinSamples: 5, Window: 10 * time.Minute,
		MinSpan: time.Minute, MinStep: time.Millisecond}
}

// capacity is the most bins a window of c holds: the window at the
// summaries' pace, with a summary's slack.
func (c Config) capacity() int {
	return int(math.Ceil(float64(c.Window)/float64(c.Period)))*c.Bins + c.Bins
}

// check refuses a Config that makes no sense or holds too much, before
// anything is allocated.
func (c Config) check() error {
	switch {
	case c.Period <= 0:
		return fmt.Errorf("%w: the period %s is not positive", ErrConfig, c.Period)
	case c.Bins < 1 || c.Bins > 64:
		return fmt.Errorf("%w: %d bins a summary: want 1 to 64", ErrConfig, c.Bins)
	case c.MinBinSamples < 1:
		return fmt.Errorf("%w: a bin needs at least one sample, not %d", ErrConfig, c.MinBinSamples)
	case c.Window < 2*c.Period:
		return fmt.Errorf("%w: the window %s is shorter than two periods of %s", ErrConfig, c.Window, c.Period)
	case c.MinSpan <= 0 || c.MinSpan > c.Window:
		return fmt.Errorf("%w: the learning span %s is not within the window %s", ErrConfig, c.MinSpan, c.Window)
	case c.Confirm < 0 || c.Confirm > 4*c.Bins:
		return fmt.Errorf("%w: %d bins to confirm a step: want 0 (one summary's) to %d", ErrConfig, c.Confirm, 4*c.Bins)
	case c.MinStep <= 0:
		return fmt.Errorf("%w: the smallest step %s is not positive", ErrConfig, c.MinStep)
	case c.ClockBound < 0:
		return fmt.Errorf("%w: the clocks' bound %s is negative", ErrConfig, c.ClockBound)
	}
	// Counted before allocating: float, so that a huge window cannot wrap.
	if n := math.Ceil(float64(c.Window)/float64(c.Period))*float64(c.Bins) + float64(c.Bins); n > MaxBins {
		return fmt.Errorf("%w: a window of %s at %d bins every %s holds %.0f bins: at most %d", ErrConfig, c.Window, c.Bins, c.Period, n, MaxBins)
	}
	return nil
}

// State is where a Tracker stands.
type State string

// The states.
const (
	// Learning: the window is too short to judge a bin.
	Learning State = "learning"
	// Tracking: each bin is judged against the envelope.
	Tracking State = "tracking"
)

// Step is a change of a direction's lowest delay.
type Step struct {
	// At is when the first bin beyond the threshold began: the step came
	// at or before it, after the bin before.
	At time.Time
	// Found is when the step was confirmed: the end of the last bin of the
	// run.
	Found time.Time
	// Size is the change (positive: the delay went up) and Uncertainty
	// how far it may be off.
	Size, Uncertainty time.Duration
}

func (s Step) String() string {
	way := "up"
	if s.Size < 0 {
		way = "down"
	}
	return fmt.Sprintf("delay %s %s ±%s at %s", way, ms(s.Size.Abs()), ms(s.Uncertainty), s.At.UTC().Format(time.RFC3339))
}

// Report is what a Tracker says after a summary.
type Report struct {
	State        State
	Synchronised bool
	// Steps are those confirmed by this summary, oldest first.
	Steps []Step
	// Restarted says why the window restarted since the last report ("" if
	// it did not): a clock step, a gap longer than the window.
	Restarted string
	// SkewPPM is the drift of the clocks' offset, in parts per million
	// (the receiver's clock gaining on the sender's is positive), and
	// SkewErrPPM a rough scale of its error; both 0 with synchronised
	// clocks or while there is no fit.
	SkewPPM, SkewErrPPM float64
	// Floor is the envelope at the latest bin: the lowest delay, the
	// clocks' offset included unless Synchronised (then within
	// ClockBound of it, Config.ClockBound).
	Floor, ClockBound time.Duration
	// Change is the sum of the steps since the window started, and
	// ChangeUncertainty its uncertainty.
	Change, ChangeUncertainty time.Duration
	// Uncertainty is how far a change found now may be off: "changes
	// reliable to ±Uncertainty".
	Uncertainty time.Duration
	// Bins are the bins this summary gave; Skipped the summaries too small
	// for a bin; Late the samples older than what was judged; Outliers
	// the bins below the envelope that did not last (left out of it).
	Bins, Skipped, Late, Outliers int
}

// String says what the report means for the direction's delay.
func (r Report) String() string {
	if r.State == Learning {
		return "learning the window: no judgement yet"
	}
	if r.Synchronised {
		return fmt.Sprintf("clocks synchronised: lowest delay %s ±%s, changes reliable to ±%s",
			ms(r.Floor), ms(r.ClockBound+r.Uncertainty), ms(r.Uncertainty))
	}
	return fmt.Sprintf("offset unknown, changes reliable to ±%s (clock skew %+.1f ppm ±%.1f)", ms(r.Uncertainty), r.SkewPPM, r.SkewErrPPM)
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

// durMS turns milliseconds into a Duration.
func durMS(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }
