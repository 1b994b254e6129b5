package probe

import (
	"context"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// Kind is a round of probes as a workload: its settings and their checks,
// its driver and what analysis reads of it, one unit (issue 32). It has
// no agent roles: the agents' Reflect and Probe calls serve it.
var Kind = kind.Kind{Name: results.Probe, Decode: kind.DecodeWith(Check), Run: kind.RunWith("a probe step", runStep), Traits: traits, Model: &model}

// Step is one step of a probe workload: probes from one host to a
// reflector on another (Spec is the round as the agents run it).
type Step struct {
	From, To string
	Count    int
	Interval time.Duration
}

// Length is the time the probes take.
func (p *Step) Length() time.Duration { return time.Duration(p.Count) * p.Interval }

// RoleHosts is none: probes between two hosts have no role figures.
func (p *Step) RoleHosts() map[string][]string { return nil }

// Raw is a probe step's settings as written.
type Raw struct {
	From     string `yaml:"from"`
	To       string `yaml:"to"`
	Count    *int   `yaml:"count"`
	Interval string `yaml:"interval"`
}

// Check checks a probe step's settings, reporting every problem to c, and
// returns the step they make.
func Check(c kind.Check, r Raw) *Step {
	p := &Step{
		From: r.From, To: r.To,
		Count:    c.Count("count", r.Count, 100, 1, 1_000_000),
		Interval: c.Duration("interval", r.Interval, 100*time.Millisecond),
	}
	kind.Pair(c, r.From, r.To)
	if p.Interval <= 0 {
		c.Fail("interval", "must be positive")
	}
	c.Limit("count", c.Limits().Repeated("the probes", int64(p.Count), p.Interval))
	return p
}

// round is the step's round as the agents run it: probes of the header's
// size, each awaited for 2 s.
func (p *Step) round() Spec {
	return Spec{Count: p.Count, Interval: p.Interval, Size: HeaderLen, Timeout: 2 * time.Second}
}

// runStep runs a probe step: one round from its prober's agent to its
// reflector's, kept as the step's figures and samples.
func runStep(ctx context.Context, env kind.Env, p *Step) (*kind.Outcome, error) {
	eps, err := measure.Endpoints(env, p.From, p.To)
	if err != nil {
		return nil, err
	}
	r, err := Measure(ctx, eps[0], eps[1], p.round())
	if r == nil {
		return nil, err
	}
	return &kind.Outcome{Samples: r.Samples(), Metrics: r.figures()}, err
}

// figures are a round's figures, as a step keeps them.
func (r *Summary) figures() results.Metrics {
	return results.Metrics{
		results.RTTP50Ms: r.RTTms.P50, results.RTTP99Ms: r.RTTms.P99, results.RTTAvgMs: r.RTTms.Avg, results.JitterMs: r.JitterMS, results.LostPercent: r.LostPercent,
		results.TestsAlongside: float64(r.Alongside),
	}
}
