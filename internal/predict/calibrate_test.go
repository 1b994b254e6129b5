package predict

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

var shapeScenario = kindtest.SimToyScenario("shape")

// TestCalibrate: each step that is done and that the test-bed did not
// limit gives the toy's estimate (its sender's CPU over its seconds);
// the param is their median, with how many steps gave one; a run with
// none is refused with why.
func TestCalibrate(t *testing.T) {
	toy := toyKind
	model := *toyKind.Model
	model.Fit = func(env kind.ModelEnv, m kind.Measured) (map[string]float64, error) {
		if _, err := env.Path("a", "b"); err != nil {
			return nil, err
		}
		return map[string]float64{"toy_cpu_s": m.Metrics["cpu_pct.a"] / 100 * m.Seconds}, nil
	}
	toy.Model = &model
	defer kinds.Register(toy)()
	f, _ := platTopology(t, shapeScenario)
	step := func(status string, limited bool, cpu float64) analysis.Step {
		return analysis.Step{Label: "bytes=1MB", Status: status, TestbedLimited: limited, Seconds: 10,
			Metrics: results.Metrics{"cpu_pct.a": cpu}, Config: f.Workloads[0].Steps[0]}
	}
	run := func(steps ...analysis.Step) []analysis.Workload {
		return []analysis.Workload{{Name: "push", Kind: "simtoy", Testbed: f.Testbed, Steps: steps}}
	}
	for _, c := range []struct {
		name  string
		steps []analysis.Step
		want  float64
		n     int
	}{
		{"one step", []analysis.Step{step(archive.StatusDone, false, 10)}, 1, 1},
		{"median of three", []analysis.Step{step(archive.StatusDone, false, 10), step(archive.StatusDone, false, 30), step(archive.StatusDone, false, 90)}, 3, 3},
		{"median of two", []analysis.Step{step(archive.StatusDone, false, 10), step(archive.StatusDone, false, 30)}, 2, 2},
		{"limited and failed left out", []analysis.Step{step(archive.StatusDone, false, 10), step(archive.StatusDone, true, 90), step(archive.StatusFailed, false, 90)}, 1, 1},
	} {
		cal, err := Calibrate(7, run(c.steps...))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(cal.Fitted) != 1 || cal.Fitted[0].Value != c.want || cal.Fitted[0].Steps != c.n || cal.Params()["toy_cpu_s"] != c.want {
			t.Errorf("%s: fitted %+v, want toy_cpu_s=%g of %d steps", c.name, cal.Fitted, c.want, c.n)
		}
		if !strings.HasPrefix(cal.String(), "calibrated from run 7: toy_cpu_s=") {
			t.Errorf("%s: %s", c.name, cal)
		}
	}
	_, err := Calibrate(7, run(step(archive.StatusDone, true, 10), step(archive.StatusFailed, false, 10)))
	if !errors.Is(err, ErrNothingToFit) || !strings.Contains(err.Error(), "the test-bed limited it") || !strings.Contains(err.Error(), "failed, not done") {
		t.Errorf("no usable step: %v", err)
	}
}

// TestShapeDiff: a quick and a full run of a scenario are the same shape;
// another host, another rate, another delay or another workload is not,
// and is named.
func TestShapeDiff(t *testing.T) {
	defer kinds.Register(toyKind)()
	parse := func(text string, quick bool) *scenario.File {
		t.Helper()
		f, err := scenario.Parse("shape.yaml", []byte(text), quick)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	base := parse(shapeScenario, false)
	for _, c := range []struct {
		name, text string
		quick      bool
		want       []string
	}{
		{"same", shapeScenario, false, nil},
		{"quick vs full", shapeScenario, true, nil},
		{"another sweep", strings.Replace(shapeScenario, "[1MB, 2MB]", "[5MB]", 1), false, nil},
		{"another host", strings.Replace(shapeScenario, "  b: {}\n", "  b: {}\n  c: {}\n", 1), false, []string{"host c is in the run, not here"}},
		{"another quota", strings.Replace(shapeScenario, "cpus: 1", "cpus: 2", 1), false, []string{"host a: cpus 2 in the run, 1 here"}},
		{"another rate", strings.Replace(shapeScenario, "10Mbit", "20Mbit", 1), false,
			[]string{"link a->b: rate 20Mbit in the run, 10Mbit here", "link b->a: rate 20Mbit in the run, 10Mbit here"}},
		{"another delay", strings.Replace(shapeScenario, "10ms", "20ms", 1), false,
			[]string{"link a->b: delay 20ms in the run, 10ms here", "link b->a: delay 20ms in the run, 10ms here"}},
		{"another workload", strings.Replace(shapeScenario, "name: push", "name: pull", 1), false,
			[]string{"workload pull is in the run, not here", "workload push is here, not in the run"}},
	} {
		got := ShapeDiff(parse(c.text, c.quick), base)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
