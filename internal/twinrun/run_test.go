package twinrun

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/twin"
	"github.com/wanlab/wanlab/internal/workload/impact"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// fake answers every measurement at once with a path of 20 Mbit/s, 30 ms
// round trip, and records what it was asked.
type fake struct {
	asked  []string
	refuse string // a kind the policy refuses
	onStep func(kind string)
	// udpRates are the rates the UDP loads asked for.
	udpRates []float64
}

var errRefused = errors.New(`agent on b refuses a throughput test: rule "lab" of policy.yaml does not allow it`)

func (f *fake) ask(kind, from, to string) error {
	f.asked = append(f.asked, kind+" "+from+"->"+to)
	if f.onStep != nil {
		f.onStep(kind)
	}
	if kind == f.refuse {
		return errRefused
	}
	return nil
}

func summary(from, to string, spec probe.Spec) *probe.Summary {
	now := time.Now().UnixNano()
	var ps []probe.Result
	for i := range spec.Count {
		sent := now + int64(i)*int64(spec.Interval)
		p := probe.Result{Seq: i, Sent: sent, ReflectRx: sent + 15e6, ReflectTx: sent + 15e6, Received: sent + 30e6, ReflectorCount: uint32(i + 1)}
		ps = append(ps, p)
	}
	return probe.Summarise(from, to, spec, ps, probe.ClockAgreement{Shared: true})
}

func tcp(from, to string, streams int, bps float64) *throughput.Result {
	r := &throughput.Result{Start: throughput.StartInfo{From: from, To: to, Streams: streams}}
	r.End.SumReceived.BitsPerSecond, r.End.SumSent.Bytes = bps, uint64(bps/8)
	return r
}

func (f *fake) measures() Measures {
	return Measures{
		Trace: func(ctx context.Context, from, to string) (*probe.TraceResult, error) {
			return &probe.TraceResult{From: from, To: to, Hops: []probe.Hop{{TTL: 1, Addr: "10.0.0.2"}}, Reached: true}, f.ask("trace", from, to)
		},
		Probe: func(ctx context.Context, from, to string, spec probe.Spec) (*probe.Summary, error) {
			return summary(from, to, spec), f.ask("probe", from, to)
		},
		Capacity: func(ctx context.Context, from, to string, spec measure.BandwidthSpec) (*measure.CapacityResult, error) {
			if err := f.ask("capacity", from, to); err != nil {
				return nil, err
			}
			return &measure.CapacityResult{From: from, To: to, CapacityBPS: 20e6, LowBPS: 19.8e6, HighBPS: 20.2e6, Trains: 30, Size: spec.Size, Bytes: 1000}, nil
		},
		Available: func(ctx context.Context, from, to string, spec measure.BandwidthSpec) (*measure.AvailableResult, error) {
			return &measure.AvailableResult{From: from, To: to, AvailableBPS: 19e6, LowBPS: 18e6, HighBPS: 20e6, CapacityBPS: 20e6,
				Fleets: make([]measure.Fleet, 5), Bytes: 2000}, f.ask("available", from, to)
		},
		Impact: func(ctx context.Context, from, to string, spec impact.Spec) (*impact.Result, error) {
			ps := probe.Spec{Count: max(5, int(spec.Phase/spec.Interval)), Interval: spec.Interval, Size: spec.Size, Timeout: time.Second}
			load := tcp(from, to, spec.Load.Streams, 18e6)
			if spec.Load.Protocol == throughput.UDP {
				f.udpRates = append(f.udpRates, spec.Load.UDPRate)
				load.Start.Protocol, load.End.SumSent.BitsPerSecond = "udp", spec.Load.UDPRate
			}
			return &impact.Result{Before: summary(from, to, ps), During: summary(from, to, ps), LoadStart: time.Now(),
				Load: load}, f.ask("impact", from, to)
		},
		Throughput: func(ctx context.Context, from, to string, spec throughput.Spec) (*throughput.Result, error) {
			if err := f.ask("throughput", from, to); err != nil {
				return nil, err
			}
			return tcp(from, to, spec.Streams, 19e6), nil
		},
	}
}

