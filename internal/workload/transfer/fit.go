package transfer

import (
	"fmt"
	"math"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// fit estimates the model's params from one measured transfer (kind.Model's
// Fit), leg by leg: the compression ratio the sender measured; the
// sender's CPU per gigabyte of file (its CPU over the leg's seconds, per
// gigabyte: transfer_sender_cpu_s_per_gb, or compress_cpu_s_per_gb when
// compressed); and the path's transfer_efficiency: the time the model's
// uncalibrated streams take to send their shares over what the leg took
// past the model's fixed costs (the connections' round trip, and the
// last bytes' one-way delay), unless the step's figures say a disk or a
// CPU held it (the sender's disk reads or the receiver's writes at
// busyPct of its cap or more, or either host's CPU at busyPct of its
// quota). The receiver's CPU is not measured per leg, and is not fitted.
func (t *Step) fit(env kind.ModelEnv, m kind.Measured) (map[string]float64, error) {
	est := map[string]float64{}
	legs := []struct{ name, from, to string }{{results.There, t.From, t.To}}
	if t.Roundtrip {
		legs = append(legs, struct{ name, from, to string }{results.Back, t.To, t.From})
	}
	gb := float64(t.Size) / 1e9
	for _, l := range legs {
		secs := m.Metrics[results.Leg(l.name, "seconds")]
		if secs <= 0 || math.IsNaN(secs) {
			continue
		}
		ratio := 1.0
		if r := m.Metrics[results.Leg(l.name, "compression_ratio")]; t.Compress && r > 0 {
			ratio = r
			if _, done := est[ParamRatio]; !done {
				est[ParamRatio] = r
			}
		}
		cpuParam := ParamSenderCPU
		if t.Compress {
			cpuParam = ParamCompressCPU
		}
		if cpu := m.Metrics[results.Leg(l.name, results.SenderCPUPct)]; cpu > 0 && gb > 0 {
			if _, done := est[cpuParam]; !done {
				est[cpuParam] = cpu / 100 * secs / gb
			}
		}
		if held(m.Metrics, l.from, l.to) {
			continue
		}
		path, err := env.Path(l.from, l.to)
		if err != nil {
			return nil, fmt.Errorf("the transfer's path: %w", err)
		}
		flow := t.flow(ratio)
		rate := kind.StreamRateBPS(env, path, l.from, l.to, flow)
		if busy := secs - 1.5*path.RTT.Seconds(); rate > 0 && busy > 0 {
			est[kind.PathParam(ParamEfficiency, l.from, l.to)] = float64(flow.Bytes) * 8 / rate / busy
		}
	}
	return est, nil
}

// busyPct is how busy (% of its cap or quota) a disk or CPU must be for
// fit to take it, not the path, for what held a leg.
const busyPct = 80

// held says whether the step's figures show a disk or CPU of a leg from
// one host to another busy enough to have held it.
func held(m results.Metrics, from, to string) bool {
	for _, f := range []struct {
		family results.Family
		host   string
	}{{results.DiskReadPct, from}, {results.DiskWritePct, to}, {results.CPUQuotaPct, from}, {results.CPUQuotaPct, to}} {
		if v, ok := f.family.In(m, f.host); ok && v >= busyPct {
			return true
		}
	}
	return false
}
