package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// BackendSimulated is the backend of a run whose steps were simulated
// (Options.Simulate, wanlab predict): its figures are predictions.
const BackendSimulated = "simulated"

// Simulator simulates a scenario's steps in place of a test-bed: the
// seam wanlab predict runs through. The run stays the controller's (its
// plan, its archive, its progress, resume and Ctrl-C); only the steps'
// outcomes and totals come from the simulator.
type Simulator interface {
	// Begin readies the simulation of a scenario and returns what the
	// run's events should list of it: the assumptions made and what is
	// left out, one sentence each. An error refuses the whole run.
	Begin(f *scenario.File) (notes []string, err error)
	// Simulate simulates one step. An error with no outcome fails the
	// step, with the error as its reason; the next step runs.
	Simulate(ctx context.Context, s SimStep) (*Simulated, error)
}

// AheadSimulator is a Simulator that may simulate steps before it is asked
// for them (at once, within its own bounds): the run hands it every step
// it is to simulate, once, before the first, then asks for each in turn
// (Simulate) and stores them in order, as with any Simulator. The run
// calls stop as it ends: stop ends what is under way and returns once it
// has ended.
type AheadSimulator interface {
	Simulator
	Ahead(ctx context.Context, steps []SimStep) (stop func())
}

// SimStep is one step of the run to simulate.
type SimStep struct {
	// Index is the step's place in the run, from 0.
	Index    int
	Workload scenario.Workload
	Step     scenario.Step
	// Seed is the step's, as a test-bed's step has it.
	Seed uint64
}

// Simulated is what a simulation of one step gave: the kind's outcome
// (its figures, jobs, samples, events and notes) and what the step used
// of the hosts and links (Totals with no Testbed: a simulated step has no
// engine or machine figures and is never limited by the test-bed).
type Simulated struct {
	Outcome *kind.Outcome
	Totals  Totals
}

// simulate runs the steps not yet done through o.Simulate: no test-bed
// comes up.
func simulate(ctx context.Context, o Options, f *scenario.File, plan []plannedStep, done map[int]archive.Step, res *Result) error {
	topo, err := topology.New(f.Testbed)
	if err != nil {
		return fmt.Errorf("test-bed %q: %w", res.Testbed, err)
	}
	notes, err := o.Simulate.Begin(f)
	if err != nil {
		return fmt.Errorf("simulating scenario %s: %w", o.Source, err)
	}
	for _, n := range notes {
		if err := o.Archive.AddEvent(res.Run, 0, archive.Info, n); err != nil {
			return fmt.Errorf("archive %s: %w", o.Archive.Location(), err)
		}
	}
	r := &runner{o: o, run: res.Run, steps: len(plan), start: time.Now(), seed: f.Testbed.Seed}
	if ahead, ok := o.Simulate.(AheadSimulator); ok {
		var todo []SimStep
		for _, p := range plan {
			if _, ok := done[p.index]; !ok {
				todo = append(todo, r.simStep(p))
			}
		}
		defer ahead.Ahead(ctx, todo)()
	}
	return r.each(ctx, plan, done, res, func(ctx context.Context, p plannedStep) (StepResult, error) {
		return r.simulated(ctx, p, topo)
	})
}

// simulated simulates one step and stores it, as step runs one on a
// test-bed. Its error is only for a failure to store.
func (r *runner) simulated(ctx context.Context, p plannedStep, topo *topology.Topology) (StepResult, error) {
	a := r.o.Archive
	sr := p.result()
	stepID, err := a.StartStep(r.run, p.index, p.workload.Name, sr.Label, sr.Params)
	if err != nil {
		return sr, err
	}
	began := time.Now()
	r.progress(p, sr.Label, began, 0, 0, 0)
	sim, simErr := r.o.Simulate.Simulate(ctx, r.simStep(p))
	out := &outcome{metrics: results.Metrics{}}
	var tot Totals
	if sim != nil {
		tot = sim.Totals
		tot.Testbed = nil
		if o := sim.Outcome; o != nil {
			out = &outcome{metrics: o.Metrics, jobs: o.Jobs, samples: o.Samples, events: o.Events, notes: o.Notes}
			if out.metrics == nil {
				out.metrics = results.Metrics{}
			}
		}
	}
	onClock(out, began)
	sr.Status, sr.Reason = stepStatus(ctx, simErr, out)
	sr.Metrics = out.metrics
	sr.Seconds = tot.Seconds
	if sr.Status != archive.StatusFailed {
		out.notes = append(out.notes, figures(sr.Metrics, tot, topo, p.step)...)
	}
	failed := 0
	for _, j := range out.jobs {
		if j.Status != job.OK {
			failed++
		}
	}
	r.progress(p, sr.Label, began, len(out.jobs), len(out.jobs), failed)
	return sr, r.store(stepID, &sr, out)
}

// simStep is planned step p as a Simulator takes it.
func (r *runner) simStep(p plannedStep) SimStep {
	return SimStep{Index: p.index, Workload: p.workload, Step: p.step, Seed: r.stepSeed(p)}
}

// progress reports where the run stands, if anyone listens.
func (r *runner) progress(p plannedStep, label string, began time.Time, expected, finished, failed int) {
	if r.o.Progress != nil {
		r.o.Progress(Progress{Step: p.index + 1, Steps: r.steps, Workload: p.workload.Name, Label: label,
			Expected: expected, Finished: finished, Failed: failed, StepElapsed: time.Since(began), Elapsed: time.Since(r.start)})
	}
}

// stepSeed is a step's seed: the scenario's plus its place in the run.
func (r *runner) stepSeed(p plannedStep) uint64 { return r.seed + uint64(p.index) }

// stepKey is a step's id among the run's steps, for role ids.
func stepKey(p plannedStep) string { return "step" + strconv.Itoa(p.index) }

// each runs (with do) each step of plan not yet done, in order, keeping
// those done by an earlier try, until one cannot be stored or the run is
// interrupted.
func (r *runner) each(ctx context.Context, plan []plannedStep, done map[int]archive.Step, res *Result, do func(context.Context, plannedStep) (StepResult, error)) error {
	for _, p := range plan {
		if prev, ok := done[p.index]; ok {
			res.Steps = append(res.Steps, resumedStep(p, prev))
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w before step %d (%v)", ErrInterrupted, p.index+1, context.Cause(ctx))
		}
		sr, err := do(ctx, p)
		res.Steps = append(res.Steps, sr)
		if err != nil {
			// The archive could not store the step: stop here.
			return fmt.Errorf("archive %s: %w (the steps before are kept; when it can be written again, wanlab run --resume %d --db %s goes on)",
				r.o.Archive.Location(), err, res.Run, r.o.Archive.Location())
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w during step %d (%v)", ErrInterrupted, p.index+1, context.Cause(ctx))
		}
	}
	return nil
}

// errNoStart is a run with neither a test-bed to start nor a simulator.
var errNoStart = errors.New("the run has neither a test-bed to start nor a simulator")

// onClock moves a simulated step's jobs and samples, whose times models
// give in simulated seconds from the Unix epoch, to start when the step
// began, so that a predicted run's steps follow each other in time as a
// measured run's do.
func onClock(out *outcome, began time.Time) {
	shift := began.Sub(time.Unix(0, 0))
	for i := range out.jobs {
		out.jobs[i].Start = out.jobs[i].Start.Add(shift)
		out.jobs[i].End = out.jobs[i].End.Add(shift)
	}
	for i := range out.samples {
		out.samples[i].T = out.samples[i].T.Add(shift)
	}
}
