package core

import (
	"strings"
	"testing"
	"time"
)

func detectorConfig(t *testing.T) *Config {
	t.Helper()
	cfg, err := Parse("d.yaml", []byte(`testbed: x
groups: {g: [a, b]}
tests:
  - {name: lat, type: probe, group: g}
  - {name: bulk, type: throughput, group: g, every: 1h}
alerts: {throughput_below: 50%, loss_above: 1%, rtt_step: 5ms, for: 2}
baseline: {window: 1h, min_points: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Losses of 100 probes with their 95% Wilson intervals.
var (
	lost0  = LossCount{Lost: 0, Of: 100, Low: 0, High: 0.036993}
	lost1  = LossCount{Lost: 1, Of: 100, Low: 0.001767, High: 0.054486}
	lost2  = LossCount{Lost: 2, Of: 100, Low: 0.005502, High: 0.070012}
	lost5  = LossCount{Lost: 5, Of: 100, Low: 0.021544, High: 0.111750}
	lost6  = LossCount{Lost: 6, Of: 100, Low: 0.027786, High: 0.124768}
	lost50 = LossCount{Lost: 50, Of: 100, Low: 0.403832, High: 0.596168}
)

// probeObs is a summary of 100 probes from a to b with no one-way loss
// known: loss is 0, 0.05 or 0.5.
func probeObs(at time.Time, rtt, loss float64) Observation {
	k := PathKey{Src: "a", Dst: "b", Test: "lat"}
	count := map[float64]LossCount{0: lost0, 0.05: lost5, 0.5: lost50}[loss]
	return Observation{Key: k, Type: Probe, At: at, Points: []Point{
		{T: at, Src: "a", Dst: "b", Test: "lat", Metric: string(RTTMin), Value: rtt},
		{T: at, Src: "a", Dst: "b", Test: "lat", Metric: "loss_ratio", Value: loss},
	}, Loss: map[Name]LossCount{LossRatio: count}}
}

func TestDetectorRTTStep(t *testing.T) {
	d := NewDetector(detectorConfig(t))
	t0 := time.Unix(1e9, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	// A quiet path: 10 ms give or take 0.2 ms, never an alert.
	for i := range 20 {
		if fired, _ := d.Observe(probeObs(at(i), 0.010+float64(i%3-1)*0.0002, 0)); len(fired) > 0 {
			t.Fatalf("minute %d of a quiet path fired %+v", i, fired)
		}
	}
	if med, _, n := d.Baseline(PathKey{Src: "a", Dst: "b", Test: "lat"}, RTTMin); med != 0.010 || n != 20 {
		t.Errorf("baseline %g over %d, want 0.010 over 20", med, n)
	}
	// The route changes: +40 ms. The first result breaks the threshold,
	// the second in a row fires.
	if fired, _ := d.Observe(probeObs(at(20), 0.050, 0)); len(fired) != 0 {
		t.Fatalf("fired on the first result: %+v", fired)
	}
	fired, _ := d.Observe(probeObs(at(21), 0.050, 0))
	if len(fired) != 1 || fired[0].Rule != RuleRTTStep || fired[0].Baseline != 0.010 || !strings.Contains(fired[0].Message, "the route changed?") {
		t.Fatalf("fired %+v, want one rtt_step against a 10 ms baseline", fired)
	}
	// Still high: no repeat, and the baseline does not learn the new RTT.
	if fired, _ := d.Observe(probeObs(at(22), 0.050, 0)); len(fired) != 0 {
		t.Errorf("fired again: %+v", fired)
	}
	if med, _, _ := d.Baseline(PathKey{Src: "a", Dst: "b", Test: "lat"}, RTTMin); med != 0.010 {
		t.Errorf("the baseline learnt the degraded path: %g", med)
	}
	if len(d.Active()) != 1 {
		t.Errorf("active %+v", d.Active())
	}
	// The route comes back: resolved.
	_, resolved := d.Observe(probeObs(at(23), 0.010, 0))
	if len(resolved) != 1 || !resolved[0].Ended.Equal(at(23)) || len(d.Active()) != 0 {
		t.Errorf("resolved %+v, active %+v", resolved, d.Active())
	}
}

func TestDetectorLossThroughputNoDataClock(t *testing.T) {
	d := NewDetector(detectorConfig(t))
	t0 := time.Unix(1e9, 0)
	d.Observe(probeObs(t0, 0.01, 0.05))
	fired, _ := d.Observe(probeObs(t0.Add(time.Minute), 0.01, 0.05))
	if len(fired) != 1 || fired[0].Rule != RuleLossAbove || fired[0].Value != 0.05 {
		t.Errorf("loss: fired %+v", fired)
	}
	// A disturbed summary (our own throughput test ran) is neither judged nor learnt.
	o := probeObs(t0.Add(2*time.Minute), 0.5, 0.5)
	o.Disturbed, o.Covered = "a throughput-class test a->b ran meanwhile", 0.9
	if fired, resolved := d.Observe(o); len(fired)+len(resolved) != 0 {
		t.Errorf("a disturbed summary fired %+v resolved %+v", fired, resolved)
	}
	k := PathKey{Src: "a", Dst: "b", Test: "bulk"}
	tp := func(i int, v float64) Observation {
		at := t0.Add(time.Duration(i) * 10 * time.Minute)
		return Observation{Key: k, Type: Throughput, At: at, Points: []Point{{T: at, Metric: "throughput_bits_per_second", Value: v}}}
	}
	// No baseline yet: a low first result cannot alert.
	for i, v := range []float64{9e6, 9.5e6, 9.4e6} {
		if fired, _ := d.Observe(tp(i, v)); len(fired) != 0 {
			t.Fatalf("fired before the baseline: %+v", fired)
		}
	}
	d.Observe(tp(3, 3e6))
	fired, _ = d.Observe(tp(4, 3e6))
	if len(fired) != 1 || fired[0].Rule != RuleThroughputBelow || fired[0].Threshold != 4.7e6 {
		t.Errorf("throughput: fired %+v, want throughput_below under 4.7 Mbit/s", fired)
	}
	// An agent down: no data, after two failures in a row.
	nd := Observation{Key: k, Type: Throughput, At: t0.Add(5 * time.Hour), Failed: "the agent on b stopped answering"}
	d.Observe(nd)
	fired, _ = d.Observe(nd)
	if len(fired) != 1 || fired[0].Rule != RuleNoData || !strings.Contains(fired[0].Message, "stopped answering") {
		t.Errorf("no data: fired %+v", fired)
	}
	// A clock that loses sync fires at once.
	c := probeObs(t0.Add(3*time.Minute), 0.01, 0)
	c.ClockProblem = "b's clock is not synchronised"
	fired, _ = d.Observe(c)
	if len(fired) != 1 || fired[0].Rule != RuleClock {
		t.Errorf("clock: fired %+v", fired)
	}
}

func TestDetectorHopChange(t *testing.T) {
	d := NewDetector(detectorConfig(t)) // for: 2, min_points: 3
	k := PathKey{Src: "a", Dst: "b", Test: "route"}
	t0 := time.Unix(1e9, 0)
	obs := func(i int, hops ...string) ([]Alert, []Alert) {
		return d.Observe(Observation{Key: k, Type: Trace, At: t0.Add(time.Duration(i) * time.Minute), Hops: hops})
	}
	old, changed := []string{"10.0.0.1", "10.0.1.1", "10.0.9.9"}, []string{"10.0.0.1", "10.0.2.1", "10.0.9.9"}
	for i := range 3 {
		if f, _ := obs(i, old...); len(f) > 0 {
			t.Fatalf("fired on a steady route: %+v", f)
		}
	}
	// A router that does not answer once is not a change.
	if f, _ := obs(3, "10.0.0.1", "*", "10.0.9.9"); len(f) > 0 {
		t.Errorf("a silent hop fired %+v", f)
	}
	if f, _ := obs(4, changed...); len(f) > 0 {
		t.Fatalf("fired on the first changed trace: %+v", f)
	}
	f, _ := obs(5, changed...)
	if len(f) != 1 || f[0].Rule != RuleHopChange || !strings.Contains(f[0].Message, "10.0.2.1") || !strings.Contains(f[0].Message, "was 10.0.0.1 10.0.1.1") {
		t.Fatalf("fired %+v, want hop_change naming both routes", f)
	}
	// Seen three times in a row, the new route is the route: resolved.
	_, r := obs(6, changed...)
	if len(r) != 1 || r[0].Rule != RuleHopChange || len(d.Active()) != 0 {
		t.Errorf("resolved %+v, active %+v", r, d.Active())
	}
	if f, _ := obs(7, changed...); len(f) > 0 {
		t.Errorf("the learnt route fired again: %+v", f)
	}
}
