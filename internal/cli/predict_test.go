package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

var flowScenario = kindtest.SimToyScenario("flows")

// fakeFlows simulates every flow as 8 s long: a sender on a host that
// used half a core.
func fakeFlows(_ context.Context, p *sim.Program) (*sim.Output, error) {
	return &sim.Output{End: 8, Ended: true, HostCPU: map[string]float64{"a": 4}, LinkBytes: map[string]float64{"a->b": 1e6},
		Marks: []sim.MarkAt{{Actor: "sender", Label: "start", Iter: -1}, {Actor: "sender", Label: "end", T: 8, Iter: -1}}}, nil
}

// TestPredict runs wanlab predict through the CLI on a fake simulator: the
// prediction is stored as a run of backend simulated and shown as wanlab
// run shows a run, marked predicted (in runs too); --check compares it
// with a measured run of the same scenario (whose steps have no link
// figures, so no bottleneck: the steps' bottlenecks disagree, while neither
// sweep has one at its peak); a prediction is not
// checked against another.
func TestPredict(t *testing.T) {
	defer kinds.Register(kindtest.SimToy)()
	file, db := fakePrediction(t)
	out, code := cli(t, "predict", file, "--db", db)
	if code != exitOK || !strings.Contains(out, "run 1: "+file+" on test-bed flows, predicted (simulated on SimGrid): done") || !strings.Contains(out, "push (simtoy)") {
		t.Fatalf("predict: exit %d:\n%s", code, out)
	}
	out, code = cli(t, "predict", file, "--db", db, "--json", "--set", kindtest.SimToyCPU+"=0.9")
	var doc struct {
		Run     int64
		Backend string
		Steps   []struct{ Metrics map[string]float64 }
	}
	if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || doc.Backend != "simulated" || len(doc.Steps) != 2 ||
		doc.Steps[1].Metrics["throughput_mbps"] != 2 || doc.Steps[1].Metrics["cpu_pct.a"] != 50 {
		t.Fatalf("predict --json: exit %d, %v:\n%s", code, err, out)
	}
	measured := storeMeasured(t, db)
	out, code = cli(t, "predict", "--check", measured, "--db", db, "--json")
	var check map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &check); code != exitOK || err != nil || !hasKeys(check, "steps", "median_error", "worst_error", "findings_agree") {
		t.Fatalf("--check --json: exit %d, %v:\n%s", code, err, out)
	}
	var rows []map[string]any
	json.Unmarshal(check["steps"], &rows)
	if len(rows) != 6 || rows[0]["figure"] != "throughput_mbps" || rows[0]["measured"] != 1.25 || rows[0]["error"] != 0.2 || rows[5]["limited_by_testbed"] != true {
		t.Errorf("rows %v", rows)
	}
	if string(check["median_error"]) != "0.2" || string(check["worst_error"]) != "0.2" {
		t.Errorf("errors %s %s", check["median_error"], check["worst_error"])
	}
	out, code = cli(t, "predict", file, "--check", measured, "--db", db)
	for _, want := range []string{"simulated on SimGrid against run " + measured, "throughput_mbps", "error: median 20.0%, worst 20.0%", "findings agree in 1 of 1 sweeps",
		"step bottlenecks agree in 0 of 1 steps", "push: step bytes=1MB: bottleneck latency predicted, - measured", "marked !"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("--check: exit %d, no %q:\n%s", code, want, out)
		}
	}
	if out, code = cli(t, "runs", "--db", db); !strings.Contains(out, "predicted (simulated on SimGrid)") {
		t.Errorf("runs: exit %d:\n%s", code, out)
	}
	if _, code = cli(t, "predict", "--check", "1", "--db", db); code != exitUsage {
		t.Errorf("a prediction checked against a prediction: exit %d", code)
	}
	if _, code = cli(t, "predict", "--check", measured, "--db", db, "../scenario/testdata/two-hosts.good.yaml"); code != exitUsage {
		t.Errorf("--check with another scenario: exit %d", code)
	}
}

// hasKeys says whether doc has every key: the fields of a
// check, which it may add to.
func hasKeys(doc map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := doc[k]; !ok {
			return false
		}
	}
	return true
}

// storeMeasured stores a measured run of flowScenario, as wanlab run
// would: 1.25 Mbit/s at 1 MB, and 2.5 at 2 MB, a step the test-bed
// limited. It returns the run's number.
func storeMeasured(t *testing.T, db string) string {
	t.Helper()
	return storeRun(t, db, flowScenario, false)
}

