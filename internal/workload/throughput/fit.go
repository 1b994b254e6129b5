package throughput

import (
	"fmt"
	"math"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// fit estimates the model's params from one measured test (kind.Model's
// Fit): for TCP, the path's tcp_efficiency where the streams' own rate
// holds them (the measured throughput over what the model gives them
// uncalibrated) or its bottleneck_efficiency where the bottleneck does
// (the throughput over the bottleneck), and, for any test, the sender's
// and receiver's CPU per gigabyte (their CPU over the gigabytes a second
// moved).
func fit(env kind.ModelEnv, m kind.Measured) (map[string]float64, error) {
	t, ok := m.Spec.(*Step)
	if !ok {
		return nil, fmt.Errorf("a throughput model with a %T spec", m.Spec)
	}
	est := map[string]float64{}
	mbps := m.Metrics[results.ThroughputMbps]
	if mbps <= 0 || math.IsNaN(mbps) {
		return est, nil
	}
	if t.Protocol != "udp" {
		path, err := env.Path(t.From, t.To)
		if err != nil {
			return nil, fmt.Errorf("the throughput test's path: %w", err)
		}
		own, rate := kind.StreamLimited(env, path, t.From, t.To, t.flow())
		switch {
		case own:
			est[kind.PathParam(kind.ParamTCPEfficiency, t.From, t.To)] = mbps * 1e6 / (rate * float64(t.Streams))
		case path.BottleneckBPS > 0:
			est[kind.PathParam(kind.ParamBottleneckEfficiency, t.From, t.To)] = mbps * 1e6 / path.BottleneckBPS
		}
	}
	gbps := mbps / 8 / 1e3 // gigabytes a second
	for name, figure := range map[string]string{ParamSenderCPU: results.SenderCPUPct, ParamReceiverCPU: results.ReceiverCPUPct} {
		if cpu := m.Metrics[figure]; cpu > 0 {
			est[name] = cpu / 100 / gbps
		}
	}
	return est, nil
}
