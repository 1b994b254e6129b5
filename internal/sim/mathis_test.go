package sim

import (
	"math"
	"testing"
	"time"
)

func TestMathisBPS(t *testing.T) {
	for _, tt := range []struct {
		mss  int
		rtt  time.Duration
		loss float64
		want float64
	}{
		// 1460*8/0.1 * sqrt(1.5)/sqrt(0.01)
		{1460, 100 * time.Millisecond, 0.01, 116800 * math.Sqrt(1.5) * 10},
		// A quarter of the loss, twice the rate; twice the RTT, half.
		{1460, 200 * time.Millisecond, 0.0025, 116800 * math.Sqrt(1.5) * 10},
		{1000, time.Second, 1, 8000 * math.Sqrt(1.5)},
		{1000, time.Second, 4, 8000 * math.Sqrt(1.5)},
		{1460, 100 * time.Millisecond, 0, math.Inf(1)},
		{1460, 0, 0.01, math.Inf(1)},
	} {
		got := MathisBPS(tt.mss, tt.rtt, tt.loss)
		if got != tt.want && math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("MathisBPS(%d, %v, %v) = %v, want %v", tt.mss, tt.rtt, tt.loss, got, tt.want)
		}
	}
	if got := MathisBPS(1460, time.Second, math.NaN()); !math.IsNaN(got) {
		t.Errorf("MathisBPS with NaN loss = %v", got)
	}
}