// storeRun stores a measured run of scenario text as storeMeasured, its
// first step limited by the test-bed too when allLimited.
func storeRun(t *testing.T, db, text string, allLimited bool) string {
	t.Helper()
	ar, err := archive.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	id, err := ar.StartRun(archive.NewRun{Kind: "run", Name: "flows.yaml", Testbed: "flows", Scenario: text,
		Params: map[string]any{"source": "flows.yaml", "quick": false, "backend": "emulated"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range []struct {
		bytes   string
		mbps    float64
		limited bool
	}{{"1MB", 1.25, false}, {"2MB", 2.5, true}} {
		step, err := ar.StartStep(id, i, "push", "bytes="+s.bytes, map[string]string{"bytes": s.bytes})
		if err != nil {
			t.Fatal(err)
		}
		res := results.Step{Version: results.StepVersion, Kind: kindtest.SimToy.Name, Seconds: 10, TestbedLimited: s.limited || allLimited,
			Metrics: results.Metrics{"throughput_mbps": s.mbps, "sender_cpu_pct": 60}}
		if err := ar.EndStep(step, archive.StatusDone, "", res); err != nil {
			t.Fatal(err)
		}
	}
	if err := ar.EndRun(id, archive.StatusDone, "", nil); err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(id, 10)
}

// cli runs wanlab with args and returns what it printed on stdout (its
// stderr goes to the test's log) and its exit status.
func cli(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	t.Logf("wanlab %s: exit %d, stderr:\n%s", strings.Join(args, " "), code, errb.String())
	return out.String(), code
}

// TestPredictOnSimGrid runs a prediction on bin/wanlab-sim itself: one
// flow of 1 or 2 MB alone on a 10 Mbit/s path of 20 ms round trip gets
// close to, and no more than, 10 Mbit/s; so does a throughput test of
// the real kind, when its kind has a model.
func TestPredictOnSimGrid(t *testing.T) {
	if err := sim.Available(); err != nil {
		t.Skipf("no simulator to predict on: %v", err)
	}
	defer kinds.Register(kindtest.SimToy)()
	text := flowScenario
	if k, ok := kinds.Lookup(results.Throughput); ok && k.Model != nil {
		text += "  - name: test\n    throughput: {from: a, to: b, duration: 2s}\n"
	} else {
		t.Log("the throughput kind has no model yet: only the simtoy kind is predicted")
	}
	dir := t.TempDir()
	file, db := filepath.Join(dir, "flows.yaml"), filepath.Join(dir, "w.db")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := cli(t, "predict", file, "--db", db, "--json")
	type step struct {
		Workload string
		Status   string
		Reason   string
		Metrics  map[string]float64
	}
	var doc struct {
		Status string
		Steps  []step
	}
	if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || doc.Status != "done" || len(doc.Steps) < 2 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	for i, s := range doc.Steps {
		mbps := s.Metrics["throughput_mbps"]
		if s.Status != "done" || mbps > 10 || mbps < 7 {
			t.Errorf("step %d of %s: %s %s, %.2f Mbit/s, want 7 to 10 on a 10 Mbit/s path", i+1, s.Workload, s.Status, s.Reason, mbps)
		}
	}
	if !slices.ContainsFunc(doc.Steps, func(s step) bool { return s.Metrics["link_mbps.a->b"] > 0 }) {
		t.Errorf("no link carried the flows: %s", out)
	}
}

// fakePrediction makes wanlab predict simulate on fakeFlows for the test,
// and returns flowScenario's file and an archive's path, in a folder of
// the test's.
func fakePrediction(t *testing.T) (file, db string) {
	t.Helper()
	saved := simulator
	t.Cleanup(func() { simulator = saved })
	simulator.run, simulator.available = fakeFlows, func() error { return nil }
	dir := t.TempDir()
	file, db = filepath.Join(dir, "flows.yaml"), filepath.Join(dir, "w.db")
	if err := os.WriteFile(file, []byte(flowScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, db
}

// TestPredictCalibrate: --calibrate fits the toy kind's param (here a
// stand-in: its throughput over the path's rate) from a measured run (its
// one step the test-bed did not limit: 1.25 of 10 Mbit/s) and stores what it fitted and from which run; a prediction, a
// run of another shape (another rate, another workload) and a run with no
// usable step are refused with exit 2, the difference named.
func TestPredictCalibrate(t *testing.T) {
	fitting := kindtest.SimToy
	model := *kindtest.SimToy.Model
	model.Fit = func(env kind.ModelEnv, m kind.Measured) (map[string]float64, error) {
		return map[string]float64{kindtest.SimToyCPU: m.Metrics[results.ThroughputMbps] / 10}, nil
	}
	fitting.Model = &model
	defer kinds.Register(fitting)()
	file, db := fakePrediction(t)
	measured := storeMeasured(t, db)
	if out, code := cli(t, "predict", file, "--calibrate", measured, "--db", db); code != exitOK || !strings.Contains(out, "predicted") {
		t.Fatalf("--calibrate: exit %d:\n%s", code, out)
	}
	ar, err := archive.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ar.GetRun(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	events, err := ar.Events(context.Background(), 2)
	ar.Close()
	if err != nil {
		t.Fatal(err)
	}
	var params struct {
		CalibratedFrom int64              `json:"calibrated_from"`
		Calibrated     map[string]float64 `json:"calibrated"`
	}
	if err := json.Unmarshal(r.Params, &params); err != nil || params.CalibratedFrom != 1 || params.Calibrated[kindtest.SimToyCPU] != 0.125 {
		t.Errorf("the prediction's params %s (%v)", r.Params, err)
	}
	if !slices.ContainsFunc(events, func(e archive.Event) bool {
		return strings.Contains(e.Message, "calibrated from run 1: "+kindtest.SimToyCPU+"=0.125 (median of 1 step)")
	}) {
		t.Errorf("no event says what was calibrated: %v", events)
	}
	other := storeRun(t, db, strings.Replace(flowScenario, "rate: 10Mbit", "rate: 20Mbit", 1), false)
	renamed := storeRun(t, db, strings.Replace(flowScenario, "name: push", "name: pull", 1), false)
	limited := storeRun(t, db, flowScenario, true)
	for _, c := range []struct {
		name, run, want string
	}{
		{"a prediction", "2", "itself a prediction"},
		{"another rate", other, "link a->b: rate 20Mbit in the run, 10Mbit here"},
		{"another workload", renamed, "workload pull is in the run, not here"},
		{"no usable step", limited, "the test-bed limited it"},
	} {
		var out, errb bytes.Buffer
		code := run([]string{"predict", file, "--calibrate", c.run, "--db", db}, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d, want %d and %q:\n%s", c.name, code, exitUsage, c.want, errb.String())
		}
	}
}
