package eventdb

import (
	"slices"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// fit estimates the model's params from one measured step (kind.Model's
// Fit): the server's CPU seconds per page (its CPU over the pages it
// served, the servers' over theirs for a step of several; of the one
// client host's path when the step has one); each
// client host's CPU seconds per page received, only when every job
// finished (its CPU beyond what its jobs burn on their events, the step's
// client_cpu_per_event, which a job spends exactly, over the pages it
// read; a host shared with the server gives none); and each client's path
// efficiency: the share of what the server sent it that is pages (the
// pages' bytes over the bytes its direct link carried to it).
func fit(env kind.ModelEnv, m kind.Measured) (map[string]float64, error) {
	e, err := specOf(m.Spec)
	if err != nil {
		return nil, err
	}
	est := map[string]float64{}
	if m.Seconds <= 0 {
		return est, nil
	}
	if pages := m.Metrics[results.ServerPages]; pages > 0 {
		var cpu float64 // the servers', in % of one core
		for _, s := range e.servers() {
			c, ok := results.CPUPct.In(m.Metrics, s)
			if !ok {
				cpu = 0
				break
			}
			cpu += c
		}
		if cpu > 0 {
			name := ParamServerCPU
			if hosts := slices.Compact(slices.Sorted(slices.Values(e.Clients))); len(hosts) == 1 {
				name += "." + hosts[0] // the pages of one client host's path
			}
			est[name] = cpu / 100 * m.Seconds / pages
		}
	}
	ok := map[string]float64{} // finished jobs per client host
	bytes := map[string]int64{}
	all := len(m.Jobs) > 0
	for _, j := range m.Jobs {
		bytes[j.Host] += j.Bytes
		if j.Status == job.OK {
			ok[j.Host]++
		} else {
			all = false
		}
	}
	seen := map[string]bool{}
	for i, c := range e.Clients {
		if seen[c] || slices.Contains(e.servers(), c) {
			continue
		}
		seen[c] = true
		if cpu, have := results.CPUPct.In(m.Metrics, c); all && have && cpu > 0 && bytes[c] > 0 {
			burnt := ok[c] * float64(e.EventsPerJob) * e.ClientCPUPerEvent.Seconds()
			pages := float64(bytes[c]) / float64(e.Store.PageSize)
			est[ParamClientRecv+"."+c] = max(0, cpu/100*m.Seconds-burnt) / pages
		}
		server := e.serverOf(i)
		wire, have := results.LinkMbps.In(m.Metrics, server+"->"+c)
		if have && wire > 0 && bytes[c] > 0 {
			est[kind.PathParam(kind.ParamTCPEfficiency, server, c)] = min(1, float64(bytes[c])*8/m.Seconds/1e6/wire)
		}
	}
	return est, nil
}
