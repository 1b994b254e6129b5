package impact

import (
	"context"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

// runStep runs an impact step: probes before, during and after a load,
// kept as the step's figures (each phase's, and the load's rate) and the
// probes' and the load's samples.
func runStep(ctx context.Context, env kind.Env, i *Step) (*kind.Outcome, error) {
	eps, err := measure.Endpoints(env, i.ProbeFrom, i.ProbeTo, i.From, i.To)
	if err != nil {
		return nil, err
	}
	r, err := Measure(ctx, eps[0], eps[1], eps[2], eps[3], i.test())
	if r == nil {
		return nil, err
	}
	o := &kind.Outcome{Metrics: results.Metrics{results.RTTInflationMs: r.RTTInflationMS, results.LossIncreasePts: r.LossIncreasePoints}}
	for _, phase := range []struct {
		name string
		p    *probe.Summary
	}{{"idle", r.Before}, {"loaded", r.During}, {"after", r.After}} {
		if phase.p == nil {
			continue
		}
		o.Metrics[results.Phase(phase.name, results.RTTP50Ms)] = phase.p.RTTms.P50
		o.Metrics[results.Phase(phase.name, "rtt_max_ms")] = phase.p.RTTms.Max
		o.Metrics[results.Phase(phase.name, results.LostPercent)] = phase.p.LostPercent
		o.Samples = append(o.Samples, phase.p.Samples()...)
	}
	if r.Load != nil {
		o.Metrics[results.LoadMbps] = r.Load.End.SumReceived.BitsPerSecond / 1e6
		o.Samples = append(o.Samples, r.Load.Samples(r.LoadStart)...)
	}
	return o, err
}
