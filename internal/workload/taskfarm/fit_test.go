package taskfarm

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// TestFit: over 100 tasks done in 10 s, the master's 5% of a core is 5
// ms a task, and the workers' 150% (CPU work) 150 ms a task; tasks asleep
// fit no task time, and a master that shares a worker's host fits
// nothing.
func TestFit(t *testing.T) {
	metrics := results.Metrics{results.TasksDone: 100, "cpu_pct.m": 5, "cpu_pct.w1": 100, "cpu_pct.w2": 50}
	spec := func(work string, workers ...string) *Spec {
		return &Spec{Master: "m", Workers: workers, Count: 2, Tasks: 100, Duration: 100 * time.Millisecond, Work: work}
	}
	for _, c := range []struct {
		name string
		spec *Spec
		want map[string]float64
	}{
		{"cpu work", spec(WorkCPU, "w1", "w2"), map[string]float64{ParamMasterCPU: 5e-3, ParamTaskSeconds: 0.15}},
		{"asleep", spec(WorkSleep, "w1", "w2"), map[string]float64{ParamMasterCPU: 5e-3}},
		{"a shared host", spec(WorkCPU, "m", "w2"), map[string]float64{}},
	} {
		got, err := fit(&kindtest.ModelEnv{}, kind.Measured{Spec: c.spec, Metrics: metrics, Seconds: 10})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		kindtest.CheckFit(t, c.name, got, c.want)
	}
}
