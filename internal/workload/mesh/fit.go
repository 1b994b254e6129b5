package mesh

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// fit estimates bottleneck_efficiency, for every path, from one measured
// step (kind.Model's Fit): the share of what the links carried that was
// the transfers' payload. Every transfer between two sites crosses two
// link directions (its site's up, the peer's down), so the payload the
// links carried is twice the bytes of the transfers that ended, and what
// they carried the sum of their directions' rates over the step; none
// when the step measured no links or a transfer failed (its bytes are
// not all known).
func (m *Spec) fit(_ kind.ModelEnv, ms kind.Measured) (map[string]float64, error) {
	est := map[string]float64{}
	if ms.Seconds <= 0 || len(ms.Jobs) == 0 {
		return est, nil
	}
	var payload float64
	for _, j := range ms.Jobs {
		if j.Status != job.OK {
			return est, nil
		}
		payload += float64(j.Bytes)
	}
	var wire float64
	for _, dir := range results.LinkMbps.Subjects(ms.Metrics) {
		v, _ := results.LinkMbps.In(ms.Metrics, dir)
		wire += v * 1e6 / 8 * ms.Seconds
	}
	if wire > 0 {
		est[kind.ParamBottleneckEfficiency] = min(1, 2*payload/wire)
	}
	return est, nil
}
