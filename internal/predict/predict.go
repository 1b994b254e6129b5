// Package predict simulates a scenario's steps on SimGrid instead of
// running them on a test-bed (wanlab predict): it maps the scenario's
// test-bed onto the simulator's platform (package sim) through the same
// topology the test-bed builds, has each step's kind build its actors
// (kind.Model), runs them (bin/wanlab-sim) and reads the step's outcome
// and totals back, for the controller to store as a run of backend
// simulated. What the platform cannot represent is refused with the
// reason or named as left out, and every assumption goes into the run's
// events. It also compares a prediction with a measured run (Compare).
package predict

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

type pathFacts = kind.PathFacts

// TCPWindow is the simulator's largest TCP window (SimGrid's
// network/TCP-gamma), set above any window a host takes so that a flow's
// window is what its kind's model makes of it (a Send's RateBPS), not
// SimGrid's default of 4 MiB, which holds a 10 Gbit/s flow of 175 ms to
// 0.2 Gbit/s.
const TCPWindow = 1 << 30

// LatencyFactor and BandwidthFactor are SimGrid's network/latency-factor
// and network/bandwidth-factor: 1, a message takes its route's delay and
// a flow may reach the links' rate. LV08's own (13.01 and 0.97) fit the
// slow start of a fresh connection per message; wanlab's kinds talk over
// connections they keep open, and their models bound each flow by its
// window, its loss and a calibrated efficiency themselves: with 13.01 a
// probe's 20 ms round trip took 260 ms, a task farm's request 13 times
// its one-way delay.
const (
	LatencyFactor   = 1.0
	BandwidthFactor = 1.0
)

// The prefixes of the run's events that say what a prediction assumes and
// what it leaves out, for the report to list.
const (
	AssumptionPrefix = "assumption: "
	LeftOutPrefix    = "left out: "
)

// Predictor simulates a scenario's steps: the controller's Simulator.
type Predictor struct {
	// Run runs one program on the simulator: sim.Run.
	Run func(ctx context.Context, prog *sim.Program) (*sim.Output, error)
	// Params are models' figures by name (calibrated, or set with --set),
	// which ModelEnv.Param gives in place of the declared ones.
	Params map[string]float64
	// Calibration, if set, is what Params were fitted from (wanlab
	// predict --calibrate): the run's events say so.
	Calibration *Calibration
	// Cores is how many whole cores a host without a cpus quota has: 0 is
	// this machine's count.
	Cores int
	// Parallel is how many steps handed to Ahead are simulated at once: 0
	// is this machine's CPUs.
	Parallel int
	// Memory is how much memory the steps simulated at once may take
	// together, by their estimates (sim.MemoryEstimate), in bytes: 0 is
	// half of what the machine has available as Ahead starts.
	Memory int64

	plat  *platform
	ahead *aheadRun
}

var _ controller.Simulator = (*Predictor)(nil)

