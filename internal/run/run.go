// Package run runs a scenario: it brings up the test-bed, runs every step of
// every workload's sweep while sampling the hosts and links, stores each
// step in the archive as soon as it ends, and tears the test-bed down,
// whatever happens. A run cut short (Ctrl-C, a failure, a killed process)
// can be resumed from its first unfinished step.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/testbed"
)

// Options say what to run and where to keep it.
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
	// Progress, if set, is called as steps start and jobs end, and every second.
	Progress func(Progress)
}

// Progress is where a run stands.
type Progress struct {
	Step, Steps        int // Step counts from 1
	Workload, Label    string
	Expected, Finished int // jobs of this step
	Failed             int
	StepElapsed        time.Duration
	Elapsed            time.Duration
	// Remaining estimates the rest of the run from the steps done so far; 0
	// until one is done.
	Remaining time.Duration
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
	// The archive and what the run stored in it.
	Archive     string `json:"archive"`
	Samples     int64  `json:"samples"`
	StoredBytes int64  `json:"stored_bytes"`
}

// StepResult is one step as it ended.
type StepResult struct {
	Index    int               `json:"index"`
	Workload string            `json:"workload"`
	Kind     string            `json:"kind"`
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
	Metrics map[string]float64 `json:"metrics"`
	// Resumed says the step was done by an earlier try of the run.
	Resumed bool `json:"resumed,omitempty"`
}

// plannedStep is one step of the flattened sweep.
type plannedStep struct {
	index    int
	workload scenario.Workload
	step     scenario.Step
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
		prev, err := a.GetRun(ctx, o.Resume)
		if err != nil {
			return nil, err
		}
		if prev.Kind != "run" {
			return nil, fmt.Errorf("run %d is a %q, not a scenario run: only those can be resumed", prev.ID, prev.Kind)
		}
		if prev.Status == archive.StatusDone {
			return nil, fmt.Errorf("run %d finished (status done): nothing to resume", prev.ID)
		}
		if prev.Status == archive.StatusRunning {
			return nil, fmt.Errorf("run %d is still running in another wanlab process", prev.ID)
		}
		var params struct {
			Source string `json:"source"`
			Quick  bool   `json:"quick"`
		}
		json.Unmarshal(prev.Params, &params)
		o.Source, o.Text, o.Quick = params.Source, []byte(prev.Scenario), params.Quick
		steps, err := a.Steps(ctx, prev.ID)
		if err != nil {
			return nil, err
		}
		for _, s := range steps {
			if s.Status == archive.StatusDone {
				done[s.Index] = s
			}
		}
	}
	f, err := scenario.ParseFile(o.Source, o.Text, o.Quick)
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
	res := &Result{Scenario: o.Source, Testbed: f.Testbed.Name, Quick: o.Quick, Archive: a.Location()}
	if o.Resume != 0 {
		res.Run = o.Resume
		if err := a.ResumeRun(o.Resume); err != nil {
			return nil, err
		}
	} else {
		res.Run, err = a.StartRun(archive.NewRun{Kind: "run", Name: o.Source, Testbed: f.Testbed.Name, Version: o.Version,
			Params: map[string]any{"source": o.Source, "quick": o.Quick, "steps": len(plan)}, Scenario: string(o.Text), Machine: machineFacts()})
		if err != nil {
			return nil, err
		}
	}
	start := time.Now()
	runErr := execute(ctx, o, f, plan, done, res)
	res.Seconds = time.Since(start).Seconds()

	res.Status, res.Reason = archive.StatusDone, ""
	failed := slices.ContainsFunc(res.Steps, func(s StepResult) bool { return s.Status != archive.StatusDone })
	switch {
	case errors.Is(runErr, ErrInterrupted):
		res.Status, res.Reason = archive.StatusInterrupted, runErr.Error()
	case runErr != nil:
		res.Status, res.Reason = archive.StatusFailed, runErr.Error()
	case failed:
		res.Status, res.Reason = archive.StatusPartial, "some steps failed"
	}
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

