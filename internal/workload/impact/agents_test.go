package impact_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/measuretest"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/impact"
)

// The tests through real agents are of the external test package: the
// agent's server imports the workloads this package imports.

// TestKindRunsAnImpactTest: an impact step probes before, during and
// after a load between its hosts' agents, and keeps each phase's figures,
// the load's rate and the samples of both.
func TestKindRunsAnImpactTest(t *testing.T) {
	env := measuretest.NewEnv(t, impact.Kind, "p", "r", "a", "b")
	step := &impact.Step{ProbeFrom: "p", ProbeTo: "r", From: "a", To: "b", Streams: 1,
		Duration: 1500 * time.Millisecond, Phase: 200 * time.Millisecond, Interval: 20 * time.Millisecond}
	o, err := impact.Kind.Run(context.Background(), env, step)
	if err != nil {
		t.Fatal(err)
	}
	m := o.Metrics
	for _, phase := range []string{"idle", "loaded", "after"} {
		if v, ok := m[results.Phase(phase, results.RTTP50Ms)]; !ok || v <= 0 {
			t.Errorf("%s: no round trip in %v", phase, m)
		}
	}
	if m[results.LoadMbps] <= 0 {
		t.Errorf("no load rate in %v", m)
	}
	if _, ok := m[results.RTTInflationMs]; !ok {
		t.Errorf("no inflation in %v", m)
	}
	subjects := map[string]bool{}
	for _, s := range o.Samples {
		subjects[s.Metric+" "+s.Subject] = true
	}
	for _, want := range []string{"delay.roundtrip p->r", "bandwidth.achievable a->b"} {
		if !subjects[want] {
			t.Errorf("no samples of %s in %d samples", want, len(o.Samples))
		}
	}

	step.ProbeTo = "x"
	if _, err := impact.Kind.Run(context.Background(), env, step); !errors.Is(err, measure.ErrNoHost) {
		t.Errorf("a host without an agent: %v", err)
	}
}
