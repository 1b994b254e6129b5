package controller

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// fakeSimulator simulates every step alike, and fails the steps of
// failing (by index) with no outcome.
type fakeSimulator struct {
	begun   *scenario.File
	steps   []SimStep
	failing int
}

func (f *fakeSimulator) Begin(file *scenario.File) ([]string, error) {
	f.begun = file
	return []string{"assumption: queues add no delay"}, nil
}

func (f *fakeSimulator) Simulate(_ context.Context, s SimStep) (*Simulated, error) {
	f.steps = append(f.steps, s)
	if s.Index == f.failing {
		return nil, errors.New("the toy kind has no simulation model")
	}
	return &Simulated{
		Outcome: &kind.Outcome{Metrics: results.Metrics{results.ThroughputMbps: 8}, Events: []string{"left out: jitter of a->b"}},
		Totals: Totals{Seconds: 10, HostCPU: map[string]float64{"s": 50, "c": 20}, DirBytes: map[string]uint64{"s->c": 10e6 / 8 * 10},
			// A simulator's test-bed load is ignored: there is no test-bed.
			Testbed: &TestbedLoad{Machine: 100, EngineCPU: 200}},
	}, nil
}

const simScenario = `name: sim
seed: 40
hosts:
  s: {cpus: 0.5}
  c: {}
links:
  - {between: [s, c], rate: 10Mbit, delay: 5ms}
workloads:
  - eventdb: {server: s, clients: [c]}
    sweep: {jobs: [1, 2, 4]}
`

// TestSimulatedRun: a run with a Simulator brings no test-bed up, stores
// backend simulated, the simulator's notes as the run's events, and each
// step's figures from its outcome and totals as a test-bed's step would
// have them (host and role CPU, link utilisation), without the engine's
// and machine's figures and never limited by the test-bed; a step the
// simulator refuses fails with its reason and the next runs.
func TestSimulatedRun(t *testing.T) {
	ar, err := archive.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	sim := &fakeSimulator{failing: 1}
	var progress []Progress
	res, err := Run(context.Background(), Options{Source: "sim.yaml", Text: []byte(simScenario), Archive: ar, Simulate: sim,
		Start: func(context.Context, string, []byte) (backend.Bed, error) {
			t.Fatal("a simulated run started a test-bed")
			return nil, nil
		},
		Progress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != archive.StatusPartial || res.Backend != BackendSimulated || len(res.Steps) != 3 {
		t.Fatalf("result %+v", res)
	}
	if sim.begun == nil || len(sim.steps) != 3 || sim.steps[2].Seed != 42 || sim.steps[2].Step.Label() != "jobs=4" {
		t.Errorf("simulated %+v", sim.steps)
	}
	if len(progress) == 0 || progress[len(progress)-1].Step != 3 {
		t.Errorf("progress %+v", progress)
	}
	s := res.Steps[0]
	want := results.Metrics{"throughput_mbps": 8, "cpu_pct.s": 50, "cpu_pct.c": 20, "cpu_quota_pct.s": 100, "server_cpu_pct": 50,
		"server_cpu_quota_pct": 100, "client_cpu_pct": 20, "link_mbps.s->c": 10, "link_utilization_pct.s->c": 100}
	for k, v := range want {
		if got, ok := s.Metrics[k]; !ok || got != v {
			t.Errorf("%s = %v (%v), want %v", k, got, ok, v)
		}
	}
	for _, k := range []string{"cpu_pct.engine", "cpu_pct.machine", "link_drops.s->c"} {
		if _, ok := s.Metrics[k]; ok {
			t.Errorf("a simulated step has %s: %v", k, s.Metrics)
		}
	}
	if s.Status != archive.StatusDone || s.TestbedLimited || s.Seconds != 10 {
		t.Errorf("step %+v", s)
	}
	if f := res.Steps[1]; f.Status != archive.StatusFailed || !strings.Contains(f.Reason, "no simulation model") {
		t.Errorf("refused step %+v", f)
	}
	run, err := ar.GetRun(context.Background(), res.Run)
	if err != nil {
		t.Fatal(err)
	}
	var params struct{ Backend string }
	if err := json.Unmarshal(run.Params, &params); err != nil || params.Backend != BackendSimulated {
		t.Errorf("params %s", run.Params)
	}
	events, err := ar.Events(context.Background(), res.Run)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, e := range events {
		said = append(said, e.Message)
	}
	for _, w := range []string{"assumption: queues add no delay", "left out: jitter of a->b", "the toy kind has no simulation model"} {
		if !slices.Contains(said, w) {
			t.Errorf("events %q lack %q", said, w)
		}
	}
}

// TestResumeKeepsTheBackend: a prediction is not resumed on a test-bed,
// nor a measured run by a simulator.
func TestResumeKeepsTheBackend(t *testing.T) {
	ar, err := archive.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	res, err := Run(context.Background(), Options{Source: "sim.yaml", Text: []byte(simScenario), Archive: ar, Simulate: &fakeSimulator{failing: 1}})
	if err != nil || res.Status != archive.StatusPartial {
		t.Fatalf("%+v, %v", res, err)
	}
	start := func(context.Context, string, []byte) (backend.Bed, error) { return nil, errors.New("no test-bed here") }
	if _, err := Run(context.Background(), Options{Resume: res.Run, Archive: ar, Start: start}); err == nil || !strings.Contains(err.Error(), "is a prediction (backend simulated)") {
		t.Errorf("a prediction resumed on a test-bed: %v", err)
	}
	measured, err := ar.StartRun(archive.NewRun{Kind: "run", Name: "sim.yaml", Scenario: simScenario, Params: map[string]any{"source": "sim.yaml", "backend": "emulated"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ar.EndRun(measured, archive.StatusInterrupted, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{Resume: measured, Archive: ar, Simulate: &fakeSimulator{}}); err == nil || !strings.Contains(err.Error(), "ran on emulated: a simulation cannot go on with it") {
		t.Errorf("a measured run resumed by a simulator: %v", err)
	}
}

// TestRunNeedsABackend: a run with neither Start nor Simulate is refused
// before it is stored.
func TestRunNeedsABackend(t *testing.T) {
	ar, err := archive.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	if _, err := Run(context.Background(), Options{Source: "sim.yaml", Text: []byte(simScenario), Archive: ar}); !errors.Is(err, errNoStart) {
		t.Errorf("got %v", err)
	}
}
