package predict

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/results"
)

// sweep is an eventdb sweep over jobs, each step's (throughput, mean job
// wall-clock), the steps in limited limited by the test-bed.
func sweep(steps [][2]float64, limited ...int) []analysis.Workload {
	w := analysis.Workload{Name: "ramp", Kind: results.EventDB}
	for i, s := range steps {
		jobs := []string{"1", "2", "4"}[i]
		w.Steps = append(w.Steps, analysis.Step{Index: i, Label: "jobs=" + jobs, Params: map[string]string{"jobs": jobs}, Status: "done",
			Metrics: results.Metrics{"throughput_mbps": s[0], "mean_wallclock_s": s[1], "jobs_ok": 1}, Seconds: s[1] * 2})
	}
	for _, i := range limited {
		w.Steps[i].TestbedLimited = true
	}
	return []analysis.Workload{w}
}

// TestCompare: each figure both runs have, step by step, with its error;
// the median and worst over the steps the test-bed did not limit (shown
// still); and whether the efficient-running boundary agrees.
func TestCompare(t *testing.T) {
	measured := sweep([][2]float64{{10, 1}, {18, 2}, {20, 30}}, 2)
	c := Compare(sweep([][2]float64{{9, 1.1}, {18, 2.5}, {21, 25}}), measured, analysis.DefaultOptions)
	if len(c.Steps) != 9 {
		t.Fatalf("rows %+v", c.Steps)
	}
	r := c.Steps[0]
	if r.Workload != "ramp" || r.Step != "jobs=1" || r.Figure != "throughput_mbps" || r.Predicted != 9 || r.Measured != 10 || *r.Error-0.1 > 1e-9 || r.LimitedByTestbed {
		t.Errorf("row %+v", r)
	}
	if last := c.Steps[8]; !last.LimitedByTestbed || last.Figure != SecondsFigure || last.Step != "jobs=4" {
		t.Errorf("limited row %+v", last)
	}
	// Errors of the first two steps: throughput 0.1, 0; wall-clock and
	// seconds 0.1, 0.25 each.
	if c.MedianError == nil || *c.MedianError-0.1 > 1e-9 || *c.WorstError != 0.25 {
		t.Errorf("median %v, worst %v", *c.MedianError, *c.WorstError)
	}
	if c.FindingsAgree == nil || *c.FindingsAgree != 1 {
		t.Errorf("findings agree %v: %+v", *c.FindingsAgree, c.Sweeps)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(b, &doc)
	if len(doc) != 5 || doc["steps"] == nil || doc["median_error"] == nil || doc["worst_error"] == nil || doc["findings_agree"] == nil {
		t.Errorf("JSON %s", b)
	}
	if !strings.Contains(string(b), `{"workload":"ramp","step":"jobs=1","figure":"throughput_mbps","predicted":9,"measured":10,"error":0.1,"limited_by_testbed":false}`) {
		t.Errorf("JSON row: %s", b)
	}

	// Predicted efficient up to 4 jobs, measured up to 2: they disagree.
	c = Compare(sweep([][2]float64{{10, 1}, {18, 2}, {20, 5}}), measured, analysis.DefaultOptions)
	if *c.FindingsAgree != 0 || len(c.Sweeps) != 1 || !strings.Contains(strings.Join(c.Sweeps[0].Differences, ";"), "efficient running holds up to 4 predicted, 2 measured") {
		t.Errorf("findings agree %v: %+v", *c.FindingsAgree, c.Sweeps)
	}
	if *c.MedianError != 0 {
		t.Errorf("median %v", *c.MedianError)
	}

	// A measured figure of 0: no error unless both are 0; nothing
	// compared, no errors.
	c = Compare(sweep([][2]float64{{1, 1}}), sweep([][2]float64{{0, 1}}), analysis.DefaultOptions)
	if c.Steps[0].Error != nil || *c.WorstError != 0 {
		t.Errorf("a measured 0: %+v, worst %v", c.Steps[0], *c.WorstError)
	}
	c = Compare(nil, measured, analysis.DefaultOptions)
	if len(c.Steps) != 0 || c.MedianError != nil || c.FindingsAgree != nil {
		t.Errorf("nothing compared: %+v", c)
	}
}

// TestAgree: a sweep's findings agree on the bottleneck at the step
// where the measured sweep peaks and on its boundary; a step near a
// boundary that names another bottleneck is counted among the steps, not
// against the sweep; a measured peak the test-bed limited is not compared.
func TestAgree(t *testing.T) {
	w := sweep([][2]float64{{10, 1}, {18, 2}, {20, 3}})[0] // peaks at jobs=4
	limited := sweep([][2]float64{{10, 1}, {18, 2}, {20, 3}}, 2)[0]
	report := func(steps ...string) *analysis.Report {
		r := &analysis.Report{Workloads: []analysis.WorkloadSteps{{Name: "ramp"}}}
		for i, b := range steps {
			r.Workloads[0].Steps = append(r.Workloads[0].Steps, analysis.StepVerdict{Index: i, Label: w.Steps[i].Label, Bottleneck: b})
		}
		return r
	}
	for _, tc := range []struct {
		name                 string
		measuredSweep        analysis.Workload
		predicted, measured  *analysis.Report
		agree                bool
		steps, stepsAgree    int
		difference, stepDiff string
	}{
		{"all agree", w, report("latency", "server_cpu", "server_cpu"), report("latency", "server_cpu", "server_cpu"), true, 3, 3, "", ""},
		{"a step near the boundary differs", w, report("latency", "latency", "server_cpu"), report("latency", "server_cpu", "server_cpu"), true, 3, 2, "",
			"step jobs=2: bottleneck latency predicted, server_cpu measured"},
		{"the peak differs", w, report("latency", "server_cpu", "network"), report("latency", "server_cpu", "server_cpu"), false, 3, 2,
			"the bottleneck at the measured peak (jobs=4): network predicted, server_cpu measured", "step jobs=4"},
		{"a limited measured peak is not compared", limited, report("latency", "server_cpu", "network"), report("latency", "server_cpu", analysis.Testbed), true, 2, 2, "", ""},
		{"no prediction of the measured peak", w, report("latency", "server_cpu"), report("latency", "server_cpu", "server_cpu"), false, 2, 2, "- predicted, server_cpu measured", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := agree(tc.measuredSweep, tc.measuredSweep, tc.measured, tc.predicted, 0, 0)
			if sw.Agree != tc.agree || sw.Steps != tc.steps || sw.StepsAgree != tc.stepsAgree {
				t.Fatalf("%+v", sw)
			}
			if d := strings.Join(sw.Differences, ";"); !strings.Contains(d, tc.difference) || (tc.difference == "") != (d == "") {
				t.Errorf("differences %q, want %q", d, tc.difference)
			}
			if d := strings.Join(sw.StepDifferences, ";"); !strings.Contains(d, tc.stepDiff) {
				t.Errorf("step differences %q, want %q", d, tc.stepDiff)
			}
		})
	}
}
