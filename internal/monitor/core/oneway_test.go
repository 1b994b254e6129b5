package core

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/owd"
)

// owdTruth is a path a -> b probed 10 times a second, summarised every
// 10 s, with clocks offset by 300 ms and drifting at 50 ppm: fwdStep ms
// on the forward delay and clockStep ms on the offset from summary at on;
// from summary lifted on (if later than at), the forward step is gone but
// for left ms.
type owdTruth struct {
	at                 int
	fwdStep, clockStep float64
	lifted             int
	left               float64
}

func (tr owdTruth) summary(rng *rand.Rand, t0 time.Time, i int) OneWaySamples {
	var s OneWaySamples
	for k := range 100 {
		t := float64(i*100+k) / 10
		theta := 300 + 50e-3*t
		f, b := 12+0.3*rng.ExpFloat64(), 17+0.3*rng.ExpFloat64()
		if i >= tr.at {
			f += tr.fwdStep
			theta += tr.clockStep
		}
		if tr.lifted > tr.at && i >= tr.lifted {
			f += tr.left - tr.fwdStep
		}
		d := func(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }
		sent := t0.Add(time.Duration(t * float64(time.Second)))
		s.Forward = append(s.Forward, owd.Sample{Sent: sent, Delay: d(f + theta)})
		s.Back = append(s.Back, owd.Sample{Sent: sent.Add(d(f + theta)), Delay: d(b - theta)})
	}
	return s
}

func TestOneWayStepPerDirection(t *testing.T) {
	const period = 10 * time.Second
	k := PathKey{Src: "a", Dst: "b", Test: "lat"}
	th := Thresholds{RTTStep: time.Millisecond}
	for _, c := range []struct {
		name          string
		truth         owdTruth
		wantFired     bool
		wantRestarted bool
	}{
		{"5 ms forward step, clocks drifting", owdTruth{at: 12, fwdStep: 5}, true, false},
		{"quiet", owdTruth{at: 1 << 30}, false, false},
		{"the clocks step: a restart, no alert", owdTruth{at: 12, clockStep: 20}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 37))
			t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
			w := NewOneWay()
			var fired []Alert
			firedAt, restarted := -1, false
			for i := range 30 {
				end := t0.Add(time.Duration(i+1) * period)
				res, err := w.Observe(k, end, c.truth.summary(rng, t0, i), th, period, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Fired) > 0 && firedAt < 0 {
					firedAt = i
				}
				fired = append(fired, res.Fired...)
				for _, e := range res.Events {
					restarted = restarted || strings.Contains(e, "clocks' offset stepped")
				}
				if i == 11 && res.Forward.State != owd.Tracking {
					t.Fatalf("still %s after two minutes", res.Forward.State)
				}
			}
			if restarted != c.wantRestarted {
				t.Errorf("restarted %v, want %v", restarted, c.wantRestarted)
			}
			if !c.wantFired {
				if len(fired) > 0 {
					t.Errorf("alerts %+v, want none", fired)
				}
				return
			}
			if len(fired) != 1 || fired[0].Src != "a" || fired[0].Dst != "b" || fired[0].Rule != RuleOWDStep {
				t.Fatalf("alerts %+v, want one owd_step on a -> b", fired)
			}
			t.Logf("found at summary %d: %s", firedAt, fired[0].Message)
			if firedAt > c.truth.at+2 {
				t.Errorf("found at summary %d, the step came at %d: want within 2 summaries", firedAt, c.truth.at)
			}
			if v := fired[0].Value; math.Abs(v-0.005) > 0.001 {
				t.Errorf("step of %v s, want 5 ms", v)
			}
			if !strings.Contains(fired[0].Message, "offset unknown, changes reliable to") {
				t.Errorf("message %q does not say what is known", fired[0].Message)
			}
			// The new level lasted the window: the alert ended.
			if len(w.Active()) != 0 {
				t.Errorf("still active after the window: %+v", w.Active())
			}
			obs := w.Segments(func(PathKey) bool { return true }, starVia, SourceExpected)
			if len(obs) != 2 || obs[0].Figure != FigureOWD {
				t.Errorf("observations %+v", obs)
			}
		})
	}
}

// A step lifted ends its alert within two summaries, though the delay does
// not come back to the microsecond: what is left (10-50 us here; a
// namespace path's CPU drift) is well under half the smallest step.
func TestOneWayStepLifted(t *testing.T) {
	const period = 10 * time.Second
	k := PathKey{Src: "a", Dst: "b", Test: "lat"}
	th := Thresholds{RTTStep: time.Millisecond}
	for _, left := range []float64{0, 0.01, 0.05, -0.03} {
		rng := rand.New(rand.NewPCG(7, 37))
		t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
		truth := owdTruth{at: 12, fwdStep: 15, lifted: 20, left: left}
		w := NewOneWay()
		firedAt, endedAt := -1, -1
		for i := range 30 {
			res, err := w.Observe(k, t0.Add(time.Duration(i+1)*period), truth.summary(rng, t0, i), th, period, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Fired) > 0 && firedAt < 0 {
				firedAt = i
			}
			if len(res.Resolved) > 0 && endedAt < 0 {
				endedAt = i
			}
		}
		if firedAt < truth.at || firedAt > truth.at+2 {
			t.Errorf("%.2f ms left: fired at summary %d, the step came at %d", left, firedAt, truth.at)
		}
		if endedAt < truth.lifted || endedAt > truth.lifted+2 {
			t.Errorf("%.2f ms left: ended at summary %d, the step was lifted at %d: want within 2 summaries", left, endedAt, truth.lifted)
		}
		if len(w.Active()) != 0 {
			t.Errorf("%.2f ms left: still active: %+v", left, w.Active())
		}
	}
}

// A step whose alert ended with the window (the new level lasted), then
// lifted, is a step of its own: its alert lasts while the delay stays back
// at the old level, though that is where the tracking window started.
func TestOneWayStepBackAfterWindow(t *testing.T) {
	const period = 10 * time.Second
	k := PathKey{Src: "a", Dst: "b", Test: "lat"}
	th := Thresholds{RTTStep: time.Millisecond}
	rng := rand.New(rand.NewPCG(7, 37))
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	truth := owdTruth{at: 12, fwdStep: 15, lifted: 24}
	w := NewOneWay()
	var fired []int
	for i := range 30 {
		res, err := w.Observe(k, t0.Add(time.Duration(i+1)*period), truth.summary(rng, t0, i), th, period, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Fired) > 0 {
			fired = append(fired, i)
		}
		if len(fired) == 2 && i <= fired[1]+3 && len(w.Active()) != 1 {
			t.Fatalf("summary %d: the step back found at %d is no longer active", i, fired[1])
		}
	}
	if len(fired) != 2 || fired[1] < truth.lifted || fired[1] > truth.lifted+2 {
		t.Fatalf("alerts fired at summaries %v, want the step at %d and the step back at %d", fired, truth.at, truth.lifted)
	}
}
