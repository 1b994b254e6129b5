// Package controller runs a scenario: it brings its hosts up through a
// backend, runs every step of every workload's sweep while sampling the
// hosts and links, stores each step in the archive as soon as it ends, and
// lets the hosts go, whatever happens. A run cut short (Ctrl-C, a failure,
// a killed process) can be resumed from its first unfinished step. It is
// the one place that joins a backend, the agents and the archive.
package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/endpoints"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
)

// Options say what to run, on what, and where to keep it.
type Options struct {
	// Source names the scenario (a file or a built-in name); Text is its YAML.
	Source string
	Text   []byte
	Quick  bool
	// Resume, if not 0, continues that run of the archive instead: its
	// scenario and quick setting are the stored ones.
	Resume  int64
	Archive *archive.Archive
	Version string
	// Start brings up the scenario's hosts; the run closes the bed it returns.
	Start func(ctx context.Context, source string, text []byte) (backend.Bed, error)
	// Simulate, if set, simulates the steps instead: no hosts come up
	// (Start is not called), and the run's backend is BackendSimulated.
	Simulate Simulator
	// Backend says, for the archive, what the hosts are: emulated, or real
	// hosts of an inventory.
	Backend string
	// Progress, if set, is called as steps start and jobs end, and every second.
	Progress func(Progress)
	// CaptureDir is where the pcapng files of workloads' capture: go.
	CaptureDir string
	// Family is the address family the workloads test over where the
	// hosts have both, measure.IPv4 or measure.IPv6 (Family chooses it for
	// an emulated test-bed); "" lets the bed choose (real hosts: their
	// inventory's family:). A resumed run keeps the one it started with.
	Family string
	// RunParams are stored with the run's own params (what a prediction
	// was calibrated from); they do not replace those.
	RunParams map[string]any
}

// Progress is where a run stands.
type Progress struct {
	Step, Steps        int // Step counts from 1
	Workload, Label    string
	Expected, Finished int // jobs of this step
	Failed             int
	StepElapsed        time.Duration
	Elapsed            time.Duration
}

// Result is a run as it ended.
type Result struct {
	Run      int64        `json:"run"`
	Scenario string       `json:"scenario"`
	Testbed  string       `json:"testbed"`
	Quick    bool         `json:"quick"`
	Status   string       `json:"status"`
	Reason   string       `json:"reason,omitempty"`
	Seconds  float64      `json:"seconds"`
	Steps    []StepResult `json:"steps"`
	// Backend is what ran the steps: emulated, real hosts, or
	// BackendSimulated (the figures are predictions).
	Backend string `json:"backend,omitempty"`
	// Family is the address family the workloads tested over, "ipv4" or
	// "ipv6" ("" for a prediction, or hosts of mixed families).
	Family string `json:"family,omitempty"`
	// The archive and what the run stored in it.
	Archive     string `json:"archive"`
	Samples     int64  `json:"samples"`
	StoredBytes int64  `json:"stored_bytes"`
}

// StepResult is one step as it ended (docs/run-json.md).
type StepResult struct {
	Index    int               `json:"index"`
	Workload string            `json:"workload"`
	Kind     results.Kind      `json:"kind"`
	Label    string            `json:"label"`
	Params   map[string]string `json:"params"`
	Status   string            `json:"status"`
	Reason   string            `json:"reason,omitempty"`
	Seconds  float64           `json:"seconds"`
	// TestbedLimited says the emulator or the machine was saturated, so the
	// figures describe the test-bed rather than the scenario; LimitedBy says how.
	TestbedLimited bool     `json:"testbed_limited"`
	LimitedBy      []string `json:"limited_by,omitempty"`
	// Metrics are the step's figures by name, e.g. throughput_mbps,
	// mean_wallclock_s, cpu_pct.server; docs/run-json.md lists them.
	Metrics results.Metrics `json:"metrics"`
	// Resumed says the step was done by an earlier try of the run.
	Resumed bool `json:"resumed,omitempty"`
}

// stored is the step as the archive keeps it.
func (sr StepResult) stored() results.Step {
	return results.Step{Version: results.StepVersion, Kind: sr.Kind, Seconds: sr.Seconds, TestbedLimited: sr.TestbedLimited, LimitedBy: sr.LimitedBy, Metrics: sr.Metrics}
}

// plannedStep is one step of the flattened sweep.
type plannedStep struct {
	index    int
	workload scenario.Workload
	step     scenario.Step
}

