package probe

import (
	"math"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// fit estimates probe_overhead_ms from one measured step (kind.Model's
// Fit): its mean round trip less the path's base round trip and what
// transmitting the probe takes there and back; none when no probe came
// back.
func (p *Step) fit(env kind.ModelEnv, m kind.Measured) (map[string]float64, error) {
	avg, ok := m.Metrics.Get(results.Named(results.RTTAvgMs))
	if !ok || avg <= 0 || math.IsNaN(avg) {
		return map[string]float64{}, nil
	}
	there, err := env.Path(p.From, p.To)
	if err != nil {
		return nil, err
	}
	back, err := env.Path(p.To, p.From)
	if err != nil {
		return nil, err
	}
	base := float64(there.RTT) / float64(time.Millisecond)
	size := float64(p.round().Size) * 8
	for _, f := range []kind.PathFacts{there, back} {
		if f.BottleneckBPS > 0 {
			base += size / f.BottleneckBPS * 1e3
		}
	}
	return map[string]float64{ParamOverhead: max(0, avg-base)}, nil
}
