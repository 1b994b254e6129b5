package analysis

// What latency costs a task farm.

import (
	"fmt"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// taskFarm compares each step's task rate with the ideal and estimates the
// task duration from which latency costs under 5%.
func taskFarm(w Workload) []Finding {
	var out []Finding
	var overheads []float64
	for _, s := range w.Steps {
		f, ok := spec[kind.Farmed](s)
		if !ok || s.value(results.Seconds) <= 0 || s.value(results.TasksDone) == 0 {
			continue
		}
		t := f.Farm()
		ideal := float64(t.Workers) / max(t.Task.Seconds(), 1e-9)
		perTask := s.value(results.Seconds) * float64(t.Workers) / s.value(results.TasksDone) // a worker's time per task
		overhead := max(0, perTask-t.Task.Seconds())
		overheads = append(overheads, overhead)
		values := map[string]float64{"task_rate_hz": s.value(results.TaskRateHz), "ideal_rate_hz": ideal, "efficiency": s.value(results.Efficiency),
			"latency_share": 1 - min(1, s.value(results.Efficiency)), "overhead_per_task_s": overhead, "duration_s": t.Task.Seconds(), "prefetch": float64(t.Prefetch)}
		text := fmt.Sprintf("%s: %.2f tasks/s of an ideal %.2f (%d workers, %s tasks, prefetch %d): %.0f%% of the time lost to the network, %.3f s per task.",
			orStep(s), s.value(results.TaskRateHz), ideal, t.Workers, units.FormatDuration(t.Task), t.Prefetch, 100*values["latency_share"], overhead)
		if t.Task == 0 {
			values["ideal_rate_hz"] = 0
			text = fmt.Sprintf("%s: %.0f tasks/s with %d workers on zero-length tasks (prefetch %d).", orStep(s), s.value(results.TaskRateHz), t.Workers, t.Prefetch)
		}
		out = append(out, Finding{Kind: "taskfarm", Workload: w.Name, Text: text, Values: values})
	}
	if len(overheads) > 0 {
		o := stat.Quantile(0.5, stat.Empirical, sorted(overheads), nil)
		if o > 0 {
			// overhead / (duration + overhead) < 5%  <=>  duration > 19 x overhead
			cross := 19 * o
			out = append(out, Finding{Kind: "taskfarm", Workload: w.Name, Values: map[string]float64{"median_overhead_s": o, "crossover_duration_s": cross},
				Text: fmt.Sprintf("The network costs a median %.3f s per task here, so tasks longer than %.2g s lose under 5%% to it.", o, cross)})
		}
	}
	return out
}

func orStep(s Step) string {
	if s.Label != "" {
		return s.Label
	}
	return "step " + strconv.Itoa(s.Index+1)
}

func sorted(v []float64) []float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}
