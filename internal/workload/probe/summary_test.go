package probe

import (
	"math"
	"testing"
	"time"
)

func TestSummarise(t *testing.T) {
	ms := int64(time.Millisecond)
	// Four probes: RTTs 10, 12, lost, 14 ms (reflector turnaround 1 ms excluded);
	// one way 4 ms there, the rest back.
	probes := []Result{
		{Seq: 0, Sent: 0, ReflectRx: 4 * ms, ReflectTx: 5 * ms, Received: 11 * ms},
		{Seq: 1, Sent: 100 * ms, ReflectRx: 104 * ms, ReflectTx: 105 * ms, Received: 113 * ms, Duplicates: 1},
		{Seq: 2, Sent: 200 * ms},
		{Seq: 3, Sent: 300 * ms, ReflectRx: 304 * ms, ReflectTx: 305 * ms, Received: 315 * ms},
	}
	r := Summarise("a", "b", Spec{Count: 4, Interval: 100 * time.Millisecond, Size: 64}, probes, ClockAgreement{Shared: true})
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
