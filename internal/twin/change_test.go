package twin

import (
	"math"
	"testing"
	"time"
)

// longHistory is n probe summaries per way, every 30 s, as wanlab serve
// archives them: a least round trip of 30 ms plus rtt(i) (the i-th
// summary's extra, in seconds).
func longHistory(n int, rtt func(i int) float64) Campaign {
	c := Campaign{A: "a", B: "b"}
	for i := range n {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		for _, w := range [][2]string{{"a", "b"}, {"b", "a"}} {
			c.Summaries = append(c.Summaries, ProbeSummary{From: w[0], To: w[1], At: at.Add(time.Second),
				MinRTT: time.Duration((0.030 + rtt(i)) * float64(time.Second)), Jitter: time.Millisecond,
				Loss: 0, LossForward: -1, LossBack: -1})
		}
	}
	return c
}

// threeDays is how many 30 s summaries three days hold.
const threeDays = 3 * 24 * 120

// jitters are extras of the round trip with no route change in them.
var jitters = map[string]func(i int) float64{
	// A sawtooth of 7 levels, 1 ms apart (before the fix: 1036 route
	// changes in 1500 summaries each way, and 20 s to find them).
	"sawtooth": func(i int) float64 { return float64(i%7) * 0.001 },
	// Pseudo-random jitter of up to 3 ms, heavy-tailed now and then.
	"jitter": func(i int) float64 {
		x := math.Mod(math.Sin(float64(i)*12.9898)*43758.5453, 1)
		x = math.Abs(x)
		if i%97 == 0 {
			return 0.010 * x
		}
		return 0.003 * x
	},
}

// TestNoPhantomRouteChange: three days of jittery round trips hold no
// route change; the same with a real step of 10 ms holds one, where it is.
func TestNoPhantomRouteChange(t *testing.T) {
	if testing.Short() {
		t.Skip("three days of summaries")
	}
	for name, jitter := range jitters {
		t.Run(name, func(t *testing.T) {
			tw, err := New(longHistory(threeDays, jitter))
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range tw.Changes {
				if ch.Kind == RouteChange {
					t.Errorf("a phantom route change: %+v", ch)
				}
			}
		})
		t.Run(name+"-step", func(t *testing.T) {
			step := 2 * threeDays / 3
			tw, err := New(longHistory(threeDays, func(i int) float64 {
				if i >= step {
					return 0.010 + jitter(i)
				}
				return jitter(i)
			}))
			if err != nil {
				t.Fatal(err)
			}
			if len(tw.Changes) != 1 || tw.Changes[0].Kind != RouteChange {
				t.Fatalf("changes %+v, want one route change", tw.Changes)
			}
			at := t0.Add(time.Duration(step) * 30 * time.Second)
			if d := tw.Changes[0].At.Sub(at); d < 0 || d > 5*time.Minute {
				t.Errorf("route change at %v, %v after the step", tw.Changes[0].At, d)
			}
			if !tw.Segment.From.Equal(tw.Changes[0].At) {
				t.Errorf("the twin describes from %v, the change was at %v", tw.Segment.From, tw.Changes[0].At)
			}
		})
	}
}

// BenchmarkNewLongHistory fits three days of 30 s summaries each way.
func BenchmarkNewLongHistory(b *testing.B) {
	for _, name := range []string{"sawtooth", "jitter"} {
		c := longHistory(threeDays, jitters[name])
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := New(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStepsBounded: a staircase of 20 levels gives at most maxSteps
// steps, the latest ones, each where a level begins; a series too short
// for two sides gives none.
func TestStepsBounded(t *testing.T) {
	var stairs []float64
	for l := range 20 {
		for range 10 {
			stairs = append(stairs, 0.030+0.005*float64(l))
		}
	}
	got := steps(stairs, routeStep)
	if len(got) != maxSteps {
		t.Fatalf("%d steps %v, want %d", len(got), got, maxSteps)
	}
	for i, k := range got {
		if k%10 != 0 || i > 0 && k <= got[i-1] {
			t.Errorf("steps %v: not each where a level begins, in order", got)
		}
	}
	if last := got[len(got)-1]; last < 150 {
		t.Errorf("the last step found is at %d: the latest levels are left out", last)
	}
	for _, vs := range [][]float64{nil, {0.03}, {0.03, 0.05, 0.05}} {
		if got := steps(vs, routeStep); len(got) != 0 {
			t.Errorf("steps(%v) = %v", vs, got)
		}
	}
}