// execute brings the test-bed up, runs the steps not yet done and tears the
// test-bed down.
func execute(ctx context.Context, o Options, f *scenario.File, plan []plannedStep, done map[int]archive.Step, res *Result) (err error) {
	up, err := testbed.UpFor(ctx, o.Source, o.Text, os.Getpid())
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w while the test-bed came up (%v)", ErrInterrupted, context.Cause(ctx))
		}
		return fmt.Errorf("bringing up test-bed %q: %w", f.Testbed.Name, err)
	}
	defer func() {
		if derr := testbed.Down(f.Testbed.Name); derr != nil {
			err = errors.Join(err, fmt.Errorf("tearing down test-bed %q: %w", f.Testbed.Name, derr))
		}
	}()
	hosts, err := connectAll(ctx, up.State)
	if err != nil {
		return err
	}
	defer func() {
		for _, h := range hosts {
			h.Agent.Close()
		}
	}()
	start := time.Now()
	var stepTimes []time.Duration
	for _, p := range plan {
		if prev, ok := done[p.index]; ok {
			sr := StepResult{Index: p.index, Workload: p.workload.Name, Kind: p.workload.Kind, Label: p.step.Label(), Params: params(p.step),
				Status: prev.Status, Resumed: true}
			json.Unmarshal(prev.Result, &sr)
			sr.Resumed = true
			res.Steps = append(res.Steps, sr)
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w before step %d (%v)", ErrInterrupted, p.index+1, context.Cause(ctx))
		}
		began := time.Now()
		sr, err := runStep(ctx, o, f, p, hosts, up.State, res.Run, func(pr Progress) {
			pr.Elapsed = time.Since(start)
			if n := len(stepTimes); n > 0 {
				var sum time.Duration
				for _, d := range stepTimes {
					sum += d
				}
				left := len(plan) - p.index - 1
				pr.Remaining = max(0, sum/time.Duration(n)-pr.StepElapsed) + time.Duration(left)*sum/time.Duration(n)
			}
			pr.Steps = len(plan)
			if o.Progress != nil {
				o.Progress(pr)
			}
		})
		stepTimes = append(stepTimes, time.Since(began))
		res.Steps = append(res.Steps, sr)
		if err != nil {
			// The archive could not store the step: stop here.
			return fmt.Errorf("archive %s: %w (the steps before are kept; when it can be written again, wanlab run --resume %d --db %s goes on)",
				o.Archive.Location(), err, res.Run, o.Archive.Location())
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w during step %d (%v)", ErrInterrupted, p.index+1, context.Cause(ctx))
		}
	}
	return nil
}

// connectAll dials the agent of every host of a test-bed just brought up.
func connectAll(ctx context.Context, st *testbed.State) (map[string]measure.Endpoint, error) {
	hosts := map[string]measure.Endpoint{}
	for _, h := range st.Hosts {
		c, err := agent.Dial(ctx, h.Name, testbed.AgentSocket(st.Name, h.Name))
		if err != nil {
			for _, e := range hosts {
				e.Agent.Close()
			}
			return nil, err
		}
		hosts[h.Name] = measure.Endpoint{Host: h.Name, Addr: h.Addr, Agent: c}
	}
	return hosts, nil
}

// agentWait is how long a step waits for an agent that is restarting (the
// test-bed daemon restarts one that died).
const agentWait = 15 * time.Second

// waitForAgents checks that every host's agent answers before a step starts.
func waitForAgents(ctx context.Context, hosts map[string]measure.Endpoint) error {
	ctx, cancel := context.WithTimeout(ctx, agentWait)
	defer cancel()
	var errs []error
	for _, h := range hosts {
		if _, err := h.Agent.Hello(ctx, &agentpb.HelloRequest{ApiVersion: agent.APIVersion}, grpc.WaitForReady(true)); err != nil {
			errs = append(errs, fmt.Errorf("the agent on %s did not answer within %v: %w", h.Host, agentWait, err))
		}
	}
	return errors.Join(errs...)
}