func (p plannedStep) result() StepResult {
	return StepResult{Index: p.index, Workload: p.workload.Name, Kind: p.workload.Kind, Label: p.step.Label(), Params: params(p.step)}
}

// ErrInterrupted means the run was stopped (Ctrl-C) before it finished.
var ErrInterrupted = errors.New("interrupted")

// Run runs a scenario, or resumes a run. The returned result holds every
// step that ended, also when err is not nil.
func Run(ctx context.Context, o Options) (*Result, error) {
	a := o.Archive
	if _, err := a.MarkAbandoned(ctx); err != nil {
		return nil, fmt.Errorf("checking the archive for abandoned runs: %w", err)
	}
	done := map[int]archive.Step{}
	if o.Resume != 0 {
		var err error
		if done, err = resumable(ctx, &o); err != nil {
			return nil, err
		}
	}
	f, err := scenario.Parse(o.Source, o.Text, o.Quick)
	if err != nil {
		return nil, err
	}
	var plan []plannedStep
	for _, w := range f.Workloads {
		for _, s := range w.Steps {
			plan = append(plan, plannedStep{index: len(plan), workload: w, step: s})
		}
	}
	if len(plan) == 0 {
		return nil, &scenario.Error{File: o.Source, Problems: []scenario.Problem{{Line: 1, Field: "workloads", Msg: "no workloads to run: add a workloads: list (see docs/scenario.md)"}}}
	}
	if o.Simulate != nil {
		o.Backend = BackendSimulated
	} else if o.Start == nil {
		return nil, errNoStart
	}
	res := &Result{Scenario: o.Source, Testbed: f.Testbed.Name, Quick: o.Quick, Archive: a.Location(), Run: o.Resume, Backend: o.Backend}
	if o.Resume != 0 {
		if err := a.ResumeRun(o.Resume); err != nil {
			return nil, err
		}
	} else {
		params := map[string]any{}
		maps.Copy(params, o.RunParams)
		maps.Copy(params, map[string]any{"source": o.Source, "quick": o.Quick, "steps": len(plan), "backend": o.Backend})
		if o.Family != "" && o.Simulate == nil {
			params["family"] = o.Family
		}
		res.Run, err = a.StartRun(archive.NewRun{Kind: "run", Name: o.Source, Testbed: f.Testbed.Name, Version: o.Version,
			Params: params, Scenario: string(o.Text), Machine: machineFacts()})
		if err != nil {
			return nil, err
		}
	}
	start := time.Now()
	runErr := execute(ctx, o, f, plan, done, res)
	res.Seconds = time.Since(start).Seconds()
	res.Status, res.Reason = endStatus(runErr, res.Steps)
	summary := map[string]any{"steps": len(plan), "seconds": res.Seconds}
	if err := a.EndRun(res.Run, res.Status, res.Reason, summary); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("archive %s: %w", a.Location(), err))
	}
	if r, err := a.GetRun(context.WithoutCancel(ctx), res.Run); err == nil {
		res.Samples = r.Samples
	}
	res.StoredBytes, _ = a.StoredBytes(context.WithoutCancel(ctx), res.Run)
	return res, runErr
}

// resumable checks that run o.Resume can be resumed, sets o to its
// scenario and quick setting, and returns its steps that are done.
func resumable(ctx context.Context, o *Options) (map[int]archive.Step, error) {
	prev, err := o.Archive.GetRun(ctx, o.Resume)
	if err != nil {
		return nil, err
	}
	switch {
	case prev.Kind != "run":
		return nil, fmt.Errorf("run %d is a %q, not a scenario run: only those can be resumed", prev.ID, prev.Kind)
	case prev.Status == archive.StatusDone:
		return nil, fmt.Errorf("run %d finished (status done): nothing to resume", prev.ID)
	case prev.Status == archive.StatusRunning:
		return nil, fmt.Errorf("run %d is still running in another wanlab process", prev.ID)
	}
	var params struct {
		Source  string `json:"source"`
		Quick   bool   `json:"quick"`
		Backend string `json:"backend"`
		Family  string `json:"family"`
	}
	if err := json.Unmarshal(prev.Params, &params); err != nil {
		return nil, fmt.Errorf("run %d: reading its parameters: %w", prev.ID, err)
	}
	if simulated := params.Backend == BackendSimulated; simulated != (o.Simulate != nil) {
		if simulated {
			return nil, fmt.Errorf("run %d is a prediction (backend %s): a test-bed cannot go on with it; predict the scenario again", prev.ID, params.Backend)
		}
		return nil, fmt.Errorf("run %d ran on %s: a simulation cannot go on with it", prev.ID, params.Backend)
	}
	if o.Family != "" && o.Family != params.Family {
		return nil, fmt.Errorf("run %d tested over %s: a resumed run keeps its address family", prev.ID, orWord(params.Family, "the hosts' own family"))
	}
	o.Source, o.Text, o.Quick, o.Family = params.Source, []byte(prev.Scenario), params.Quick, params.Family
	steps, err := o.Archive.Steps(ctx, prev.ID)
	if err != nil {
		return nil, err
	}
	done := map[int]archive.Step{}
	for _, s := range steps {
		if s.Status == archive.StatusDone {
			done[s.Index] = s
		}
	}
	return done, nil
}

