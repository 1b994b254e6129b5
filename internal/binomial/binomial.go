// Package binomial is a share counted among trials (a loss among probes)
// with its 95% interval: Wilson's score interval, which keeps its
// coverage near 0 and 1, where the normal approximation's collapses, and
// is never empty. It is a leaf, so that probes, far-end tests, path twins
// and the monitoring service count loss alike without importing each
// other.
package binomial

import "math"

// Ratio is a loss counted among trials, with its 95% binomial interval.
type Ratio struct {
	Lost  int     `json:"lost"`
	Of    int     `json:"of"`
	Ratio float64 `json:"ratio"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
}

// NewRatio is lost of n, with its interval; of 0 trials it is 0 within
// [0, 1]: it says nothing.
func NewRatio(lost, n int) Ratio {
	r := Ratio{Lost: lost, Of: n}
	if n > 0 {
		r.Ratio = float64(lost) / float64(n)
	}
	r.Low, r.High = Wilson(lost, n)
	return r
}

// z95 is the standard normal's 97.5th percentile: a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson is the 95% Wilson score interval of k successes in n trials
// ([0, 1] when n is 0).
func Wilson(k, n int) (lo, hi float64) { return WilsonOf(float64(k), float64(n)) }

// WilsonOf is Wilson of an effective count: n may be fractional (trials
// weighted, or fewer than counted where they are not independent).
func WilsonOf(k, n float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	k = min(max(k, 0), n)
	p := k / n
	z2 := z95 * z95
	den := 1 + z2/n
	centre := (p + z2/(2*n)) / den
	half := z95 * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / den
	lo, hi = max(0, centre-half), min(1, centre+half)
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return lo, hi
}
