package topology

import (
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/scenario"
)

func TestResolve(t *testing.T) {
	dirs := []Direction{
		{Name: "a->b", Config: scenario.Direction{Rate: 1e7, Delay: 10 * time.Millisecond, MTU: 1500, Queue: scenario.Queue{Packets: 100}}},
		{Name: "b->a", Config: scenario.Direction{Rate: 1e7, Delay: 10 * time.Millisecond, MTU: 1500, Queue: scenario.Queue{Packets: 100}}},
	}
	s := time.Second
	events := []scenario.Event{
		{Link: "a->b", At: s, Set: []string{"delay=50ms"}},
		{Link: "a<->b", At: 2 * s, Set: []string{"down=true"}, For: s},
		{Link: "b->a", At: 5 * s, Set: []string{"loss=1%"}},
	}
	got, err := Resolve(dirs, scenario.Expand(events))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		at    time.Duration
		dir   int
		delay time.Duration
		down  bool
		loss  float64
	}
	wants := []want{
		{s, 0, 50 * time.Millisecond, false, 0},
		{2 * s, 0, 50 * time.Millisecond, true, 0},
		{2 * s, 1, 10 * time.Millisecond, true, 0},
		// The outage ends with each direction as it was when it began.
		{3 * s, 0, 50 * time.Millisecond, false, 0},
		{3 * s, 1, 10 * time.Millisecond, false, 0},
		{5 * s, 1, 10 * time.Millisecond, false, 0.01},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d changes, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		if g.At != w.at || g.Dir != w.dir || g.Config.Delay != w.delay || g.Config.Down != w.down || g.Config.Loss.Random != w.loss {
			t.Errorf("change %d: %+v, want %+v", i, g, w)
		}
	}
	if _, err := Resolve(dirs, []scenario.TimedChange{{Link: "c->d", Set: []string{"delay=1ms"}}}); err == nil || !strings.Contains(err.Error(), `no link direction "c->d"`) {
		t.Errorf("an unknown link: %v", err)
	}
	if _, err := Resolve(dirs, []scenario.TimedChange{{Link: "a->b", Restore: true, What: "x"}}); err == nil {
		t.Error("a restore with nothing before it was accepted")
	}
}