func testPlan(t *testing.T, d time.Duration) *twin.Plan {
	t.Helper()
	p, err := twin.NewPlan("a", "b", twin.Budget{Duration: d, Bytes: 1 << 40}, 20e6)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunFillsTheCampaign(t *testing.T) {
	p := testPlan(t, twin.DefaultDuration)
	f := &fake{}
	var progress []int
	mtus := []twin.MTU{{From: "a", To: "b", Bytes: 1400, Source: "test"}}
	o := Run(context.Background(), p, f.measures(), Options{MTUs: mtus, Progress: func(i, n int, s twin.Step) { progress = append(progress, i) }})
	if len(o.Steps) != len(p.Steps) || o.Ran() != len(p.Steps) || o.Interrupted != nil {
		t.Fatalf("%d steps, %d ran, interrupted %v; want all %d", len(o.Steps), o.Ran(), o.Interrupted, len(p.Steps))
	}
	for i, s := range p.Steps {
		if want := s.Kind + " " + s.From + "->" + s.To; f.asked[i] != want {
			t.Errorf("step %d ran %q, want %q", i+1, f.asked[i], want)
		}
	}
	if len(progress) != len(p.Steps) || progress[len(progress)-1] != len(p.Steps)-1 {
		t.Errorf("progress %v, want every step", progress)
	}
	c := o.Campaign
	count := func(kind string) int {
		return len(slices.DeleteFunc(slices.Clone(p.Steps), func(s twin.Step) bool { return s.Kind != kind }))
	}
	if c.A != "a" || c.B != "b" || len(c.Traces) != count(twin.StepTrace) || len(c.Probes) != count(twin.StepProbe) ||
		len(c.Loads) != count(twin.StepImpact) || len(c.Available) != count(twin.StepAvailable) ||
		len(c.Capacity) != count(twin.StepCapacity)+count(twin.StepAvailable) ||
		len(c.Throughput) != count(twin.StepThroughput) || !slices.Equal(c.MTUs, mtus) {
		t.Errorf("campaign %d traces, %d probe rounds, %d loads, %d available, %d capacity, %d throughput, MTUs %v; not what the plan's steps give",
			len(c.Traces), len(c.Probes), len(c.Loads), len(c.Available), len(c.Capacity), len(c.Throughput), c.MTUs)
	}
	if o.Bytes <= 0 {
		t.Errorf("bytes %d, want what the steps sent", o.Bytes)
	}
	// The loads run at 1.25x the capacity the campaign measured first.
	if len(f.udpRates) != count(twin.StepImpact) || slices.ContainsFunc(f.udpRates, func(r float64) bool { return r != twin.Overload*20e6 }) {
		t.Errorf("UDP loads at %v bit/s, want each at %g", f.udpRates, twin.Overload*20e6)
	}
	if got := LoadRates(c); got[[2]string{"a", "b"}] != twin.Overload*20e6 || got[[2]string{"b", "a"}] != twin.Overload*20e6 {
		t.Errorf("LoadRates %v, want both ways' %g", got, twin.Overload*20e6)
	}
	for _, l := range c.Loads {
		if !l.UDP || !l.Overloaded(0) {
			t.Errorf("load %s->%s: UDP %v, overloaded %v; want a UDP load above the capacity", l.LoadFrom, l.LoadTo, l.UDP, l.Overloaded(0))
		}
	}
	tw, err := twin.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if tw.Forward.RateBPS != 20e6 || tw.Forward.MTU != 1400 || tw.Forward.DelayS < 0.0149 || tw.Forward.DelayS > 0.0151 {
		t.Errorf("twin forward %+v, want 20 Mbit/s, MTU 1400, 15 ms", tw.Forward)
	}
}

func TestRunGoesOnPastARefusal(t *testing.T) {
	p := testPlan(t, twin.DefaultDuration)
	f := &fake{refuse: "throughput"}
	o := Run(context.Background(), p, f.measures(), Options{})
	refused := 0
	for _, s := range o.Steps {
		if s.Step.Kind == twin.StepThroughput {
			if !errors.Is(s.Err, errRefused) {
				t.Errorf("throughput step: error %v, want the agent's refusal", s.Err)
			}
			refused++
		} else if s.Err != nil || s.Skipped != "" {
			t.Errorf("%s step: error %v, skipped %q; want it run", s.Step.Kind, s.Err, s.Skipped)
		}
	}
	if refused == 0 || len(f.asked) != len(p.Steps) {
		t.Errorf("%d refused, %d asked; want the campaign to go on past them", refused, len(f.asked))
	}
}

func TestRunStopsOnInterrupt(t *testing.T) {
	p := testPlan(t, twin.DefaultDuration)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := errors.New("interrupt received")
	f := &fake{onStep: func(kind string) {
		if kind == twin.StepAvailable {
			cancel(stop)
		}
	}}
	o := Run(ctx, p, f.measures(), Options{})
	if !errors.Is(o.Interrupted, stop) {
		t.Errorf("interrupted %v, want %v", o.Interrupted, stop)
	}
	if len(o.Campaign.Capacity) == 0 || len(o.Campaign.Probes) == 0 {
		t.Errorf("campaign %+v: what was measured before the interrupt is lost", o.Campaign)
	}
	skipped, cut := 0, 0
	for _, s := range o.Steps {
		if strings.HasPrefix(s.Skipped, "interrupted") {
			skipped++
		}
		if strings.HasPrefix(s.Cut, "interrupted: interrupt received") {
			cut++
		}
	}
	if cut != 1 {
		t.Errorf("%d steps cut short by the interrupt, want the one under way", cut)
	}
	if skipped == 0 || len(o.Steps) != len(p.Steps) {
		t.Errorf("%d skipped of %d; want the steps after the interrupt listed as skipped", skipped, len(o.Steps))
	}
}

func TestRunKeepsToTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget twin.Budget
		spent  string
	}{
		// The plan's first steps take seconds: none fits a budget of a millisecond.
		{"time", twin.Budget{Duration: time.Millisecond, Bytes: 1 << 40}, "past the budget's"},
		{"bytes", twin.Budget{Duration: time.Hour, Bytes: 1}, "would pass the budget's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan(t, twin.DefaultDuration)
			p.Budget = tc.budget
			f := &fake{}
			o := Run(context.Background(), p, f.measures(), Options{Grace: time.Millisecond})
			for _, s := range o.Steps {
				if s.Step.Bytes > 0 || tc.name == "time" {
					if !strings.Contains(s.Skipped, tc.spent) {
						t.Errorf("%s step: skipped %q, want %q", s.Step.Kind, s.Skipped, tc.spent)
					}
				}
			}
		})
	}
}

