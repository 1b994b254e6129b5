package probe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/measuretest"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

// The tests through real agents are of the external test package: the
// agent's server imports this package.

func TestMeasureThroughAgents(t *testing.T) {
	a, _ := measuretest.Agent(t, "a", limits.Default)
	b, _ := measuretest.Agent(t, "b", limits.Default)
	spec := probe.Spec{Count: 40, Interval: 2 * time.Millisecond, Size: 64, Timeout: 200 * time.Millisecond}
	res, err := probe.Measure(context.Background(), a, b, spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 40 || res.Received != 40 || res.Lost != 0 || res.OneWay.Clock != "shared" {
		t.Fatalf("loopback probes: %+v", res)
	}
	if res.RTTms.Min <= 0 || res.RTTms.Max > 5 || res.RTTms.P50 < res.RTTms.Min || res.RTTms.P99 > res.RTTms.Max {
		t.Errorf("loopback RTT stats %+v", res.RTTms)
	}
	// The agents' reflector numbers what it receives, and the counts
	// come through the agent API: loss is known each way.
	if l := res.Loss; l.Forward == nil || l.Back == nil || l.Forward.Of != 40 || l.Forward.Lost != 0 || l.Back.Lost != 0 || l.Note != "" {
		t.Errorf("loopback loss each way %+v", l)
	}
}

// TestStepThroughAgents: a probe step run through its kind, with agents
// as the controller's env reaches them, keeps the round's figures and a
// sample of every probe.
func TestStepThroughAgents(t *testing.T) {
	env := measuretest.NewEnv(t, probe.Kind, "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := probe.Kind.Run(ctx, env, &probe.Step{From: "a", To: "b", Count: 20, Interval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m := o.Metrics
	if m[results.LostPercent] != 0 || m[results.RTTP50Ms] <= 0 || m[results.RTTP99Ms] < m[results.RTTP50Ms] || m[results.RTTAvgMs] <= 0 {
		t.Errorf("figures %v", m)
	}
	counts := map[string]int{}
	for _, s := range o.Samples {
		counts[s.Metric+" "+s.Subject]++
	}
	for _, k := range []string{"delay.roundtrip a->b", "delay.oneway a->b", "delay.oneway b->a", "loss.roundtrip a->b"} {
		if counts[k] != 20 {
			t.Errorf("%d samples of %s, want 20 (all: %v)", counts[k], k, counts)
		}
	}
	if _, err := probe.Kind.Run(ctx, env, &probe.Step{From: "a", To: "nowhere", Count: 1, Interval: time.Millisecond}); !errors.Is(err, measure.ErrNoHost) {
		t.Errorf("a step to a host the env lacks: %v, want ErrNoHost", err)
	}
}
