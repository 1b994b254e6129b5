package measure

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

func TestProbeThroughAgents(t *testing.T) {
	a, _ := startAgent(t, "a", limits.Default)
	b, _ := startAgent(t, "b", limits.Default)
	spec := probe.Spec{Count: 40, Interval: 2 * time.Millisecond, Size: 64, Timeout: 200 * time.Millisecond}
	res, err := Probe(context.Background(), a, b, spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 40 || res.Received != 40 || res.Lost != 0 || res.OneWay.Clock != "shared" {
		t.Fatalf("loopback probes: %+v", res)
	}
	if res.RTTms.Min <= 0 || res.RTTms.Max > 5 || res.RTTms.P50 < res.RTTms.Min || res.RTTms.P99 > res.RTTms.Max {
		t.Errorf("loopback RTT stats %+v", res.RTTms)
	}
}

func TestSummarise(t *testing.T) {
	ms := int64(time.Millisecond)
	// Four probes: RTTs 10, 12, lost, 14 ms (reflector turnaround 1 ms excluded);
	// one way 4 ms there, the rest back.
	probes := []probe.Result{
		{Seq: 0, Sent: 0, ReflectRx: 4 * ms, ReflectTx: 5 * ms, Received: 11 * ms},
		{Seq: 1, Sent: 100 * ms, ReflectRx: 104 * ms, ReflectTx: 105 * ms, Received: 113 * ms, Duplicates: 1},
		{Seq: 2, Sent: 200 * ms},
		{Seq: 3, Sent: 300 * ms, ReflectRx: 304 * ms, ReflectTx: 305 * ms, Received: 315 * ms},
	}
	r := Summarise("a", "b", probe.Spec{Count: 4, Interval: 100 * time.Millisecond, Size: 64}, probes, ClockAgreement{Shared: true})
	checks := []struct {
		name      string
		got, want float64
	}{
		{"min", r.RTTms.Min, 10}, {"avg", r.RTTms.Avg, 12}, {"max", r.RTTms.Max, 14}, {"p50", r.RTTms.P50, 12},
		{"p99", r.RTTms.P99, 13.96}, {"jitter", r.JitterMS, 2}, {"lost%", r.LostPercent, 25},
		{"forward", r.OneWay.Forward.Avg, 4}, {"back min", r.OneWay.Back.Min, 6}, {"back max", r.OneWay.Back.Max, 10},
		{"duplicates", float64(r.Duplicates), 1}, {"received", float64(r.Received), 3},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}
