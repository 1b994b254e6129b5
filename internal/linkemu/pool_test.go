package linkemu

import (
	"math/rand/v2"
	"testing"
)

func TestEventHeapWakeTime(t *testing.T) {
	type ev struct{ at, first, window int64 }
	same := func(window int64, ats ...int64) []ev {
		var out []ev
		for _, at := range ats {
			out = append(out, ev{at, at, window})
		}
		return out
	}
	tests := []struct {
		name   string
		events []ev
		want   int64
	}{
		{"one event", same(50, 100), 100},
		{"nothing within the window", same(50, 100, 151, 300), 100},
		{"the window's edge counts", same(50, 300, 150, 100), 150},
		{"several within", same(50, 500, 120, 100, 149, 130, 151), 149},
		{"no window", same(0, 100, 100, 101), 100},
		{"a run's wait counts", []ev{{140, 100, 50}, {149, 149, 50}, {151, 151, 50}}, 149},
		// A slow direction's wide window does not hold a fast one's
		// segment past its own, narrower, window.
		{"the narrowest window of those released binds", []ev{{100, 100, 250}, {120, 120, 50}, {200, 200, 250}, {300, 300, 250}}, 120},
		{"a later event's wide window does not widen the top's", []ev{{100, 100, 50}, {140, 140, 250}, {200, 200, 250}}, 140},
		{"a run that has waited already binds", []ev{{100, 100, 250}, {180, 10, 200}, {300, 300, 250}}, 180},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h eventHeap
			for i, e := range tt.events {
				h.push(event{at: e.at, first: e.first, window: int32(e.window), seq: uint64(i)})
			}
			if got := h.wakeTime(); got != tt.want {
				t.Errorf("wakeTime over %v = %d, want %d", tt.events, got, tt.want)
			}
		})
	}
}

// The heap's answer is that of a scan of every event, and no event
// released at the wake time waits past its window.
func TestEventHeapWakeTimeMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		var h eventHeap
		var all []event
		for i := range 1 + rng.IntN(300) {
			window := []int64{50, 120, 250, 500}[rng.IntN(4)]
			first := rng.Int64N(10000)
			ev := event{first: first, at: first + rng.Int64N(window+1), window: int32(window), seq: uint64(i)}
			all = append(all, ev)
			h.push(ev)
		}
		top := all[0]
		for _, ev := range all {
			if less(ev, top) {
				top = ev
			}
		}
		// The bound: shrink until every event due by it has first+window past it.
		bound := top.first + int64(top.window)
		for changed := true; changed; {
			changed = false
			for _, ev := range all {
				if ev.at <= bound && ev.first+int64(ev.window) < bound {
					bound, changed = ev.first+int64(ev.window), true
				}
			}
		}
		want := top.at
		for _, ev := range all {
			if ev.at <= bound {
				want = max(want, ev.at)
			}
		}
		got := h.wakeTime()
		if got != want {
			t.Fatalf("wakeTime = %d, a scan says %d", got, want)
		}
		for _, ev := range all {
			if ev.at <= got && got-ev.first > int64(ev.window) {
				t.Fatalf("waking at %d holds %+v past its window", got, ev)
			}
		}
	}
}
