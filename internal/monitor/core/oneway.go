package core

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/owd"
	"github.com/wanlab/wanlab/internal/segment"
)

// RuleOWDStep is a step of one direction's one-way delay (package owd),
// found with or without synchronised clocks: its alert's Src and Dst are
// the direction's (the back direction of a path a -> b is b -> a).
const RuleOWDStep = "owd_step"

// FigureOWD is the incidents' figure of one-way delay steps: it crosses
// its direction's links only.
const FigureOWD = "delay"

// OneWaySamples are one probe summary's one-way delays each way, of the
// probes that came back.
type OneWaySamples struct {
	Forward, Back []owd.Sample
	// Synchronised says the hosts' clocks are synchronised, within
	// ClockBound; otherwise the skew is estimated and removed.
	Synchronised bool
	ClockBound   time.Duration
	// ClockStep says why the summary was dropped when the clocks stepped
	// during it ("" if they did not): the windows restart.
	ClockStep string
}

// Add takes one probe that came back, by its four stamps (Unix
// nanoseconds: sent and received by the prober's clock, received and
// sent back by the reflector's).
func (s *OneWaySamples) Add(sent, reflectRx, reflectTx, received int64) {
	s.Forward = append(s.Forward, owd.Sample{Sent: time.Unix(0, sent), Delay: time.Duration(reflectRx - sent)})
	s.Back = append(s.Back, owd.Sample{Sent: time.Unix(0, reflectTx), Delay: time.Duration(received - reflectTx)})
}

// OneWayResult is what a summary's one-way delays gave.
type OneWayResult struct {
	// Forward and Back are each direction's report: its steps, its
	// uncertainty, the clocks' skew.
	Forward, Back owd.Report
	// Fired and Resolved are the owd_step alerts.
	Fired, Resolved []Alert
	// Events say why a window restarted (a clock step, a change of
	// synchronisation, a gap, a new threshold).
	Events []string
	// Points are the summary's one-way figures (OWDForwardChange and the
	// rest), of the directions tracked (none while learning).
	Points []Point
}

// OneWay follows each probed path's one-way delays per direction and
// raises owd_step alerts on their steps. It is not safe for concurrent
// use.
type OneWay struct {
	paths map[PathKey]*oneWayPath
}

// oneWayPath is a path's two directions (0 forward, 1 back).
type oneWayPath struct {
	pair    *owd.Pair
	sync    bool
	minStep time.Duration
	// window is the pair's (owd.Config.Window): how long a restart's
	// notice is shown (Status).
	window time.Duration
	last   [2]owd.Report
	// active are the directions' owd_step alerts (nil: none), since when
	// the new level held; before is each one's level before its steps
	// (the report's Change less them): it ends back there. A restart
	// forgets it (0: the new window's start).
	active [2]*Alert
	before [2]time.Duration
	// restarted says why the windows last restarted, and when ("" never).
	restarted   string
	restartedAt time.Time
}

// directions are a path's, as its alerts name them.
var directions = [2]string{"forward", "back"}

// NewOneWay follows no path yet.
func NewOneWay() *OneWay { return &OneWay{paths: map[PathKey]*oneWayPath{}} }