// Begin maps the scenario's test-bed onto the platform and says what the
// prediction assumes: the platform's assumptions, the models' (of the
// kinds the scenario runs), the parameters set, and what of the scenario
// is left out.
func (p *Predictor) Begin(f *scenario.File) ([]string, error) {
	topo, err := topology.New(f.Testbed)
	if err != nil {
		return nil, fmt.Errorf("test-bed %q: %w", f.Testbed.Name, err)
	}
	p.plat = newPlatform(topo, p.Cores)
	notes := []string{}
	say := func(prefix, format string, args ...any) { notes = append(notes, prefix+fmt.Sprintf(format, args...)) }
	if p.Calibration != nil {
		say(AssumptionPrefix, "%s", p.Calibration)
	}
	if len(p.Params) == 0 {
		say(AssumptionPrefix, "uncalibrated: the models use the scenario's declared costs and their own defaults")
	} else {
		var set []string
		for _, k := range slices.Sorted(maps.Keys(p.Params)) {
			set = append(set, fmt.Sprintf("%s=%g", k, p.Params[k]))
		}
		say(AssumptionPrefix, "the models' parameters set for this prediction: %s; the others are the scenario's or the models' defaults", strings.Join(set, ", "))
	}
	say(AssumptionPrefix, "a host's cpus quota of Q cores is run as Linux's CFS bandwidth control runs it: ceil(Q) cores at full speed until Q x 100 ms of core time is spent in a 100 ms period, then none until the period ends; a host without a quota has %d cores of its own (on the test-bed such hosts share the machine)", p.plat.unlimitedCores)
	say(AssumptionPrefix, "each link direction is one SimGrid link with its rate less its cross traffic's mean and its one-way delay; flows share it as SimGrid's flow-level TCP model (LV08) shares a link, with its latency and bandwidth factors at 1: a message takes its route's delay and no slow start, as over a connection already open")
	say(AssumptionPrefix, "queues add no delay and drop nothing: a direction's queue settings are left out")
	say(AssumptionPrefix, "a flow's TCP window is what its kind's model makes of it: the simulator's own bound (network/TCP-gamma) is %d MiB, above any host's", TCPWindow>>20)
	say(AssumptionPrefix, "a direction's loss drops nothing itself: it enters where a kind's model bounds a flow by TCP's response to it (Reno's or CUBIC's, as the sending host's congestion control says)")
	say(AssumptionPrefix, "a link's figures count its cross traffic at its mean, as the test-bed's counters count what the engine makes")
	say(AssumptionPrefix, "the test-bed's own machine limits nothing: no step is limited by the test-bed, and the engine's and the machine's CPU are not figures of a prediction")
	var seen []results.Kind
	for _, w := range f.Workloads {
		if slices.Contains(seen, w.Kind) {
			continue
		}
		seen = append(seen, w.Kind)
		k, ok := kinds.Lookup(w.Kind)
		if !ok || k.Model == nil {
			say(LeftOutPrefix, "the steps of workload %s are refused: %v", w.Name, noModel(w.Kind))
			continue
		}
		for _, a := range k.Model.Assumptions {
			say(AssumptionPrefix, "%s model: %s", w.Kind, a)
		}
	}
	if len(f.Events) > 0 {
		say(LeftOutPrefix, "the scenario's %d events (timed changes of links, and the reroutes they make) are not simulated: the links keep their settings", len(f.Events))
	}
	return notes, nil
}

// noModel is the error of a kind without a simulation model.
func noModel(k results.Kind) error {
	return fmt.Errorf("the %s kind has no simulation model: wanlab predict cannot simulate its steps (emulate them with wanlab run)", k)
}

// Simulate simulates one step: its kind's model builds the actors, the
// platform adds the hosts, links and routes they use, the simulator runs
// them, and the model reads the outcome; the totals are each host's CPU
// and each direction's bytes (its cross traffic's mean included). A step
// handed to Ahead is the one simulated there: Simulate waits for it.
func (p *Predictor) Simulate(ctx context.Context, s controller.SimStep) (*controller.Simulated, error) {
	if a := p.ahead.take(s); a != nil {
		return a.wait(ctx)
	}
	st, err := p.prepare(s)
	if err != nil {
		return nil, err
	}
	return p.simulate(ctx, st)
}

// prepared is a step ready to simulate: its kind's model, its env and
// program, and what of the scenario the program leaves out.
type prepared struct {
	step    controller.SimStep
	model   *kind.Model
	env     *modelEnv
	prog    *sim.Program
	leftOut []string
}

// prepare builds a step's program.
func (p *Predictor) prepare(s controller.SimStep) (*prepared, error) {
	if p.plat == nil {
		return nil, fmt.Errorf("simulating step %d before the scenario's platform is made (Begin)", s.Index+1)
	}
	k, ok := kinds.Lookup(s.Workload.Kind)
	if !ok || k.Model == nil {
		return nil, noModel(s.Workload.Kind)
	}
	if s.Step.Spec == nil {
		return nil, fmt.Errorf("a step with no workload")
	}
	if p.Run == nil {
		return nil, fmt.Errorf("no simulator to run the step on")
	}
	env := &modelEnv{plat: p.plat, seed: s.Seed, params: p.Params, prefix: fmt.Sprintf("s%d/", s.Index)}
	actors, err := k.Model.Build(env, s.Step.Spec)
	if err != nil {
		return nil, fmt.Errorf("building the %s model's actors: %w", s.Workload.Kind, err)
	}
	plat, leftOut, err := p.plat.program(actors)
	if err != nil {
		return nil, fmt.Errorf("the %s model's actors: %w", s.Workload.Kind, err)
	}
	prog := &sim.Program{Platform: plat, Config: sim.Config{Seed: s.Seed, TCPWindow: TCPWindow, LatencyFactor: LatencyFactor, BandwidthFactor: BandwidthFactor},
		Actors: actors, Horizon: k.Model.HorizonOf(s.Step.Spec).Seconds()}
	return &prepared{step: s, model: k.Model, env: env, prog: prog, leftOut: leftOut}, nil
}

