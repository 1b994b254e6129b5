package throughput

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// TestFit: the path's efficiency is the throughput over the model's
// uncalibrated rate (the window's cap, or the bottleneck), and the CPU
// per gigabyte is each host's CPU over the gigabytes a second.
func TestFit(t *testing.T) {
	env := modelEnv(10*time.Millisecond, 100e6, 0) // 100 Mbit/s, 10 ms
	for _, c := range []struct {
		name    string
		step    *Step
		metrics results.Metrics
		want    map[string]float64
	}{
		{"bottleneck", &Step{From: "a", To: "b", Protocol: "tcp", Streams: 2, Window: 4 << 20},
			results.Metrics{results.ThroughputMbps: 80, results.SenderCPUPct: 5}, map[string]float64{"tcp_efficiency.a->b": 0.8, ParamSenderCPU: 5}},
		// A window of 62.5 kB over 10 ms caps the stream at 50 Mbit/s.
		{"window", &Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Window: 62500},
			results.Metrics{results.ThroughputMbps: 45, results.ReceiverCPUPct: 45.0 / 80}, map[string]float64{"tcp_efficiency.a->b": 0.9, ParamReceiverCPU: 1}},
		{"udp: no efficiency", &Step{From: "a", To: "b", Protocol: "udp", Streams: 1, UDPRate: 50e6},
			results.Metrics{results.ThroughputMbps: 40}, map[string]float64{}},
		{"nothing moved", &Step{From: "a", To: "b", Protocol: "tcp", Streams: 1}, results.Metrics{}, map[string]float64{}},
	} {
		got, err := fit(env, kind.Measured{Spec: c.step, Metrics: c.metrics, Seconds: 10})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		kindtest.CheckFit(t, c.name, got, c.want)
	}
}
