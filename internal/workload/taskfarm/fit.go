package taskfarm

import (
	"slices"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// fit estimates the model's params from one measured step (kind.Model's
// Fit), over the tasks it completed: the master's CPU per task (its
// host's CPU, when no worker shares it) and, for tasks of CPU work, a
// task's core-seconds (the worker hosts' CPU, when the master shares none
// of them). A task asleep costs what the step says: nothing to fit.
func fit(env kind.ModelEnv, m kind.Measured) (map[string]float64, error) {
	s, err := specOf(m.Spec)
	if err != nil {
		return nil, err
	}
	est := map[string]float64{}
	done := m.Metrics[results.TasksDone]
	if done <= 0 || m.Seconds <= 0 {
		return est, nil
	}
	shared := slices.Contains(s.Workers, s.Master)
	if cpu, ok := results.CPUPct.In(m.Metrics, s.Master); ok && !shared {
		est[ParamMasterCPU] = cpu / 100 * m.Seconds / done
	}
	if s.Work == WorkCPU && !shared {
		var cpu float64
		for _, h := range slices.Compact(slices.Sorted(slices.Values(s.Workers))) {
			v, ok := results.CPUPct.In(m.Metrics, h)
			if !ok {
				return est, nil
			}
			cpu += v
		}
		if cpu > 0 {
			est[ParamTaskSeconds] = cpu / 100 * m.Seconds / done
		}
	}
	return est, nil
}
