// Package twinrun runs the campaign of wanlab twin (issue 35): the steps of
// a twin.Plan in order, each through the measurement the measure verbs use
// (trace, probe, capacity, available, impact, throughput), bounded by the
// plan's budget and by its context (Ctrl-C), keeping what was measured
// as a twin.Campaign. A step that fails, or that an agent's policy
// refuses, is recorded with its error (the agent's words name the rule)
// and the campaign goes on. It also compares a path's campaign with its
// twin's replay of it (Compare: wanlab twin --check).
//
// It reaches hosts through measure's endpoints only: the CLI opens the
// test-bed or the inventory, brings a twin up for the check and writes
// the files. internal/twin, which fits the campaign, stays pure.
package twinrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/twin"
	"github.com/wanlab/wanlab/internal/workload/impact"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// Measures are the measurements a campaign runs, by host name: the
// agents' (AgentMeasures), or a test's stand-ins.
type Measures struct {
	Trace      func(ctx context.Context, from, to string) (*probe.TraceResult, error)
	Probe      func(ctx context.Context, from, to string, spec probe.Spec) (*probe.Summary, error)
	Capacity   func(ctx context.Context, from, to string, spec measure.BandwidthSpec) (*measure.CapacityResult, error)
	Available  func(ctx context.Context, from, to string, spec measure.BandwidthSpec) (*measure.AvailableResult, error)
	Impact     func(ctx context.Context, from, to string, spec impact.Spec) (*impact.Result, error)
	Throughput func(ctx context.Context, from, to string, spec throughput.Spec) (*throughput.Result, error)
}

// Trace's bounds: as measure trace's defaults.
const (
	traceHops = 30
	traceWait = time.Second
)

// AgentMeasures measures through the hosts' agents (connected endpoints,
// by host name), as the measure verbs do.
func AgentMeasures(eps map[string]measure.Endpoint) Measures {
	trace := through(eps, func(ctx context.Context, a, b measure.Endpoint, _ struct{}) (*probe.TraceResult, error) {
		return probe.MeasureTrace(ctx, a, b, traceHops, traceWait)
	})
	return Measures{
		Trace: func(ctx context.Context, from, to string) (*probe.TraceResult, error) {
			return trace(ctx, from, to, struct{}{})
		},
		Probe:     through(eps, probe.Measure),
		Capacity:  through(eps, measure.Capacity),
		Available: through(eps, measure.Available),
		Impact: through(eps, func(ctx context.Context, a, b measure.Endpoint, spec impact.Spec) (*impact.Result, error) {
			return impact.Measure(ctx, a, b, a, b, spec)
		}),
		Throughput: through(eps, throughput.Measure),
	}
}

// through makes a measurement between endpoints one between host names.
func through[S, R any](eps map[string]measure.Endpoint, f func(context.Context, measure.Endpoint, measure.Endpoint, S) (R, error)) func(context.Context, string, string, S) (R, error) {
	return func(ctx context.Context, from, to string, spec S) (R, error) {
		var none R
		a, ok := eps[from]
		if !ok {
			return none, fmt.Errorf("host %s: %w", from, measure.ErrNoHost)
		}
		b, ok := eps[to]
		if !ok {
			return none, fmt.Errorf("host %s: %w", to, measure.ErrNoHost)
		}
		return f(ctx, a, b, spec)
	}
}

// Options are a campaign's: where it reports progress, and what is known
// of the path before it.
type Options struct {
	// Progress is called as step i (from 0) of n begins.
	Progress func(i, n int, s twin.Step)
	// MTUs are what the inventory or scenario says of the path's MTU;
	// they go into the campaign, and size the bandwidth estimates' packets.
	MTUs []twin.MTU
	// Grace is how far past the budget's time a step may still begin
	// (the plan's times are estimates); 0: a tenth of the budget.
	Grace time.Duration
	// LoadRates are the UDP loads' rates by direction ({from, to}): a
	// check replays the path's (LoadRates); unset, a load runs at its
	// step's Overload times the direction's capacity estimates so far.
	LoadRates map[[2]string]float64
	// MaxLoadBPS caps the UDP loads (the agents' grants' rate for paced
	// tests, 0 none): a load at the cap may not fill the queue, which its
	// fit then judges by what got through.
	MaxLoadBPS float64
}

