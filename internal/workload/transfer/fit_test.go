package transfer

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// TestFit: per leg, the compression ratio measured, the sender's CPU per
// gigabyte, and the path's transfer_efficiency: the time the model's
// streams take to send their shares over what the leg took past the
// connections' round trip and the last byte's one-way delay.
func TestFit(t *testing.T) {
	// 100 Mbit/s, 100 ms: a stream without a window gets the TCP payload
	// of the path's IP packets, 96.5 Mbit/s.
	env := modelEnv(100*time.Millisecond, 100e6)
	rate := 100e6 * (1448.0 / 1500)
	alone := 1e8 * 8 / rate // 100 MB on the wire, in seconds
	for _, c := range []struct {
		name    string
		step    *Step
		metrics results.Metrics
		want    map[string]float64
	}{
		{"plain", &Step{From: "a", To: "b", Size: 1e8, Streams: 1},
			results.Metrics{"there_seconds": alone/0.8 + 0.15, "there_sender_cpu_pct": 10, "there_compression_ratio": 1},
			map[string]float64{"transfer_efficiency.a->b": 0.8, ParamSenderCPU: 0.1 * (alone/0.8 + 0.15) / 0.1}},
		// Compressed 2.5 times: 40 MB on the wire, 20 MB a stream.
		{"compressed", &Step{From: "a", To: "b", Size: 1e8, Streams: 2, Compress: true},
			results.Metrics{"there_seconds": alone/2.5/0.5 + 0.15, "there_sender_cpu_pct": 50, "there_compression_ratio": 2.5},
			map[string]float64{"transfer_efficiency.a->b": 0.5, ParamCompressCPU: 0.5 * (alone/2.5/0.5 + 0.15) / 0.1, ParamRatio: 2.5}},
		{"round trip", &Step{From: "a", To: "b", Size: 1e8, Streams: 1, Roundtrip: true},
			results.Metrics{"there_seconds": alone + 0.15, "back_seconds": alone/0.5 + 0.15},
			map[string]float64{"transfer_efficiency.a->b": 1, "transfer_efficiency.b->a": 0.5}},
		{"disk held it", &Step{From: "a", To: "b", Size: 1e8, Streams: 1},
			results.Metrics{"there_seconds": alone/0.5 + 0.15, "disk_write_pct.b": 95}, map[string]float64{}},
		{"cpu held it", &Step{From: "a", To: "b", Size: 1e8, Streams: 1},
			results.Metrics{"there_seconds": alone/0.5 + 0.15, "cpu_quota_pct.a": 99, "disk_write_pct.b": 50}, map[string]float64{}},
		{"no time", &Step{From: "a", To: "b", Size: 1e8, Streams: 1}, results.Metrics{"there_seconds": 0.1}, map[string]float64{}},
		{"nothing measured", &Step{From: "a", To: "b", Size: 1e8, Streams: 1}, results.Metrics{}, map[string]float64{}},
	} {
		got, err := model.Fit(env, kind.Measured{Spec: c.step, Metrics: c.metrics})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		kindtest.CheckFit(t, c.name, got, c.want)
	}
}

// TestModelCalibrated: a fitted transfer_efficiency scales the
// uncalibrated stream rate, and then the fitted tcp_efficiency and
// bottleneck_efficiency of other kinds play no part; without it, they do.
func TestModelCalibrated(t *testing.T) {
	step := &Step{From: "a", To: "b", Size: 1e8, Streams: 1}
	rate := 100e6 * (1448.0 / 1500)
	for _, c := range []struct {
		name   string
		fitted map[string]float64
		want   float64
	}{
		{"uncalibrated", nil, rate},
		{"bottleneck", map[string]float64{"bottleneck_efficiency.a->b": 0.5}, 50e6},
		{"transfer", map[string]float64{"bottleneck_efficiency.a->b": 0.5, "transfer_efficiency.a->b": 0.8}, 0.8 * rate},
		{"transfer, every path", map[string]float64{"transfer_efficiency": 0.7}, 0.7 * rate},
	} {
		env := modelEnv(100*time.Millisecond, 100e6)
		env.Fitted = c.fitted
		actors, err := model.Build(env, step)
		if err != nil {
			t.Fatal(err)
		}
		wire := 1 / kind.PathFacts{MTU: 1500}.WireShare()
		if got := actors[0].Ops[2].Branches[0][0].RateBPS / wire; got != c.want && (got-c.want)*(got-c.want) > 1e-12*c.want*c.want {
			t.Errorf("%s: a stream at %.0f bit/s, want %.0f", c.name, got, c.want)
		}
	}
}