func params(s scenario.Step) map[string]string {
	m := map[string]string{}
	for _, p := range s.Params {
		m[p.Name] = p.Value
	}
	return m
}

// runStep runs one step under the sampler and stores it. Its error is only
// for a failure to store; how the step itself went is in the result.
func runStep(ctx context.Context, o Options, f *scenario.File, p plannedStep, hosts map[string]measure.Endpoint, st *testbed.State, run int64, progress func(Progress)) (StepResult, error) {
	a := o.Archive
	sr := StepResult{Index: p.index, Workload: p.workload.Name, Kind: p.workload.Kind, Label: p.step.Label(), Params: params(p.step)}
	stepID, err := a.StartStep(run, p.index, p.workload.Name, sr.Label, sr.Params)
	if err != nil {
		return sr, err
	}
	env := &stepEnv{hosts: hosts, state: st, tb: f.Testbed, seed: f.Testbed.Seed + uint64(p.index), id: "step" + strconv.Itoa(p.index),
		expected: &counter{}, finished: &counter{}, failed: &counter{}}

	if err := waitForAgents(ctx, hosts); err != nil {
		sr.Status, sr.Reason = archive.StatusFailed, err.Error()
		return sr, errors.Join(a.AddEvent(run, stepID, archive.Failure, sr.Reason), a.EndStep(stepID, sr.Status, sr.Reason, stepSummary(sr)))
	}
	began := time.Now()
	report := func() {
		progress(Progress{Step: p.index + 1, Workload: p.workload.Name, Label: sr.Label,
			Expected: env.expected.get(), Finished: env.finished.get(), Failed: env.failed.get(), StepElapsed: time.Since(began)})
	}
	report()
	sampleCtx, stopSampling := context.WithCancel(context.WithoutCancel(ctx))
	smp := newSampler(st)
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() { defer sampled.Done(); smp.run(sampleCtx) }()
	ticker := time.NewTicker(time.Second)
	tickDone := make(chan struct{})
	go func() {
		for {
			select {
			case <-ticker.C:
				report()
			case <-tickDone:
				return
			}
		}
	}()

	out, stepErr := execStep(ctx, env, p.step)

	ticker.Stop()
	close(tickDone)
	stopSampling()
	sampled.Wait()
	report()
	sr.Seconds = time.Since(began).Seconds()
	if out == nil {
		out = &outcome{metrics: map[string]float64{}}
	}
	sr.Metrics = out.metrics
	for h, pct := range smp.hostCPU {
		sr.Metrics["cpu_pct."+h] = pct
		if hp, _ := f.Testbed.Host(h); hp.CPUs > 0 {
			sr.Metrics["cpu_quota_pct."+h] = pct / hp.CPUs
		}
	}
	for _, h := range st.Hosts {
		read, ok := smp.diskRead[h.Name]
		if !ok {
			continue
		}
		write := smp.diskWrite[h.Name]
		sr.Metrics["disk_read_mbs."+h.Name] = read / 1e6
		sr.Metrics["disk_write_mbs."+h.Name] = write / 1e6
		if h.DiskReadBps > 0 {
			sr.Metrics["disk_read_pct."+h.Name] = 100 * read / float64(h.DiskReadBps)
		}
		if h.DiskWriteBps > 0 {
			sr.Metrics["disk_write_pct."+h.Name] = 100 * write / float64(h.DiskWriteBps)
		}
	}
	roleCPU(sr.Metrics, p.step)
	sr.Metrics["cpu_pct.engine"] = smp.engineCPU
	sr.Metrics["cpu_pct.machine"] = smp.machine
	for _, d := range st.Dirs {
		if b, ok := smp.dirBytes[d.Name]; ok && smp.seconds > 0 {
			sr.Metrics["link_mbps."+d.Name] = float64(b) * 8 / smp.seconds / 1e6
			if d.Config.Rate > 0 {
				sr.Metrics["link_utilization_pct."+d.Name] = 100 * float64(b) * 8 / smp.seconds / float64(d.Config.Rate)
			}
			sr.Metrics["link_drops."+d.Name] = float64(smp.dirDrops[d.Name])
		}
	}
	sr.LimitedBy = smp.limits()
	sr.TestbedLimited = len(sr.LimitedBy) > 0

	sr.Status = archive.StatusDone
	switch {
	case ctx.Err() != nil:
		sr.Status, sr.Reason = archive.StatusInterrupted, fmt.Sprintf("interrupted (%v)", context.Cause(ctx))
	case stepErr != nil && len(out.jobs) == 0 && len(out.samples) == 0 && len(out.metrics) == 0:
		sr.Status, sr.Reason = archive.StatusFailed, stepErr.Error()
	case stepErr != nil:
		sr.Status, sr.Reason = archive.StatusPartial, stepErr.Error()
	}

	// Store everything measured before the next step starts.
	var events []string
	if sr.TestbedLimited {
		events = append(events, "the test-bed limited this step: "+strings.Join(sr.LimitedBy, "; "))
	}
	if n := sr.Metrics["jobs_timeout"]; n > 0 {
		events = append(events, fmt.Sprintf("%.0f jobs timed out", n))
	}
	if n := sr.Metrics["jobs_failed"] + sr.Metrics["jobs_corrupt"]; n > 0 {
		events = append(events, fmt.Sprintf("%.0f jobs failed or arrived corrupt", n))
	}
	events = append(events, out.events...)
	storeErr := errors.Join(
		a.AddSamples(run, stepID, append(out.samples, smp.samples...)),
		a.AddJobs(run, stepID, out.jobs),
	)
	for _, e := range events {
		storeErr = errors.Join(storeErr, a.AddEvent(run, stepID, archive.Warning, e))
	}
	if storeErr != nil {
		// What was measured is not all in the archive: the step is not
		// done, and a resumed run does it again.
		sr.Status, sr.Reason = archive.StatusFailed, fmt.Sprintf("storing what it measured: %v", storeErr)
	}
	if sr.Status != archive.StatusDone {
		storeErr = errors.Join(storeErr, a.AddEvent(run, stepID, archive.Failure, sr.Reason))
	}
	storeErr = errors.Join(storeErr, a.EndStep(stepID, sr.Status, sr.Reason, stepSummary(sr)))
	return sr, storeErr
}