// StepResult is what became of one step of the plan.
type StepResult struct {
	Step  twin.Step
	Start time.Time
	Took  time.Duration
	// Err is why the step failed (an agent's refusal names its policy's
	// rule); what it measured before is kept.
	Err error
	// Skipped says why the step did not run ("" if it ran).
	Skipped string
	// Cut says why the step was cut short ("" if it was not): the
	// interrupt, or the budget's time running out.
	Cut string
}

// Outcome is a campaign that ended: what it measured, and each step's fate.
type Outcome struct {
	Campaign twin.Campaign
	Steps    []StepResult
	// Bytes are what the steps reported sending.
	Bytes int64
	// Interrupted is the context's cause when it ended the campaign.
	Interrupted error
}

// Ran counts the steps that ran without error.
func (o *Outcome) Ran() int {
	n := 0
	for _, s := range o.Steps {
		if s.Skipped == "" && s.Err == nil {
			n++
		}
	}
	return n
}

// ErrBudgetSpent says a step did not run: the budget's time or bytes were spent.
var ErrBudgetSpent = errors.New("the budget is spent")

// Run runs the plan's steps in order. It stops starting steps once one
// would end past the budget's time (with Options.Grace) or send past its
// bytes, and when ctx ends (the step under way is cut short; what it
// measured is kept); a step that fails is recorded and the next one runs.
func Run(ctx context.Context, p *twin.Plan, m Measures, o Options) *Outcome {
	a, b := "", ""
	if len(p.Steps) > 0 {
		a, b = p.Steps[0].From, p.Steps[0].To
	}
	out := &Outcome{Campaign: twin.Campaign{A: a, B: b, MTUs: o.MTUs}}
	grace := o.Grace
	if grace == 0 {
		grace = p.Budget.Duration / 10
	}
	start := time.Now()
	deadline := start.Add(p.Budget.Duration + grace)
	// A step under way at the deadline (and its setup, and a hung agent)
	// gets twice the grace to end.
	hard, cancel := context.WithDeadline(ctx, deadline.Add(2*grace))
	defer cancel()
	for i, s := range p.Steps {
		r := StepResult{Step: s}
		switch {
		case ctx.Err() != nil:
			out.Interrupted = context.Cause(ctx)
			r.Skipped = "interrupted: " + out.Interrupted.Error()
		case time.Now().Add(s.Time).After(deadline) || hard.Err() != nil:
			r.Skipped = fmt.Sprintf("%v: its %v would end past the budget's %v", ErrBudgetSpent, s.Time.Round(100*time.Millisecond), p.Budget.Duration)
		case p.Budget.Bytes > 0 && out.Bytes+s.Bytes > p.Budget.Bytes:
			r.Skipped = fmt.Sprintf("%v: its %d bytes would pass the budget's %d", ErrBudgetSpent, s.Bytes, p.Budget.Bytes)
		}
		if r.Skipped != "" {
			out.Steps = append(out.Steps, r)
			continue
		}
		if o.Progress != nil {
			o.Progress(i, len(p.Steps), s)
		}
		r.Start = time.Now()
		sent, err := out.run(hard, m, s, o)
		r.Took, r.Err = time.Since(r.Start), err
		switch {
		case ctx.Err() != nil:
			r.Cut = "interrupted: " + context.Cause(ctx).Error()
		case hard.Err() != nil:
			r.Cut = fmt.Sprintf("%v: the step ran past the budget's %v and its grace", ErrBudgetSpent, p.Budget.Duration)
		}
		out.Bytes += sent
		out.Steps = append(out.Steps, r)
	}
	if out.Interrupted == nil && ctx.Err() != nil {
		out.Interrupted = context.Cause(ctx)
	}
	return out
}

// bandwidthSize is the bandwidth estimates' UDP payload: a full packet of
// the path's least MTU.
func bandwidthSize(mtus []twin.MTU) int {
	mtu := twin.DefaultMTU
	for _, m := range mtus {
		if m.Bytes > 0 {
			mtu = min(mtu, m.Bytes)
		}
	}
	return max(mtu-udpIPv4, 100)
}

