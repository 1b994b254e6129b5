package linkemu

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestEventHeapLatestWithin(t *testing.T) {
	tests := []struct {
		name   string
		at     []int64
		window int64
		want   int64
	}{
		{"one event", []int64{100}, 50, 100},
		{"nothing within the window", []int64{100, 151, 300}, 50, 100},
		{"the window's edge counts", []int64{300, 150, 100}, 50, 150},
		{"several within", []int64{500, 120, 100, 149, 130, 151}, 50, 149},
		{"no window", []int64{100, 100, 101}, 0, 100},
	}
	t.Run("a run's wait counts", func(t *testing.T) {
		var h eventHeap
		h.push(event{at: 140, first: 100, seq: 1}) // a run whose first segment was due at 100
		h.push(event{at: 149, first: 149, seq: 2})
		h.push(event{at: 151, first: 151, seq: 3})
		if got := h.latestWithin(50); got != 149 {
			t.Errorf("latestWithin(50) = %d, want 149: the run's first segment may wait 50 in all", got)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h eventHeap
			for i, at := range tt.at {
				h.push(event{at: at, first: at, seq: uint64(i)})
			}
			if got := h.latestWithin(tt.window); got != tt.want {
				t.Errorf("latestWithin(%d) over %v = %d, want %d", tt.window, tt.at, got, tt.want)
			}
		})
	}
}

// The heap's answer is the same as a scan of every event's.
func TestEventHeapLatestWithinMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var h eventHeap
		var all []int64
		for i := range 1 + rng.IntN(300) {
			at := rng.Int64N(10000)
			all = append(all, at)
			h.push(event{at: at, first: at, seq: uint64(i)})
		}
		window := rng.Int64N(500)
		first := slices.Min(all)
		want := first
		for _, at := range all {
			if at <= first+window {
				want = max(want, at)
			}
		}
		if got := h.latestWithin(window); got != want {
			t.Fatalf("latestWithin(%d) = %d, a scan says %d", window, got, want)
		}
	}
}