func TestBandwidthSize(t *testing.T) {
	for _, tc := range []struct {
		mtus []twin.MTU
		want int
	}{
		{nil, 1472},
		{[]twin.MTU{{Bytes: 9000}}, 1472},
		{[]twin.MTU{{Bytes: 9000}, {Bytes: 1280}}, 1252},
	} {
		if got := bandwidthSize(tc.mtus); got != tc.want {
			t.Errorf("bandwidthSize(%v) = %d, want %d", tc.mtus, got, tc.want)
		}
	}
}

func TestAgentMeasuresNeedTheHosts(t *testing.T) {
	m := AgentMeasures(map[string]measure.Endpoint{"a": {Host: "a"}})
	_, err := m.Probe(context.Background(), "a", "b", probe.Spec{Count: 1})
	if !errors.Is(err, measure.ErrNoHost) || !strings.Contains(err.Error(), "host b") {
		t.Errorf("probe toward a host with no endpoint: %v, want ErrNoHost naming b", err)
	}
	if _, err := m.Trace(context.Background(), "c", "a"); !errors.Is(err, measure.ErrNoHost) {
		t.Errorf("trace from a host with no endpoint: %v, want ErrNoHost", err)
	}
}

// A UDP load the policy refuses leaves its probes unloaded: no load test;
// a check's loads run at the rates given.
func TestRunUDPLoads(t *testing.T) {
	p := testPlan(t, twin.DefaultDuration)
	f := &fake{}
	m := f.measures()
	m.Impact = func(ctx context.Context, from, to string, spec impact.Spec) (*impact.Result, error) {
		f.udpRates = append(f.udpRates, spec.Load.UDPRate)
		ps := probe.Spec{Count: 10, Interval: spec.Interval, Size: spec.Size, Timeout: time.Second}
		// As impact.Measure: the probes ran, the load was refused.
		return &impact.Result{Before: summary(from, to, ps), During: summary(from, to, ps), LoadStart: time.Now(), Partial: true}, errRefused
	}
	rates := map[[2]string]float64{{"a", "b"}: 31e6, {"b", "a"}: 17e6}
	o := Run(context.Background(), p, m, Options{LoadRates: rates})
	if len(o.Campaign.Loads) != 0 {
		t.Errorf("%d load tests from refused loads, want none", len(o.Campaign.Loads))
	}
	if !slices.Equal(f.udpRates, []float64{31e6, 17e6}) {
		t.Errorf("loads at %v bit/s, want the rates given (31e6, 17e6)", f.udpRates)
	}
}

// The agents' rate for paced tests caps the loads.
func TestRunUDPLoadsCapped(t *testing.T) {
	f := &fake{}
	Run(context.Background(), testPlan(t, twin.DefaultDuration), f.measures(), Options{MaxLoadBPS: 22e6})
	if !slices.Equal(f.udpRates, []float64{22e6, 22e6}) {
		t.Errorf("loads at %v bit/s, want both at the cap of 22e6 (not 1.25x the 20e6 capacity)", f.udpRates)
	}
}
