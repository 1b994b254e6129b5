// Package delay summarises a set of delays (probes' round trips, a task
// farm's tasks) the usual way: min, mean, max, median, 99th percentile and
// mean deviation, in milliseconds. It is a leaf: measurements and workload
// kinds alike use it.
package delay

import (
	"math"
	"slices"
	"time"
)

// Stats are the usual summary of a set of delays, in milliseconds.
type Stats struct {
	Min  float64 `json:"min"`
	Avg  float64 `json:"avg"`
	Max  float64 `json:"max"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Mdev float64 `json:"mdev"`
}

// Summarize summarises delays; the zero Stats when there are none.
func Summarize(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	ms := make([]float64, len(ds))
	var sum float64
	for i, d := range ds {
		ms[i] = float64(d) / 1e6
		sum += ms[i]
	}
	slices.Sort(ms)
	s := Stats{Min: ms[0], Max: ms[len(ms)-1], Avg: sum / float64(len(ms)), P50: Quantile(ms, 0.5), P99: Quantile(ms, 0.99)}
	for _, v := range ms {
		s.Mdev += math.Abs(v - s.Avg)
	}
	s.Mdev /= float64(len(ms))
	return s
}

// Quantile interpolates linearly between the sorted values around q (0 to
// 1); sorted must not be empty.
func Quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}