// endStatus is how a run ended, from its error and its steps.
func endStatus(runErr error, steps []StepResult) (status, reason string) {
	switch {
	case errors.Is(runErr, ErrInterrupted):
		return archive.StatusInterrupted, runErr.Error()
	case runErr != nil:
		return archive.StatusFailed, runErr.Error()
	case slices.ContainsFunc(steps, func(s StepResult) bool { return s.Status != archive.StatusDone }):
		return archive.StatusPartial, "some steps failed"
	}
	return archive.StatusDone, ""
}

// execute brings the hosts up, runs the steps not yet done and lets the
// hosts go.
func execute(ctx context.Context, o Options, f *scenario.File, plan []plannedStep, done map[int]archive.Step, res *Result) (err error) {
	if o.Simulate != nil {
		return simulate(ctx, o, f, plan, done, res)
	}
	bed, err := o.Start(ctx, o.Source, o.Text)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w while the test-bed came up (%v)", ErrInterrupted, context.Cause(ctx))
		}
		return fmt.Errorf("bringing up test-bed %q: %w", res.Testbed, err)
	}
	defer func() { err = errors.Join(err, bed.Close()) }()
	if mn, ok := bed.(backend.MachineNotes); ok {
		for _, line := range mn.MachineNotes() {
			if err := o.Archive.AddEvent(res.Run, 0, archive.Info, line); err != nil {
				return err
			}
		}
	}
	var names []string
	for _, h := range bed.Topology().Hosts {
		names = append(names, h.Name)
	}
	hosts, err := endpoints.DialFamily(ctx, bed, o.Family, names...)
	if err != nil {
		return err
	}
	defer measure.CloseAll(hosts)
	res.Family = testFamily(hosts)
	if err := o.Archive.AddEvent(res.Run, 0, archive.Info, familyNote(res.Family, hosts)); err != nil {
		return err
	}
	r := &runner{o: o, bed: bed, hosts: hosts, run: res.Run, steps: len(plan), start: time.Now(), seed: f.Testbed.Seed, recorded: time.Now()}
	if len(f.Events) > 0 {
		stop, err := r.timeline("run", f.Events, r.start)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop(), r.recordChanges(0)) }()
	}
	return r.each(ctx, plan, done, res, r.step)
}

// resumedStep is a step an earlier try of the run did, as it stored it.
func resumedStep(p plannedStep, prev archive.Step) StepResult {
	sr := p.result()
	sr.Status, sr.Reason, sr.Resumed = prev.Status, prev.Reason, true
	if stored, err := results.DecodeStep(prev.Result); err == nil {
		sr.Seconds, sr.TestbedLimited, sr.LimitedBy, sr.Metrics = stored.Seconds, stored.TestbedLimited, stored.LimitedBy, stored.Metrics
	}
	return sr
}

// agentWait is how long a step waits for an agent that is restarting (the
// test-bed daemon restarts one that died).
const agentWait = 15 * time.Second

func params(s scenario.Step) map[string]string {
	m := map[string]string{}
	for _, p := range s.Params {
		m[p.Name] = p.Value
	}
	return m
}

// machineFacts are what a run records about the machine it ran on.
func machineFacts() map[string]any {
	host, _ := os.Hostname()
	facts := map[string]any{"hostname": host, "cpus": runtime.NumCPU(), "go": runtime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		facts["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control"); err == nil {
		facts["congestion_controls"] = strings.Fields(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if line, _, ok := strings.Cut(string(b), "\n"); ok {
			facts["memory"] = strings.Join(strings.Fields(line)[1:], " ")
		}
	}
	return facts
}

// orWord is s, or word when s is empty.
func orWord(s, word string) string {
	if s == "" {
		return word
	}
	return s
}
