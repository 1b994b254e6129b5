package analysis

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
)

// series makes a series of n samples every dt from t0, valued by f(i) plus
// uniform noise of the given amplitude.
func series(path, metric string, t0 time.Time, n int, dt time.Duration, noise float64, f func(i int) float64) Series {
	rng := rand.New(rand.NewPCG(1, 2))
	s := Series{Path: path, Metric: metric}
	for i := range n {
		s.T = append(s.T, t0.Add(time.Duration(i)*dt))
		s.V = append(s.V, f(i)+noise*(rng.Float64()*2-1))
	}
	return s
}

func TestChangePoints(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	tests := []struct {
		name string
		s    Series
		want []int // sample indexes of the change points
	}{
		{"a step in RTT", series("a->b", results.DelayRoundtrip, t0, 200, 100*ms, 0.001, func(i int) float64 {
			if i < 120 {
				return 0.040
			}
			return 0.090
		}), []int{120}},
		{"a loss burst in the middle", series("a->b", results.LossRoundtrip, t0, 300, 100*ms, 0, func(i int) float64 {
			if i >= 150 && i < 170 {
				return 1
			}
			return 0
		}), []int{150, 170}},
		{"noise alone", series("a->b", results.BandwidthAchievable, t0, 60, time.Second, 2e6, func(int) float64 { return 50e6 }), nil},
		{"a small wobble in throughput", series("a->b", results.BandwidthAchievable, t0, 60, time.Second, 0, func(i int) float64 {
			if i >= 30 {
				return 45e6
			}
			return 50e6
		}), nil},
	}
	for _, tt := range tests {
		var got []int
		for _, cp := range ChangePoints(tt.s) {
			got = append(got, int(cp.T.Sub(t0)/(tt.s.T[1].Sub(tt.s.T[0]))))
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: change points at %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: change points at %v, want %v", tt.name, got, tt.want)
			}
		}
	}
}

func TestPathChangesMatchesEvents(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	rtt := series("a->b", results.DelayRoundtrip, t0, 300, 100*ms, 0.0005, func(i int) float64 {
		if i < 100 || i >= 200 {
			return 0.040
		}
		return 0.140
	})
	tl := &Timeline{
		Events: []LinkEvent{
			{T: t0.Add(9990 * ms), What: "route change (a->b: delay=70ms)", Dirs: []string{"a->b"}},
			{T: t0.Add(15 * time.Second), What: "flap elsewhere (c->d: delay=1s)", Dirs: []string{"c->d"}},
			{T: t0.Add(40 * time.Second), What: "end of step 1: " + results.TimelineEnd, Dirs: []string{"a->b"}},
		},
		Series: []Series{rtt},
	}
	var texts []string
	for _, f := range PathChanges(tl, nil) {
		texts = append(texts, f.Text)
	}
	got := strings.Join(texts, "\n")
	for _, want := range []string{
		"At 10.0 s route change (a->b: delay=70ms): a->b RTT rose from 40.",
		" to 140 ms at 10.0 s.",
		"At 15.0 s flap elsewhere (c->d: delay=1s): no visible change",
		// The flap, 5 s before the step back, is past the RTT's reaction time.
		"At 20.0 s a->b RTT fell from 140 to 40.0 ms with no injected cause",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("findings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "end of step 1") {
		t.Errorf("the timeline's end, which changed nothing visible, has a finding:\n%s", got)
	}
}

// Times are from the start of the step they fall in, as events are written.
func TestTimelineClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tl := &Timeline{Events: []LinkEvent{{T: t0}}}
	if got := tl.clock()(t0.Add(1500 * time.Millisecond)); got != "1.5 s" {
		t.Errorf("without steps: %q", got)
	}
	tl.Steps = []time.Time{t0.Add(-time.Second)}
	if got := tl.clock()(t0.Add(1500 * time.Millisecond)); got != "2.5 s" {
		t.Errorf("one step: %q", got)
	}
	tl.Steps = append(tl.Steps, t0.Add(time.Second))
	for at, want := range map[time.Duration]string{500 * time.Millisecond: "1.5 s of step 1", time.Second: "0.0 s of step 2", 3 * time.Second: "2.0 s of step 2"} {
		if got := tl.clock()(t0.Add(at)); got != want {
			t.Errorf("two steps, %v: %q, want %q", at, got, want)
		}
	}
}