// simulate runs a prepared step on the simulator and reads its outcome.
func (p *Predictor) simulate(ctx context.Context, st *prepared) (*controller.Simulated, error) {
	prog, s := st.prog, st.step
	out, err := p.Run(ctx, prog)
	if err != nil {
		return nil, fmt.Errorf("simulating: %w", err)
	}
	o, err := st.model.Read(st.env, s.Step.Spec, out)
	if o == nil {
		if err == nil {
			err = fmt.Errorf("the %s model read nothing of the simulation", s.Workload.Kind)
		}
		return nil, err
	}
	if o.Metrics == nil {
		o.Metrics = results.Metrics{}
	}
	for _, l := range append(st.leftOut, workloadLeftOut(s.Workload)...) {
		o.Events = append(o.Events, LeftOutPrefix+l)
	}
	if !out.Ended && prog.Horizon == 0 {
		o.Events = append(o.Events, "the simulation ended before every actor of the step did")
	}
	o.Notes = append(o.Notes, fmt.Sprintf("simulated %.3f s of the step with %d actors on %d hosts and %d link directions", out.End, len(prog.Actors), len(prog.Platform.Hosts), len(prog.Platform.Links)))
	return &controller.Simulated{Outcome: o, Totals: p.plat.totals(out)}, err
}

// workloadLeftOut is what of a workload a simulation of its steps leaves
// out: its events, captures and watches.
func workloadLeftOut(w scenario.Workload) []string {
	var out []string
	if len(w.Events) > 0 {
		out = append(out, fmt.Sprintf("the workload's %d events (timed changes of links) are not simulated: the links keep their settings", len(w.Events)))
	}
	if w.Capture != nil {
		out = append(out, "the workload's packet captures: a simulation has no packets")
	}
	if len(w.Watch) > 0 {
		out = append(out, "the workload's watches of TCP connections: a simulation has flows, not TCP state")
	}
	return out
}

// totals are what a simulated step used of the hosts and links: each
// host's CPU in % of one core, each direction's bytes with its cross
// traffic's mean over the step.
func (p *platform) totals(out *sim.Output) controller.Totals {
	t := controller.Totals{Seconds: out.End, HostCPU: map[string]float64{}, DirBytes: map[string]uint64{}}
	if out.End <= 0 {
		return t
	}
	for _, h := range p.topo.Hosts {
		t.HostCPU[h.Name] = 100 * out.HostCPU[h.Name] / out.End
	}
	for _, d := range p.topo.Dirs {
		t.DirBytes[d.Name] = uint64(out.LinkBytes[d.Name] + p.cross[d.Name]/8*out.End)
	}
	return t
}

// modelEnv is what a kind's model builds and reads a step with.
type modelEnv struct {
	plat   *platform
	seed   uint64
	params map[string]float64
	// prefix is the step's, before each actor's name.
	prefix string
}

var _ kind.ModelEnv = (*modelEnv)(nil)

func (e *modelEnv) Seed() uint64 { return e.seed }

func (e *modelEnv) Hosts() []string {
	var names []string
	for _, h := range e.plat.topo.Hosts {
		names = append(names, h.Name)
	}
	return names
}

func (e *modelEnv) Path(from, to string) (kind.PathFacts, error) { return e.plat.path(from, to) }

// Name is the kind's own name after the step's ("s3/client.a.1"): a
// step's program holds one kind's actors, whose names the kind makes
// unique (its role, host and number); the platform refuses a program that
// names two actors alike.
func (e *modelEnv) Name(s string) string { return e.prefix + s }

func (e *modelEnv) Param(name string, declared float64) float64 {
	if v, ok := e.params[name]; ok {
		return v
	}
	return declared
}
