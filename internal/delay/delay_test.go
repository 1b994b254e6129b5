package delay

import (
	"math"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		want Stats
	}{
		{"none", nil, Stats{}},
		{"one", []time.Duration{5 * ms}, Stats{Min: 5, Avg: 5, Max: 5, P50: 5, P99: 5}},
		{"unsorted", []time.Duration{30 * ms, 10 * ms, 20 * ms, 40 * ms},
			Stats{Min: 10, Avg: 25, Max: 40, P50: 25, P99: 39.7, Mdev: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.ds)
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"min", got.Min, tc.want.Min}, {"avg", got.Avg, tc.want.Avg}, {"max", got.Max, tc.want.Max},
				{"p50", got.P50, tc.want.P50}, {"p99", got.P99, tc.want.P99}, {"mdev", got.Mdev, tc.want.Mdev}} {
				if math.Abs(f.got-f.want) > 1e-9 {
					t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
				}
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.5, 3}, {0.25, 2}, {0.9, 4.6}, {1, 5}} {
		if got := Quantile(sorted, tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}
