package probe

import (
	"math"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// TestFit: the overhead is the mean round trip less the path's base
// round trip and the probe's transmission there and back; none without
// a round trip.
func TestFit(t *testing.T) {
	env := &kindtest.ModelEnv{Default: kind.PathFacts{RTT: 20 * time.Millisecond, BottleneckBPS: float64(HeaderLen) * 8 * 1000, MTU: 1500}}
	s := &Step{From: "a", To: "b", Count: 10, Interval: time.Second}
	for _, c := range []struct {
		name    string
		metrics results.Metrics
		want    map[string]float64
	}{
		// 20 ms of propagation and 1 ms each way to send the probe.
		{"slower than the path", results.Metrics{results.RTTAvgMs: 22.5}, map[string]float64{ParamOverhead: 0.5}},
		{"faster than the path", results.Metrics{results.RTTAvgMs: 21}, map[string]float64{ParamOverhead: 0}},
		{"no probe back", results.Metrics{results.LostPercent: 100}, map[string]float64{}},
	} {
		got, err := s.fit(env, kind.Measured{Spec: s, Metrics: c.metrics, Seconds: 10})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(c.want) || math.Abs(got[ParamOverhead]-c.want[ParamOverhead]) > 1e-9 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
