package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// TestANewKindIsPlottedByItsTraits: a kind the report has never heard of
// is plotted and its jobs' times drawn as its traits say.
func TestANewKindIsPlottedByItsTraits(t *testing.T) {
	defer kinds.Register(kind.Kind{Name: "toy", Traits: kind.Traits{
		Plot:     kind.Plot{Title: "copy rate", Unit: "copies/s", Figure: "copy_rate_hz"},
		JobTimes: "copy time",
	}})()
	wl := analysis.Workload{Name: "toy", Kind: "toy"}
	for i, rate := range []float64{3, 5, 6} {
		t0 := time.Unix(1_800_000_000, 0)
		wl.Steps = append(wl.Steps, analysis.Step{Index: i, Label: fmt.Sprintf("copies=%d", i+1), Status: "done",
			Params: map[string]string{"count": fmt.Sprint(i + 1)}, Metrics: map[string]float64{"copy_rate_hz": rate},
			Jobs: []job.Record{{Start: t0, End: t0.Add(time.Duration(i+1) * time.Second), Status: job.OK}}})
	}
	plots, err := sweepPlots(wl)
	if err != nil {
		t.Fatal(err)
	}
	if len(plots) != 1 || !strings.Contains(string(plots[0]), "toy: copy rate") || !strings.Contains(string(plots[0]), "copies/s") {
		t.Errorf("%d plots, the first without the kind's title and unit", len(plots))
	}
	if h, err := durations(wl); err != nil || !strings.Contains(string(h), "toy: copy time") {
		t.Errorf("the jobs' times are not drawn as the kind's (%v)", err)
	}
}
