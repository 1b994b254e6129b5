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

func TestCubicBPS(t *testing.T) {
	seg := func(mss int, rtt float64) float64 { return float64(mss) * 8 / rtt }
	// CUBIC's own average window (RFC 8312 5.1): (0.4*3.7/1.2)^0.25 *
	// RTT^0.75 / p^0.75 segments.
	cubic := func(rtt, p float64) float64 {
		return math.Pow(0.4*3.7/1.2, 0.25) * math.Pow(rtt, 0.75) / math.Pow(p, 0.75)
	}
	for _, tt := range []struct {
		name string
		mss  int
		rtt  time.Duration
		loss float64
		want float64
	}{
		// 100 ms, 0.01%: CUBIC's 187 segments beat Reno's 122.
		{"cubic region", 1448, 100 * time.Millisecond, 1e-4, cubic(0.1, 1e-4) * seg(1448, 0.1)},
		// 1 ms, 1%: Reno's 12.2 segments beat CUBIC's 0.19.
		{"reno-friendly region", 1448, time.Millisecond, 0.01, math.Sqrt(1.5) / 0.1 * seg(1448, 0.001)},
		{"no loss", 1448, time.Millisecond, 0, math.Inf(1)},
	} {
		if got := CubicBPS(tt.mss, tt.rtt, tt.loss); got != tt.want && math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("%s: CubicBPS = %v, want %v", tt.name, got, tt.want)
		}
	}
	if cubic(0.1, 1e-4) <= math.Sqrt(1.5)/0.01 {
		t.Fatal("the cubic region's case is not in the cubic region")
	}
}

func TestLossBoundBPS(t *testing.T) {
	rtt := 100 * time.Millisecond
	for cc, want := range map[string]float64{
		Reno: MathisBPS(1448, rtt, 1e-4), "": MathisBPS(1448, rtt, 1e-4), "htcp": MathisBPS(1448, rtt, 1e-4),
		Cubic: CubicBPS(1448, rtt, 1e-4), BBR: math.Inf(1),
	} {
		if got := LossBoundBPS(cc, 1448, rtt, 1e-4); got != want {
			t.Errorf("LossBoundBPS(%q) = %v, want %v", cc, got, want)
		}
	}
}

// TestTCPStream checks the fluid model against closed forms: slow start
// doubling from 10 segments up to the window, and in the long run the
// loss bounds it stands for.
func TestTCPStream(t *testing.T) {
	const mss = 1000
	rtt := 100 * time.Millisecond
	windowed := TCPStream{MSS: mss, RTT: rtt, MaxSegments: 100}
	// 10, 20, 40, 80, then 100 a round trip: 750 segments in 10 round trips.
	if got := windowed.BytesIn(1); math.Abs(got-750*mss) > 1e-6 {
		t.Errorf("window of 100 segments: %v bytes in 1 s, want %d", got, 750*mss)
	}
	// 150 segments: 10+20+40 in 0.3 s, then the 80 of the fourth.
	if got := windowed.SecondsFor(150 * mss); math.Abs(got-0.4) > 1e-9 {
		t.Errorf("150 segments in %v s, want 0.4", got)
	}
	if got := windowed.MeanBPS(0, 150*mss); math.Abs(got-150*mss*8/0.4) > 1e-6 {
		t.Errorf("mean over 150 segments %v bit/s, want %v", got, 150*mss*8/0.4)
	}
	// Half a round trip sends half of the first window.
	if got := windowed.BytesIn(0.05); math.Abs(got-5*mss) > 1e-6 {
		t.Errorf("half a round trip: %v bytes, want %d", got, 5*mss)
	}
	// In the long run (more round trips than walked one by one): the
	// Mathis bound for Reno, CUBIC's for CUBIC, the window for BBR.
	long := 3600.0
	for _, tc := range []struct {
		name string
		s    TCPStream
		want float64
		tol  float64
	}{
		{"reno", TCPStream{MSS: mss, RTT: rtt, Loss: 1e-3, CC: Reno}, MathisBPS(mss, rtt, 1e-3), 0.03},
		// RFC 8312's average is of a continuous cubic: the round trips'
		// steps put the fluid model's a few percent above.
		{"cubic", TCPStream{MSS: mss, RTT: rtt, Loss: 1e-4, CC: Cubic}, CubicBPS(mss, rtt, 1e-4), 0.1},
		{"bbr", TCPStream{MSS: mss, RTT: rtt, Loss: 1e-3, CC: BBR, MaxSegments: 500}, 500 * mss * 8 / 0.1, 0.01},
		{"window below the loss bound", TCPStream{MSS: mss, RTT: rtt, Loss: 1e-4, MaxSegments: 20}, 20 * mss * 8 / 0.1, 0.01},
		// Reno over a queue of half the pipe: cwnd from 75 to 151 segments,
		// the pipe's 100 from 100 on: 7375 segments in 77 round trips.
		{"pipe and queue", TCPStream{MSS: mss, RTT: rtt, PipeSegments: 100}, 7375.0 / 77 * mss * 8 / 0.1, 0.01},
	} {
		got := tc.s.MeanBPS(long, 0)
		t.Logf("%s: %.4g bit/s over %g s, closed form %.4g", tc.name, got, long, tc.want)
		if math.Abs(got-tc.want) > tc.tol*tc.want {
			t.Errorf("%s: %.4g bit/s, want %.4g within %g%%", tc.name, got, tc.want, 100*tc.tol)
		}
	}
	if got := (TCPStream{MSS: mss}).MeanBPS(1, 0); got != 0 {
		t.Errorf("no round trip: %v, want 0", got)
	}
}
