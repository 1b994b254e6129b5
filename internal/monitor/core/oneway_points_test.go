package core

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// run feeds w n summaries of tr on path k (a -> b, every 10 s from t0)
// with thresholds th, and returns the results.
func (tr owdTruth) run(t *testing.T, w *OneWay, k PathKey, th Thresholds, n int, sync bool) []OneWayResult {
	t.Helper()
	const period = 10 * time.Second
	rng := rand.New(rand.NewPCG(7, 37))
	var out []OneWayResult
	for i := range n {
		s := tr.summary(rng, owdT0, i)
		s.Synchronised = sync
		res, err := w.Observe(k, owdT0.Add(time.Duration(i+1)*period), s, th, period, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

var owdT0 = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

func pointValues(pts []Point) map[Name]float64 {
	out := map[Name]float64{}
	for _, p := range pts {
		out[Name(p.Metric)] = p.Value
	}
	return out
}

// Each summary gives each tracked direction's change since its window
// started and its uncertainty, and the skew of b's clock against a's
// (drifting at 50 ppm); nothing while the windows learn, no skew with
// synchronised clocks. Every figure is a registered probe metric.
func TestOneWayPoints(t *testing.T) {
	k := PathKey{Src: "a", Dst: "b", Test: "lat"}
	for _, c := range []struct {
		name              string
		truth             owdTruth
		sync              bool
		wantFwd, wantBack float64 // ms
		wantSkew          bool
		// maxUnc bounds the uncertainties (s): the clocks said to be
		// synchronised still drift, which the windows take for spread.
		maxUnc float64
	}{
		{"quiet, clocks drifting", owdTruth{at: 1 << 30}, false, 0, 0, true, 0.002},
		{"5 ms forward step", owdTruth{at: 12, fwdStep: 5}, false, 5, 0, true, 0.002},
		{"synchronised: no skew", owdTruth{at: 1 << 30}, true, math.NaN(), math.NaN(), false, 0.1},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := c.truth.run(t, NewOneWay(), k, Thresholds{RTTStep: time.Millisecond}, 30, c.sync)
			if len(res[0].Points) != 0 {
				t.Errorf("figures while learning: %+v", res[0].Points)
			}
			last := res[len(res)-1].Points
			for _, p := range last {
				if _, ok := PathMetric(p.Metric); !ok || !slices.Contains(Of(Probe), Name(p.Metric)) {
					t.Errorf("%s is not a registered probe metric", p.Metric)
				}
				if p.Src != "a" || p.Dst != "b" || p.Test != "lat" || !p.T.Equal(owdT0.Add(300*time.Second)) {
					t.Errorf("point %+v, want a -> b (lat) at the summary's end", p)
				}
			}
			v := pointValues(last)
			for _, n := range []Name{OWDForwardChange, OWDBackChange, OWDForwardUncertainty, OWDBackUncertainty} {
				if _, ok := v[n]; !ok {
					t.Errorf("no %s in %v", n, v)
				}
			}
			for _, u := range []Name{OWDForwardUncertainty, OWDBackUncertainty} {
				if v[u] <= 0 || v[u] > c.maxUnc {
					t.Errorf("%s = %v s, want above 0 and within %v s", u, v[u], c.maxUnc)
				}
			}
			for n, want := range map[Name]float64{OWDForwardChange: c.wantFwd, OWDBackChange: c.wantBack} {
				if !math.IsNaN(want) && math.Abs(v[n]*1e3-want) > 1 {
					t.Errorf("%s = %.2f ms, want %.0f ms", n, v[n]*1e3, want)
				}
			}
			skew, ok := v[ClockSkew]
			if ok != c.wantSkew || ok && math.Abs(skew-50) > 5 {
				t.Errorf("%s = %v (present %v), want 50 ppm present %v", ClockSkew, skew, ok, c.wantSkew)
			}
		})
	}
}

// owd_step: alone sets the smallest step; absent, rtt_step does, and 1 ms
// without either.
func TestOneWayStepThreshold(t *testing.T) {
	k := PathKey{Src: "a", Dst: "b", Test: "lat"}
	for _, c := range []struct {
		name string
		th   Thresholds
		want bool
	}{
		{"owd_step above the step", Thresholds{RTTStep: time.Millisecond, OWDStep: 10 * time.Millisecond}, false},
		{"owd_step below it, rtt_step above", Thresholds{RTTStep: 20 * time.Millisecond, OWDStep: 2 * time.Millisecond}, true},
		{"rtt_step above it", Thresholds{RTTStep: 20 * time.Millisecond}, false},
		{"neither: 1 ms", Thresholds{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fired []Alert
			for _, r := range (owdTruth{at: 12, fwdStep: 5}).run(t, NewOneWay(), k, c.th, 20, false) {
				fired = append(fired, r.Fired...)
			}
			if got := len(fired) > 0; got != c.want {
				t.Fatalf("alerts %+v, want some %v", fired, c.want)
			}
			if c.want && fired[0].Threshold != c.th.OneWayStep().Seconds() {
				t.Errorf("threshold %v s, want %v", fired[0].Threshold, c.th.OneWayStep())
			}
		})
	}
}

// A new threshold (a reload) restarts the windows and says so; so does a
// step of the clocks, found by the pair or told (Restart): each event
// reaches the path's status for a window's span.
func TestOneWayRestartNotice(t *testing.T) {
	k := PathKey{Src: "a", Dst: "b", Test: "lat"}
	th := Thresholds{RTTStep: time.Millisecond}
	end := owdT0.Add(300 * time.Second)
	for _, c := range []struct {
		name  string
		steps func(t *testing.T, w *OneWay) []OneWayResult
		want  []string
	}{
		{"quiet", func(t *testing.T, w *OneWay) []OneWayResult {
			return owdTruth{at: 1 << 30}.run(t, w, k, th, 30, false)
		}, nil},
		{"the clocks step", func(t *testing.T, w *OneWay) []OneWayResult {
			return owdTruth{at: 25, clockStep: 20}.run(t, w, k, th, 30, false)
		}, []string{"clocks' offset stepped by +20", "learning again"}},
		{"told of a clock step", func(t *testing.T, w *OneWay) []OneWayResult {
			owdTruth{at: 1 << 30}.run(t, w, k, th, 29, false)
			w.Restart(k, "the clock stepped during the session")
			s := owdTruth{at: 1 << 30}.summary(rand.New(rand.NewPCG(1, 2)), owdT0, 29)
			r, err := w.Observe(k, end, s, th, 10*time.Second, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			return []OneWayResult{r}
		}, []string{"restarted at 00:05:00 UTC: the clock stepped during the session", "learning again"}},
		{"a new threshold", func(t *testing.T, w *OneWay) []OneWayResult {
			owdTruth{at: 1 << 30}.run(t, w, k, th, 29, false)
			s := owdTruth{at: 1 << 30}.summary(rand.New(rand.NewPCG(1, 2)), owdT0, 29)
			r, err := w.Observe(k, end, s, Thresholds{OWDStep: 3 * time.Millisecond}, 10*time.Second, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			return []OneWayResult{r}
		}, []string{"smallest one-way delay step is now 3ms (was 1ms)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := NewOneWay()
			var events []string
			for _, r := range c.steps(t, w) {
				events = append(events, r.Events...)
			}
			status := w.Status(k, end)
			t.Logf("status: %q", status)
			for _, want := range c.want {
				if !strings.Contains(status, want) {
					t.Errorf("status %q lacks %q", status, want)
				}
			}
			if c.want == nil && status != "" {
				t.Errorf("status %q, want none", status)
			}
			if (len(events) > 0) != (c.want != nil) {
				t.Errorf("events %q", events)
			}
			if got := w.Status(k, end.Add(11*time.Minute)); got != "" {
				t.Errorf("status %q a window later, want none", got)
			}
		})
	}
}

// An owd_step alert is acknowledged like a path's alert: the ack shows
// while it is active and stays with it when it ends.
func TestOneWayAck(t *testing.T) {
	k := PathKey{Src: "a", Dst: "b", Test: "lat"}
	w := NewOneWay()
	tr := owdTruth{at: 12, fwdStep: 5}
	rng := rand.New(rand.NewPCG(7, 37))
	var ended []Alert
	var ref string
	for i := range 30 {
		res, err := w.Observe(k, owdT0.Add(time.Duration(i+1)*10*time.Second), tr.summary(rng, owdT0, i), Thresholds{RTTStep: time.Millisecond}, 10*time.Second, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Fired) > 0 {
			ref = res.Fired[0].Ref
			if w.Ack("owd_step/nope", "ops", "", owdT0) {
				t.Error("an unknown ref was acknowledged")
			}
			if !w.Ack(ref, "ops", "looking", owdT0) {
				t.Fatalf("the active alert %s was not acknowledged", ref)
			}
			if a := w.Active(); len(a) != 1 || a[0].AckedBy != "ops" || a[0].AckNote != "looking" {
				t.Errorf("active %+v, want acknowledged by ops", a)
			}
		}
		ended = append(ended, res.Resolved...)
	}
	if ref == "" || len(ended) != 1 || ended[0].Ref != ref || ended[0].AckedBy != "ops" {
		t.Errorf("ended %+v, want %s acknowledged", ended, ref)
	}
}