// roleCPU adds the CPU figures of a workload's roles: the mean over the
// role's hosts of cpu_pct.HOST as ROLE_cpu_pct, and of the share of quota.
func roleCPU(m map[string]float64, s scenario.Step) {
	alias := func(role string, hosts ...string) {
		for _, metric := range []string{"cpu_pct", "cpu_quota_pct"} {
			sum, n := 0.0, 0
			for _, h := range hosts {
				if v, ok := m[metric+"."+h]; ok {
					sum += v
					n++
				}
			}
			if n > 0 {
				m[role+"_"+metric] = sum / float64(n)
			}
		}
	}
	switch {
	case s.EventDB != nil:
		alias("server", s.EventDB.Server)
		alias("client", s.EventDB.Clients...)
	case s.TaskFarm != nil:
		alias("master", s.TaskFarm.Master)
		alias("worker", s.TaskFarm.Workers...)
	}
}

// stepSummary is what the archive keeps as a step's result.
func stepSummary(sr StepResult) map[string]any {
	return map[string]any{"metrics": sr.Metrics, "seconds": sr.Seconds, "testbed_limited": sr.TestbedLimited, "limited_by": sr.LimitedBy, "kind": sr.Kind}
}

// machineFacts are what a run records about the machine it ran on.
func machineFacts() map[string]any {
	host, _ := os.Hostname()
	facts := map[string]any{"hostname": host, "cpus": runtime.NumCPU(), "go": runtime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		facts["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if line, _, ok := strings.Cut(string(b), "\n"); ok {
			facts["memory"] = strings.Join(strings.Fields(line)[1:], " ")
		}
	}
	return facts
}

// MetricNames lists a step's metric names in a stable order.
func (s StepResult) MetricNames() []string {
	return slices.Sorted(maps.Keys(s.Metrics))
}
