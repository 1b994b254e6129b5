package twinrun

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/twin"
)

func campaign(t *testing.T) twin.Campaign {
	t.Helper()
	return Run(context.Background(), testPlan(t, twin.DefaultDuration), (&fake{}).measures(), Options{}).Campaign
}

func find(t *testing.T, fs []Figure, name, way string) Figure {
	t.Helper()
	for _, f := range fs {
		if f.Name == name && f.Way == way {
			return f
		}
	}
	t.Fatalf("no figure %s %s in %+v", name, way, fs)
	return Figure{}
}

func TestCompare(t *testing.T) {
	path := campaign(t)
	tw, err := twin.New(path)
	if err != nil {
		t.Fatal(err)
	}
	// The same campaign replays itself: every figure that both have is met.
	fs := Compare(path, path, tw)
	for _, f := range fs {
		if f.Missing == "" && (!f.Met || f.Error != 0) {
			t.Errorf("%s %s: %+v; the same campaign must meet it exactly", f.Name, f.Way, f)
		}
	}
	if f := find(t, fs, FigBurst, "a->b"); f.Missing == "" {
		t.Errorf("burst of a path with no loss compared: %+v", f)
	}

	// A replay whose 8 streams get 25% more, and whose loads see twice
	// the round trip, misses both and names the knob.
	replay := campaign(t)
	for i, s := range replay.Throughput {
		if s.Streams == 8 && s.From == "a" {
			replay.Throughput[i].BPS *= 1.25
		}
	}
	for i, l := range replay.Loads {
		if l.LoadFrom == "b" {
			for j := range l.During.Probes {
				replay.Loads[i].During.Probes[j].RTT *= 2
			}
		}
	}
	replay.Available = nil
	fs = Compare(path, replay, tw)
	for _, tc := range []struct {
		name, way string
		met       bool
		err       float64
		why       string
	}{
		{FigThroughput8, "a->b", false, 0.25, "cross traffic"},
		{FigThroughput8, "b->a", true, 0, ""},
		{FigThroughput1, "a->b", true, 0, ""},
		{FigRTTLoaded, "b->a", false, 1, "queue"},
		{FigRTTLoaded, "a->b", true, 0, ""},
	} {
		f := find(t, fs, tc.name, tc.way)
		if f.Met != tc.met || f.Error < tc.err-1e-9 || f.Error > tc.err+1e-9 || !strings.HasPrefix(f.Why, tc.why) {
			t.Errorf("%s %s: %+v; want met %v, error %g, why beginning %q", tc.name, tc.way, f, tc.met, tc.err, tc.why)
		}
	}
	if f := find(t, fs, FigAvailable, "a->b"); f.Missing != "no available-bandwidth estimate on the twin" {
		t.Errorf("available with none on the twin: %+v", f)
	}
	var b bytes.Buffer
	if err := WriteCheck(&b, fs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MISS", "not compared: no available-bandwidth estimate on the twin", "miss: throughput, 8 streams a->b: cross traffic", "figures within their targets"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, b.String())
		}
	}
}

func TestLossFigures(t *testing.T) {
	fit := &twin.Fit{LossModel: twin.Bernoulli, Evidence: map[string]twin.Estimate{}}
	for _, tc := range []struct {
		name          string
		path, replay  twin.LossCount
		rateMet       bool
		burstMissing  bool
		burstMet      bool
		rateMissing   bool
		wantBurstWhy  string
		wantRateError float64
	}{
		{"alike", twin.LossCount{Lost: 10, Sent: 2000, Runs: 10}, twin.LossCount{Lost: 12, Sent: 2000, Runs: 11}, true, false, true, false, "", 0.2},
		{"rate far off", twin.LossCount{Lost: 10, Sent: 2000, Runs: 10}, twin.LossCount{Lost: 100, Sent: 2000, Runs: 100}, false, false, true, false, "", 9},
		{"bursts", twin.LossCount{Lost: 40, Sent: 2000, Runs: 10}, twin.LossCount{Lost: 40, Sent: 2000, Runs: 40}, true, false, false, false, "loss model: the twin's losses are independent", 0},
		{"too few runs", twin.LossCount{Lost: 2, Sent: 2000, Runs: 2}, twin.LossCount{Lost: 3, Sent: 2000, Runs: 3}, true, true, false, false, "", 0.5},
		{"no probes on the twin", twin.LossCount{Lost: 2, Sent: 2000, Runs: 2}, twin.LossCount{}, false, true, false, true, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := lossFigures(tc.path, tc.replay, "a->b", fit)
			rate, burst := fs[0], fs[1]
			if rate.Met != tc.rateMet || (rate.Missing != "") != tc.rateMissing || rate.Error < tc.wantRateError-1e-9 || rate.Error > tc.wantRateError+1e-9 {
				t.Errorf("rate %+v", rate)
			}
			if (burst.Missing != "") != tc.burstMissing || burst.Met != tc.burstMet || !strings.HasPrefix(burst.Why, tc.wantBurstWhy) {
				t.Errorf("burst %+v", burst)
			}
		})
	}
}