// Observe takes a summary of path k at `at`: period is the probes'
// summary, th the pair's thresholds (a step smaller than
// th.OneWayStep() is not one), window how long a new level lasts before
// it is the baseline and its alert ends.
func (w *OneWay) Observe(k PathKey, at time.Time, s OneWaySamples, th Thresholds, period, window time.Duration) (OneWayResult, error) {
	var res OneWayResult
	p, old := w.paths[k], w.paths[k]
	restart := ""
	switch {
	case p == nil:
	case p.sync != s.Synchronised:
		restart = fmt.Sprintf("the clocks are now %s: the one-way delay windows restart", syncText(s.Synchronised))
	case p.minStep != th.OneWayStep():
		restart = fmt.Sprintf("the smallest one-way delay step is now %s (was %s): the one-way delay windows restart", th.OneWayStep(), p.minStep)
	}
	if restart != "" {
		res.Events = append(res.Events, fmt.Sprintf("%s: %s", k, restart))
		p = nil
	}
	if p == nil {
		cfg := owd.DefaultConfig()
		cfg.Period, cfg.Synchronised, cfg.ClockBound = period, s.Synchronised, s.ClockBound
		cfg.Window = max(cfg.Window, 2*period)
		cfg.MinStep = th.OneWayStep()
		pair, err := owd.NewPair(cfg)
		if err != nil {
			return res, fmt.Errorf("following the one-way delays of %s: %w", k, err)
		}
		p = &oneWayPath{pair: pair, sync: s.Synchronised, minStep: cfg.MinStep, window: cfg.Window}
		if old != nil {
			p.active, p.restarted, p.restartedAt = old.active, old.restarted, old.restartedAt
		}
		w.paths[k] = p
	}
	rep, err := p.pair.Observe(s.Forward, s.Back)
	if err != nil {
		return res, fmt.Errorf("one-way delays of %s: %w", k, err)
	}
	res.Forward, res.Back = rep.Forward, rep.Back
	if rep.Forward.Restarted != "" {
		restart = join(restart, rep.Forward.Restarted)
		res.Events = append(res.Events, fmt.Sprintf("%s: %s", k, rep.Forward.Restarted))
	} else if rep.Back.Restarted != "" {
		restart = join(restart, rep.Back.Restarted)
		res.Events = append(res.Events, fmt.Sprintf("%s: %s", k, rep.Back.Restarted))
	}
	if restart != "" {
		p.restarted, p.restartedAt = restart, at
	}
	res.Points = oneWayPoints(k, at, rep.Forward, rep.Back)
	for i, r := range [2]owd.Report{rep.Forward, rep.Back} {
		p.last[i] = r
		from, to := k.Src, k.Dst
		if i == 1 {
			from, to = to, from
		}
		switch a := p.active[i]; {
		case a == nil && len(r.Steps) > 0:
			st := r.Steps[len(r.Steps)-1]
			ev, _ := json.Marshal(map[string]any{"direction": directions[i], "steps": r.Steps, "change_seconds": r.Change.Seconds(),
				"change_uncertainty_seconds": r.ChangeUncertainty.Seconds(), "uncertainty_seconds": r.Uncertainty.Seconds(),
				string(ClockSkew): r.SkewPPM, "synchronised": r.Synchronised, "probed": k.String()})
			na := Alert{Ref: fmt.Sprintf("%s/%s/%s/%s/%s/%d", RuleOWDStep, k.Src, k.Dst, testRef(k), directions[i], at.UnixNano()),
				Rule: RuleOWDStep, Src: from, Dst: to, Test: k.Test, Family: k.Family, Started: at, Value: st.Size.Seconds(),
				Threshold: p.minStep.Seconds(), Evidence: ev,
				Message: fmt.Sprintf("one-way delay %s -> %s (%s's probes): %s; %s", from, to, k.Src, st, r)}
			p.active[i] = &na
			p.before[i] = r.Change
			for _, st := range r.Steps {
				p.before[i] -= st.Size
			}
			res.Fired = append(res.Fired, na)
		case a != nil && ((r.Change-p.before[i]).Abs() <= max(r.Uncertainty, p.minStep/2) || at.Sub(a.Started) >= window):
			// Back within half the smallest step of the level before the
			// alert's steps: the delay seldom comes back to the
			// microsecond (a few tens of them of drift on a quiet path).
			done := *a
			done.Ended = at
			p.active[i] = nil
			res.Resolved = append(res.Resolved, done)
		}
	}
	return res, nil
}

