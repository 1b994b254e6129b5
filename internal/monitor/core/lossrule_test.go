package core

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestLossRuleDirection: loss_above judges the path's own direction (its
// forward loss) when it is known and the round trip otherwise, says
// which, and gives no judgement on a loss the probes cannot tell from
// the threshold.
func TestLossRuleDirection(t *testing.T) {
	// Each case is a series of summaries of the path a->b (loss_above:
	// 1%, for: 2), by their loss counts; fires is the rule fired after
	// the last, with a message saying judged.
	type counts = map[Name]LossCount
	for _, c := range []struct {
		name    string
		series  []counts
		fires   bool
		judged  Name
		message string
	}{
		{"forward loss", []counts{
			{LossRatio: lost6, LossForward: lost6, LossBack: lost0},
			{LossRatio: lost6, LossForward: lost6, LossBack: lost0},
		}, true, LossForward, "forward loss 6.00% (6 of 100, 95% interval 2.78% to 12.48%) is above 1.00%"},
		{"loss on the way back is the other path's", []counts{
			{LossRatio: lost6, LossForward: lost0, LossBack: lost6},
			{LossRatio: lost6, LossForward: lost0, LossBack: lost6},
		}, false, "", ""},
		{"one-way loss unknown: the round trip", []counts{
			{LossRatio: lost6}, {LossRatio: lost6},
		}, true, LossRatio, "round-trip loss (one-way loss unknown) 6.00%"},
		{"too few probes to tell: no judgement", []counts{
			{LossRatio: lost2, LossForward: lost2, LossBack: lost0},
			{LossRatio: lost2, LossForward: lost2, LossBack: lost0},
			{LossRatio: lost2, LossForward: lost2, LossBack: lost0},
		}, false, "", ""},
		{"no judgement does not break a row", []counts{
			{LossRatio: lost6, LossForward: lost6}, {LossRatio: lost2, LossForward: lost2}, {LossRatio: lost5, LossForward: lost5},
		}, true, LossForward, "forward loss 5.00%"},
		{"a clear summary breaks it", []counts{
			{LossRatio: lost6, LossForward: lost6}, {LossRatio: lost1, LossForward: lost1}, {LossRatio: lost5, LossForward: lost5},
		}, false, "", ""},
		{"no counts: no judgement", []counts{nil, nil}, false, "", ""},
		{"no probes: no judgement", []counts{{LossRatio: {}}, {LossRatio: {}}}, false, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewDetector(detectorConfig(t))
			t0 := time.Unix(1e9, 0)
			var fired []Alert
			for i, l := range c.series {
				o := probeObs(t0.Add(time.Duration(i)*time.Minute), 0.01, 0)
				o.Loss = l
				fired, _ = d.Observe(o)
			}
			if !c.fires {
				if len(fired) != 0 || len(d.Active()) != 0 {
					t.Fatalf("fired %+v, active %+v; want none", fired, d.Active())
				}
				return
			}
			if len(fired) != 1 || fired[0].Rule != RuleLossAbove || !strings.Contains(fired[0].Message, c.message) {
				t.Fatalf("fired %+v, want one %s saying %q", fired, RuleLossAbove, c.message)
			}
			var ev struct {
				Judged   Name      `json:"judged"`
				Interval []float64 `json:"interval_95"`
			}
			if err := json.Unmarshal(fired[0].Evidence, &ev); err != nil || ev.Judged != c.judged || len(ev.Interval) != 2 {
				t.Errorf("evidence %s (%v), want %s judged with its interval", fired[0].Evidence, err, c.judged)
			}
		})
	}
}

// TestLossRuleResolves: a fired loss alert ends when the loss is back at
// or under the threshold, and stays through a summary of no judgement.
func TestLossRuleResolves(t *testing.T) {
	d := NewDetector(detectorConfig(t))
	t0 := time.Unix(1e9, 0)
	obs := func(i int, fwd LossCount) Observation {
		o := probeObs(t0.Add(time.Duration(i)*time.Minute), 0.01, 0)
		o.Loss = map[Name]LossCount{LossRatio: fwd, LossForward: fwd, LossBack: lost0}
		return o
	}
	d.Observe(obs(0, lost6))
	if fired, _ := d.Observe(obs(1, lost6)); len(fired) != 1 {
		t.Fatalf("fired %+v", fired)
	}
	if _, resolved := d.Observe(obs(2, lost2)); len(resolved) != 0 || len(d.Active()) != 1 {
		t.Fatalf("a summary of no judgement resolved %+v", resolved)
	}
	if _, resolved := d.Observe(obs(3, lost1)); len(resolved) != 1 || len(d.Active()) != 0 {
		t.Errorf("1%% of loss resolved %+v, active %+v", resolved, d.Active())
	}
}
