package twin

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/golden"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/units"
)

// TestScenarioGolden keeps the written scenario of a few campaigns
// (go test -update rewrites them).
func TestScenarioGolden(t *testing.T) {
	cases := map[string]truth{}
	for _, tc := range knownTruth {
		cases[tc.name] = tc.tr
	}
	for _, name := range []string{"100Mbit-asymmetric-synced", "20Mbit-80ms-small-queue", "route-change", "onoff-cross"} {
		t.Run(name, func(t *testing.T) {
			tw, err := New(campaignOf(cases[name]))
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/"+name+".yaml", string(loadsScenario(t, tw)))
		})
	}
}

// TestTooLittleData: what a campaign does not measure is named unknown,
// with the default the twin uses, and the scenario still loads.
func TestTooLittleData(t *testing.T) {
	base := knownTruth[0].tr
	skip := func(what ...string) truth {
		tr := base
		tr.skip = map[string]bool{}
		for _, w := range what {
			tr.skip[w] = true
		}
		return tr
	}
	for _, tc := range []struct {
		name    string
		c       Campaign
		unknown []string // of the forward way
	}{
		{"nothing", Campaign{A: "a", B: "b"}, []string{KeyRate, KeyDelay, KeyJitter, KeySplit, KeyQueue, KeyLoss, KeyModel, KeyCross, KeyMTU}},
		{"probes only", campaignOf(skip("loads", "capacity", "available")), []string{KeyRate, KeyQueue, KeyCross, KeySplit}},
		{"no load", campaignOf(skip("loads")), []string{KeyQueue, KeySplit}},
		{"no loss", campaignOf(knownTruth[5].tr), []string{KeyModel, KeySplit}},
		{"archive", FromHistory("a", "b", historyOf(campaignOf(base)), HistoryOptions{}), []string{KeyQueue, KeyModel, KeySplit, KeyMTU}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tw, err := New(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, u := range tw.Forward.Unknown {
				names = append(names, u.Name)
				if u.Why == "" || u.Default == "" {
					t.Errorf("unknown %+v says neither why nor its default", u)
				}
				if e, ok := tw.Forward.Evidence[u.Name]; ok && !e.Default && !e.AtLeast && u.Name != KeySplit && u.Name != KeyLoss {
					t.Errorf("%s is unknown, but its evidence %+v is not marked a default", u.Name, e)
				}
			}
			slices.Sort(names)
			want := slices.Sorted(slices.Values(tc.unknown))
			if !slices.Equal(names, want) {
				t.Errorf("unknown %v, want %v", names, want)
			}
			out := loadsScenario(t, tw)
			for _, u := range tw.Forward.Unknown {
				if !bytes.Contains(out, []byte("# Unknown (forward "+u.Name+")")) {
					t.Errorf("the scenario does not name %s as unknown:\n%s", u.Name, out)
				}
			}
		})
	}
}

// historyOf is the points wanlab serve would have archived of a
// campaign: each probe round's summary figures, and the rates.
func historyOf(c Campaign) []archive.Point {
	var out []archive.Point
	for _, r := range c.Probes {
		for k := 0; k+100 <= len(r.Probes); k += 100 {
			ps := r.Probes[k : k+100]
			var rtts []float64
			lost := 0
			for _, p := range ps {
				if p.Lost {
					lost++
				} else {
					rtts = append(rtts, p.RTT.Seconds())
				}
			}
			at := ps[0].Sent
			pt := func(m string, v float64) archive.Point {
				return archive.Point{T: at, Src: r.From, Dst: r.To, Test: "probes", Metric: m, Value: v}
			}
			out = append(out, pt(metricRTTMin, slices.Min(rtts)), pt(metricLoss, float64(lost)/100), pt(metricJitter, 0))
		}
	}
	for _, s := range c.Capacity {
		out = append(out, archive.Point{T: s.At, Src: s.From, Dst: s.To, Test: "capacity", Metric: results.BandwidthCapacity, Value: s.BPS})
	}
	for _, s := range c.Available {
		out = append(out, archive.Point{T: s.At, Src: s.From, Dst: s.To, Test: "available", Metric: results.BandwidthAvailable, Value: s.BPS})
	}
	for _, s := range c.Throughput {
		out = append(out, archive.Point{T: s.At, Src: s.From, Dst: s.To, Test: "throughput", Metric: metricThroughput, Value: s.BPS})
	}
	return append(out, archive.Point{T: t0, Src: "c", Dst: "a", Metric: metricRTTMin, Value: 1})
}