// oneWayPoints are a summary's one-way figures: each tracked direction's
// change since its window started and its uncertainty, and, without
// synchronised clocks, the skew of dst's clock against src's (the
// forward delays' drift, and the back ones' negated: the mean where both
// directions are tracked).
func oneWayPoints(k PathKey, at time.Time, fwd, back owd.Report) []Point {
	var out []Point
	add := func(n Name, v float64) {
		out = append(out, Point{T: at, Src: k.Src, Dst: k.Dst, Test: k.Test, Metric: string(n), Value: v, Family: k.Family})
	}
	var skews []float64
	for i, r := range [2]owd.Report{fwd, back} {
		if r.State != owd.Tracking {
			continue
		}
		change, unc := [2]Name{OWDForwardChange, OWDBackChange}[i], [2]Name{OWDForwardUncertainty, OWDBackUncertainty}[i]
		add(change, r.Change.Seconds())
		add(unc, math.Hypot(r.Uncertainty.Seconds(), r.ChangeUncertainty.Seconds()))
		if !r.Synchronised {
			skews = append(skews, [2]float64{1, -1}[i]*r.SkewPPM)
		}
	}
	if len(skews) > 0 {
		sum := 0.0
		for _, v := range skews {
			sum += v
		}
		add(ClockSkew, sum/float64(len(skews)))
	}
	return out
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func syncText(sync bool) string {
	if sync {
		return "synchronised"
	}
	return "not synchronised"
}

// Restart restarts a path's windows: its clocks stepped (reason says how).
func (w *OneWay) Restart(k PathKey, reason string) {
	if p := w.paths[k]; p != nil {
		p.pair.Restart(reason)
	}
}

// RestartAll restarts every path's windows: the local clock jumped.
func (w *OneWay) RestartAll(reason string) {
	for _, p := range w.paths {
		p.pair.Restart(reason)
	}
}

// Status says what the operator should know of a path's one-way
// tracking at `now`: why its windows restarted, for a window's span after
// (a clock step, a change of synchronisation, a gap); "" if nothing.
func (w *OneWay) Status(k PathKey, now time.Time) string {
	p := w.paths[k]
	if p == nil || p.restarted == "" || now.Sub(p.restartedAt) > p.window {
		return ""
	}
	s := fmt.Sprintf("one-way delay windows restarted at %s: %s", p.restartedAt.UTC().Format(time.TimeOnly+" UTC"), p.restarted)
	if p.last[0].State != owd.Tracking || p.last[1].State != owd.Tracking {
		s += "; learning again: no one-way judgement yet"
	}
	return s
}

// Ack marks the active owd_step alert of a ref acknowledged; false if
// none is.
func (w *OneWay) Ack(ref, who, note string, at time.Time) bool {
	for _, p := range w.paths {
		for _, a := range p.active {
			if a != nil && a.Ref == ref {
				a.AckedBy, a.AckedAt, a.AckNote = who, at, note
				return true
			}
		}
	}
	return false
}

// Forget drops the paths not in keep (a reload removed them); their
// alerts are returned ended at `at`.
func (w *OneWay) Forget(keep func(PathKey) bool, at time.Time) (resolved []Alert) {
	for _, k := range slices.SortedFunc(maps.Keys(w.paths), compareKeys) {
		if keep(k) {
			continue
		}
		for _, a := range w.paths[k].active {
			if a != nil {
				done := *a
				done.Ended = at
				resolved = append(resolved, done)
			}
		}
		delete(w.paths, k)
	}
	return resolved
}

func compareKeys(a, b PathKey) int {
	switch {
	case a.String() < b.String():
		return -1
	case a.String() > b.String():
		return 1
	}
	return 0
}

// Active are the owd_step alerts active, by start.
func (w *OneWay) Active() []Alert {
	var out []Alert
	for _, p := range w.paths {
		for _, a := range p.active {
			if a != nil {
				out = append(out, *a)
			}
		}
	}
	slices.SortFunc(out, func(a, b Alert) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return compareKeys(PathKey{Src: a.Src, Dst: a.Dst, Test: a.Ref}, PathKey{Src: b.Src, Dst: b.Dst, Test: b.Ref})
	})
	return out
}

// Segments are the incidents' observations of one-way delay: each
// direction of each usable path tracking (not learning), affected while
// its owd_step alert is active; via gives a one-way path's link
// directions.
func (w *OneWay) Segments(usable func(PathKey) bool, via func(src, dst string) []string, source string) []segment.Observation {
	var out []segment.Observation
	for _, k := range slices.SortedFunc(maps.Keys(w.paths), compareKeys) {
		p := w.paths[k]
		if !usable(k) {
			continue
		}
		for i, r := range p.last {
			if r.State != owd.Tracking {
				continue
			}
			from, to := k.Src, k.Dst
			if i == 1 {
				from, to = to, from
			}
			out = append(out, segment.Observation{Path: fmt.Sprintf("%s -> %s (%s, %s of %s)", from, to, k.Test, directions[i], k),
				Dirs: via(from, to), Figure: FigureOWD, Affected: p.active[i] != nil, Source: source})
		}
	}
	return out
}
