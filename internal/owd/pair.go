package owd

import (
	"fmt"
	"math"
	"time"
)

// Pair follows both directions of a path: the forward delays (stamped by
// the sender, then the reflector) and the back ones (the reflector, then
// the sender), whose clocks' offset enters with opposite signs.
type Pair struct {
	Forward, Back *Tracker
}

// NewPair makes the Trackers of both directions of a path.
func NewPair(cfg Config) (*Pair, error) {
	f, err := New(cfg)
	if err != nil {
		return nil, err
	}
	b, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Pair{Forward: f, Back: b}, nil
}

// PairReport is what a Pair says after a summary.
type PairReport struct {
	Forward, Back Report
	// ClockStep is how far the clocks' offset stepped, as the forward
	// delays moved (the back ones moved by its opposite); 0 when it did
	// not. Both windows then restarted (Report.Restarted says so) and the
	// step is not reported as a change of either direction.
	ClockStep time.Duration
}

// Observe takes one summary of both directions: the same probes' forward
// and back samples. A step on both at once, of opposite signs and sizes
// that agree within their uncertainties (so that the round trip did not
// move), is the clocks' offset stepping, not the path: a change of the
// route that moved the two ways by opposite amounts at once would look the
// same, and is taken for a clock step.
func (p *Pair) Observe(fwd, back []Sample) (PairReport, error) {
	rf, err := p.Forward.Observe(fwd)
	if err != nil {
		return PairReport{}, fmt.Errorf("forward delays: %w", err)
	}
	rb, err := p.Back.Observe(back)
	if err != nil {
		return PairReport{}, fmt.Errorf("back delays: %w", err)
	}
	out := PairReport{Forward: rf, Back: rb}
	step, ok := clockStep(rf.Steps, p.Back, rb.Steps, p.Forward.cfg.MinStep)
	if !ok {
		var back time.Duration
		back, ok = clockStep(rb.Steps, p.Forward, rf.Steps, p.Forward.cfg.MinStep)
		step = -back
	}
	if !ok {
		return out, nil
	}
	reason := fmt.Sprintf("the clocks' offset stepped by %s (the forward delays moved by that, the back ones by its opposite, the round trip by neither): the window restarts", signedMS(step))
	p.Forward.reset()
	p.Back.reset()
	rf.Steps, rb.Steps = nil, nil
	rf.Restarted, rb.Restarted = join(rf.Restarted, reason), join(rb.Restarted, reason)
	out.Forward, out.Back, out.ClockStep = p.Forward.report(rf), p.Back.report(rb), step
	return out, nil
}

// Restart restarts both directions' windows (Tracker.Restart).
func (p *Pair) Restart(reason string) {
	p.Forward.Restart(reason)
	p.Back.Restart(reason)
}

// clockStep looks for a step of steps matched by one of the opposite
// direction's (other, its steps) of the opposite sign and the same size
// within both uncertainties (and half the smallest step), confirmed or
// still pending; it returns the first's size.
func clockStep(steps []Step, other *Tracker, otherSteps []Step, minStep time.Duration) (time.Duration, bool) {
	tol := float64(minStep) / 2e6
	for _, s := range steps {
		a, ua := float64(s.Size)/1e6, float64(s.Uncertainty)/1e6
		for _, o := range otherSteps {
			if b := float64(o.Size) / 1e6; a*b < 0 && math.Abs(a+b) <= ua+float64(o.Uncertainty)/1e6+tol {
				return s.Size, true
			}
		}
		if b, n := other.pendingDev(); n > 0 && a*b < 0 && math.Abs(a+b) <= ua+other.uncertainty(other.lastEnd)+tol {
			return s.Size, true
		}
	}
	return 0, false
}

// signedMS formats a duration in milliseconds with its sign.
func signedMS(d time.Duration) string { return fmt.Sprintf("%+.2f ms", float64(d)/1e6) }