// TestHistory: a twin of an archive's points fits the rate, the round
// trip and the cross traffic as a campaign's would, within a time range.
func TestHistory(t *testing.T) {
	tr := knownTruth[0].tr
	points := historyOf(campaignOf(tr))
	c := FromHistory("a", "b", points, HistoryOptions{})
	if len(c.Summaries) == 0 || len(c.Capacity) == 0 || len(c.Available) == 0 {
		t.Fatalf("campaign of the history: %d summaries, %d capacity, %d available", len(c.Summaries), len(c.Capacity), len(c.Available))
	}
	tw, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	v, msgs := judge(tr, tw)
	if !v.rate || !v.rtt || !v.cross {
		t.Errorf("history's twin: %v", msgs)
	}
	late := FromHistory("a", "b", points, HistoryOptions{From: t0.Add(time.Hour)})
	if len(late.Summaries)+len(late.Capacity) != 0 {
		t.Errorf("points after the range: %+v", late)
	}
}

// TestJSONShape: --json's fixed fields are there, each way.
func TestJSONShape(t *testing.T) {
	tw, err := New(campaignOf(knownTruth[2].tr))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, tw); err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, way := range []string{"forward", "reverse"} {
		var m map[string]any
		if err := json.Unmarshal(top[way], &m); err != nil {
			t.Fatalf("%s: %v", way, err)
		}
		got[way] = m
		for _, k := range []string{"rate_bps", "delay_s", "queue_bytes", "loss", "loss_model", "cross_bps", "evidence"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s has no %s", way, k)
			}
		}
	}
	if got["forward"]["loss_model"] != GilbertElliott || got["reverse"]["loss_model"] != Bernoulli {
		t.Errorf("loss models %v, %v", got["forward"]["loss_model"], got["reverse"]["loss_model"])
	}
}

// TestAgreesWithScenario: what twin keeps of the scenario's and the
// monitoring service's vocabulary (it imports neither) is theirs.
func TestAgreesWithScenario(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		delay time.Duration
		mtu   int
	}{{5e6, 150 * time.Millisecond, 1500}, {1e9, 500 * time.Microsecond, 9000}, {100e6, 20 * time.Millisecond, 1500}} {
		want := scenario.DefaultQueue(units.Rate(tc.rate), tc.delay, tc.mtu).Bytes
		if got := defaultQueue(tc.rate, tc.delay.Seconds(), tc.mtu); got != want {
			t.Errorf("default queue at %g, %v: %d, scenario's %d", tc.rate, tc.delay, got, want)
		}
	}
	for _, n := range []string{"a", "A-b_c", "-a", "", "abcdefghijklmnopqrstuvwxyz0123456", "a.b"} {
		if nameRE.MatchString(n) != scenario.ValidName(n) {
			t.Errorf("name %q: twin says %v, scenario %v", n, nameRE.MatchString(n), scenario.ValidName(n))
		}
	}
	if DefaultMTU != scenario.DefaultMTU || minMTU != scenario.MinMTU {
		t.Error("MTU bounds differ from the scenario's")
	}
	for mine, theirs := range map[string]core.Name{metricRTTMin: core.RTTMin, metricLoss: core.LossRatio, metricLossForward: core.LossForward,
		metricLossBack: core.LossBack, metricJitter: core.Jitter, metricOWDForward: core.OWDForward, metricOWDBack: core.OWDBack, metricThroughput: core.ThroughputRate} {
		if mine != string(theirs) {
			t.Errorf("metric %q, the service's %q", mine, theirs)
		}
	}
}

// TestChanges: a route change and a rate step are found, and the twin
// says it describes what came after.
func TestChanges(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   truth
		kind string
	}{{"route-change", knownTruth[7].tr, RouteChange}, {"rate-step", knownTruth[6].tr, RateStep}, {"steady", knownTruth[0].tr, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			tw, err := New(campaignOf(tc.tr))
			if err != nil {
				t.Fatal(err)
			}
			if tc.kind == "" {
				if len(tw.Changes) != 0 {
					t.Errorf("changes %+v in a steady campaign", tw.Changes)
				}
				return
			}
			if len(tw.Changes) != 1 || tw.Changes[0].Kind != tc.kind {
				t.Fatalf("changes %+v, want one %s", tw.Changes, tc.kind)
			}
			at := t0.Add(tc.tr.stepAt)
			if d := tw.Changes[0].At.Sub(at); d < 0 || d > time.Minute {
				t.Errorf("change at %v, %v after the step", tw.Changes[0].At, d)
			}
			if !tw.Segment.From.Equal(tw.Changes[0].At) {
				t.Errorf("the twin describes from %v, the change was at %v", tw.Segment.From, tw.Changes[0].At)
			}
		})
	}
}

func TestNewRefusesOneHost(t *testing.T) {
	for _, c := range []Campaign{{A: "a"}, {A: "a", B: "a"}} {
		if _, err := New(c); !errors.Is(err, ErrHosts) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	var b bytes.Buffer
	tw, _ := New(Campaign{A: "a", B: "b"})
	if err := WriteScenario(&b, tw, "bad name"); !errors.Is(err, ErrName) {
		t.Errorf("bad name: %v", err)
	}
}
