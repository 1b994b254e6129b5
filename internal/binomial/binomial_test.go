package binomial

import (
	"math"
	"testing"
)

// TestWilson checks the interval against known values, and that an
// effective count gives the same as a whole one.
func TestWilson(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 10, 0, 0.277533},
		{10, 10, 0.722467, 1},
		{6, 100, 0.027786, 0.124768},
		{1, 5, 0.036224, 0.624465},
		{50, 100, 0.403832, 0.596168},
		{0, 0, 0, 1}, // no trials: it says nothing
	} {
		lo, hi := Wilson(c.k, c.n)
		if math.Abs(lo-c.lo) > 1e-6 || math.Abs(hi-c.hi) > 1e-6 {
			t.Errorf("Wilson(%d, %d) = [%.6f, %.6f], want [%.6f, %.6f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func TestNewRatio(t *testing.T) {
	if r := NewRatio(3, 12); r.Ratio != 0.25 || r.Low >= 0.25 || r.High <= 0.25 || r.Lost != 3 || r.Of != 12 {
		t.Errorf("NewRatio(3, 12) = %+v", r)
	}
	if lo, hi := WilsonOf(2.5, 10); lo <= 0 || hi >= 1 || lo >= 0.25 || hi <= 0.25 {
		t.Errorf("WilsonOf(2.5, 10) = [%g, %g]", lo, hi)
	}
}