const (
	udpIPv4 = 28 // IPv4 and UDP headers
	// probeTimeout is how long a round of probes waits for its last reply.
	probeTimeout = time.Second
)

// run runs one step and adds what it measured to the campaign; it
// returns the bytes it sent.
func (o *Outcome) run(ctx context.Context, m Measures, s twin.Step, opts Options) (int64, error) {
	mtus := opts.MTUs
	at := time.Now()
	c := &o.Campaign
	switch s.Kind {
	case twin.StepTrace:
		r, err := m.Trace(ctx, s.From, s.To)
		addTrace(c, at, r)
		return 0, err
	case twin.StepProbe:
		r, err := m.Probe(ctx, s.From, s.To, probe.Spec{Count: s.Count, Interval: s.Interval, Size: s.Size, Timeout: probeTimeout})
		addProbes(c, r)
		return probeBytes(r), err
	case twin.StepCapacity:
		r, err := m.Capacity(ctx, s.From, s.To, measure.BandwidthSpec{Size: bandwidthSize(mtus)})
		addCapacity(c, at, r)
		if r == nil {
			return 0, err
		}
		return r.Bytes, err
	case twin.StepAvailable:
		r, err := m.Available(ctx, s.From, s.To, measure.BandwidthSpec{Size: bandwidthSize(mtus)})
		addAvailable(c, at, r)
		if r == nil {
			return 0, err
		}
		return r.Bytes, err
	case twin.StepImpact:
		load := throughput.Spec{Protocol: throughput.TCP, Streams: s.Streams, Duration: s.Load, Interval: time.Second}
		if s.Overload > 0 {
			load.Protocol, load.UDPRate, load.UDPLength = throughput.UDP, loadRate(c, s, opts.LoadRates), bandwidthSize(mtus)
			if opts.MaxLoadBPS > 0 {
				load.UDPRate = min(load.UDPRate, opts.MaxLoadBPS)
			}
		}
		r, err := m.Impact(ctx, s.From, s.To, impact.Spec{Phase: s.Phase, Interval: s.Interval, Size: s.Size, Load: load})
		addImpact(c, s.From, s.To, load.UDPRate, r)
		if r == nil {
			return 0, err
		}
		return probeBytes(r.Before) + probeBytes(r.During) + probeBytes(r.After) + sentBytes(r.Load), err
	case twin.StepThroughput:
		r, err := m.Throughput(ctx, s.From, s.To, throughput.Spec{Protocol: throughput.TCP, Streams: s.Streams, Duration: s.Load, Interval: time.Second})
		addThroughput(c, at, r)
		return sentBytes(r), err
	}
	return 0, fmt.Errorf("a campaign step of kind %q: no such measurement", s.Kind)
}

// loadRate is a UDP load's rate: the one given for its direction, else
// the step's Overload times the median of the direction's capacity
// estimates so far, else times the rate the plan expects.
func loadRate(c *twin.Campaign, s twin.Step, given map[[2]string]float64) float64 {
	if r := given[[2]string{s.From, s.To}]; r > 0 {
		return r
	}
	var caps []float64
	for _, r := range c.Capacity {
		if r.From == s.From && r.To == s.To && r.BPS > 0 {
			caps = append(caps, r.BPS)
		}
	}
	if m, ok := medianOf(caps); ok {
		return s.Overload * m
	}
	return s.Overload * s.RateBPS
}

// LoadRates are the rates of a campaign's UDP loads by direction, which
// its check replays.
func LoadRates(c twin.Campaign) map[[2]string]float64 {
	out := map[[2]string]float64{}
	for _, l := range c.Loads {
		if l.UDP && l.TargetBPS > 0 {
			out[[2]string{l.LoadFrom, l.LoadTo}] = l.TargetBPS
		}
	}
	return out
}

// probeBytes are what a round of probes sent, both ways, on the IP layer.
func probeBytes(r *probe.Summary) int64 {
	if r == nil {
		return 0
	}
	return int64(2 * r.Sent * (r.Size + udpIPv4))
}

func sentBytes(r *throughput.Result) int64 {
	if r == nil {
		return 0
	}
	return int64(r.End.SumSent.Bytes)
}
