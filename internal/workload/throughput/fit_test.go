package throughput

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// TestFit: the path's tcp_efficiency is the throughput over the model's
// uncalibrated rate where the streams' window holds them, its
// bottleneck_efficiency the throughput over the bottleneck where the
// bottleneck does; the CPU per gigabyte is each host's CPU over the
// gigabytes a second.
func TestFit(t *testing.T) {
	env := modelEnv(10*time.Millisecond, 100e6, 0) // 100 Mbit/s, 10 ms
	// A window of 62.5 kB over 10 ms caps the stream at 50 Mbit/s; over
	// 10 s (1000 round trips) slow start leaves out 33.2, 23.2 and 3.2 of
	// its 43.2 segments a round trip.
	segs := 62500.0 / 1448
	window := 50e6 * (1000*segs - (segs - 10) - (segs - 20) - (segs - 40)) / (1000 * segs)
	for _, c := range []struct {
		name    string
		step    *Step
		metrics results.Metrics
		want    map[string]float64
	}{
		{"bottleneck", &Step{From: "a", To: "b", Protocol: "tcp", Streams: 2, Window: 4 << 20, Duration: 10 * time.Second},
			results.Metrics{results.ThroughputMbps: 80, results.SenderCPUPct: 5}, map[string]float64{"bottleneck_efficiency.a->b": 0.8, ParamSenderCPU: 5}},
		{"window", &Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Window: 62500, Duration: 10 * time.Second},
			results.Metrics{results.ThroughputMbps: 45, results.ReceiverCPUPct: 45.0 / 80}, map[string]float64{"tcp_efficiency.a->b": 45e6 / window, ParamReceiverCPU: 1}},
		{"udp: no efficiency", &Step{From: "a", To: "b", Protocol: "udp", Streams: 1, UDPRate: 50e6, Duration: 10 * time.Second},
			results.Metrics{results.ThroughputMbps: 40}, map[string]float64{}},
		{"nothing moved", &Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Duration: 10 * time.Second}, results.Metrics{}, map[string]float64{}},
	} {
		got, err := fit(env, kind.Measured{Spec: c.step, Metrics: c.metrics, Seconds: 10})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		kindtest.CheckFit(t, c.name, got, c.want)
	}
}
