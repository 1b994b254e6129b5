package taskfarm

// What the analysis and the report read of a task farm: its traits, and
// its spec's capabilities (internal/workload/kind).

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// traits: a farm is judged by what latency costs its tasks, against the
// ideal rate of its workers.
var traits = kind.Traits{
	Columns: []results.Column{
		results.Col("WORKERS", "%.0f", results.Named(results.Workers)), results.Col("TASKS", "%.0f", results.Named(results.TasksDone)),
		results.Col("TIME s", "%.1f", results.Named(results.Seconds)), results.Col("IDEAL s", "%.1f", results.Named(results.IdealSeconds)),
		results.Col("TASKS/s", "%.1f", results.Named(results.TaskRateHz)), results.Col("RTT p50 ms", "%.1f", results.Named(results.RoundtripP50Ms)),
		results.Col("IDLE", "%.2f", results.Named(results.WorkerIdleShare)),
		kind.CPUColumn("MASTER CPU%", "master"),
	},
	Findings:    []kind.Finding{kind.TaskFarm, kind.Failures},
	Plot:        kind.Plot{Title: "task rate", Unit: "tasks/s", Figure: results.TaskRateHz, Ideal: true},
	JobTimes:    "task round trip (dispatch to result)",
	BusyWorkers: true,
}

var _ interface {
	kind.Ended
	kind.Farmed
} = (*Spec)(nil)

// Ends are the master and the workers' hosts.
func (s *Spec) Ends() (servers, clients []string, singleThreaded bool) {
	return []string{s.Master}, s.Workers, false
}

// Farm is the workers in all, the tasks' duration and the prefetch.
func (s *Spec) Farm() kind.Farm {
	return kind.Farm{Workers: s.Count, Task: s.Duration, Prefetch: s.Prefetch}
}
