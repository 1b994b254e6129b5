package analysis

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/golden"
)

// TestUnlimited: a workload whose steps the test-bed limited gets one
// finding, after the one that says so: with a prediction, what it shows
// of those steps (figures, bottleneck) and where its sweep stops growing
// and its efficient running ends, naming the prediction as simulated;
// without, the command that makes one. A workload the test-bed did not
// limit gets none, and a prediction without the workload says so.
func TestUnlimited(t *testing.T) {
	measured := ramp(t)
	for _, i := range []int{6, 7} {
		measured.Steps[i].TestbedLimited = true
	}
	calm := ramp(t)
	calm.Name = "calm"
	predicted := ramp(t)
	p := &Prediction{Run: 7, Workloads: []Workload{predicted}, Report: Of([]Workload{predicted}, DefaultOptions)}

	with := Unlimited([]Workload{measured, calm}, p, "")
	without := Unlimited([]Workload{measured, calm}, nil, "wanlab predict ramp.yaml --check 3 --db w.db")
	elsewhere := Unlimited([]Workload{measured}, &Prediction{Run: 8, Report: &Report{}}, "")
	if len(with) != 1 || len(without) != 1 || len(elsewhere) != 1 {
		t.Fatalf("findings: %d with a prediction, %d without, %d of another workload; want 1 each", len(with), len(without), len(elsewhere))
	}
	f := with[0]
	if f.Kind != PredictionFinding || f.Workload != "ramp" || f.Values["prediction_run"] != 7 || f.Values["steps"] != 2 ||
		f.Values["knee_concurrency"] != 30 || f.Values["peak_concurrency"] != 40 || f.Values["boundary_concurrency"] != 30 {
		t.Errorf("finding %+v", f)
	}
	if !strings.Contains(elsewhere[0].Text, "prediction run 8 (simulated on SimGrid; a larger machine can confirm it) shows nothing of this workload") {
		t.Errorf("a prediction without the workload: %s", elsewhere[0].Text)
	}
	var b strings.Builder
	for _, f := range append(with, without...) {
		fmt.Fprintf(&b, "%s: %s\n", f.Workload, f.Text)
	}
	golden.Check(t, "testdata/unlimited.txt", b.String())

	// Into a report: after the finding that says the test-bed limited
	// the workload.
	rep := Of([]Workload{measured}, DefaultOptions)
	at := -1
	for i, f := range rep.Findings {
		if f.Kind == "testbed" {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("no testbed finding in %+v", rep.Findings)
	}
	rep.AddUnlimited(with)
	if got := rep.Findings[at+1]; got.Kind != PredictionFinding {
		t.Errorf("after the testbed finding: %+v", got)
	}
	rep = &Report{}
	rep.AddUnlimited(without)
	if len(rep.Findings) != 1 {
		t.Errorf("into a report with no testbed finding: %+v", rep.Findings)
	}
}
