package measure

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/train"
)

// stream makes n arrivals 1 ms apart whose one-way delay is owd(i).
func stream(n int, owd func(i int) time.Duration) []train.Arrival {
	out := make([]train.Arrival, n)
	for i := range out {
		sent := int64(i) * int64(time.Millisecond)
		out[i] = train.Arrival{Seq: i, Sent: sent, Recv: sent + int64(owd(i))}
	}
	return out
}

func TestTrend(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(d time.Duration) time.Duration { return time.Duration(rng.NormFloat64() * float64(d)) }
	tests := []struct {
		name string
		owd  func(i int) time.Duration
		want string
	}{
		{"a queue that fills", func(i int) time.Duration {
			return 5*time.Millisecond + time.Duration(i)*50*time.Microsecond + noise(20*time.Microsecond)
		}, Increasing},
		{"flat", func(int) time.Duration { return 5 * time.Millisecond }, NonIncreasing},
		{"flat with timer noise", func(int) time.Duration { return 5*time.Millisecond + noise(30*time.Microsecond) }, NonIncreasing},
		{"a queue that drains", func(i int) time.Duration { return 10*time.Millisecond - time.Duration(i)*40*time.Microsecond }, NonIncreasing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := trend(stream(100, tc.owd)); got != tc.want {
				t.Errorf("trend %s, want %s", got, tc.want)
			}
		})
	}
}

func TestFleetVerdict(t *testing.T) {
	for _, tc := range []struct {
		inc, non int
		want     string
	}{
		{6, 0, Increasing},
		{0, 6, NonIncreasing},
		{5, 1, Increasing},
		{0, 4, NonIncreasing}, // two streams undecided: the four agree
		{1, 4, NonIncreasing},
		{4, 0, Increasing},
		{3, 0, Grey}, // half the fleet undecided
		{2, 2, Grey},
		{3, 3, Grey},
		{2, 4, Grey}, // 67% is not 70%
		{0, 0, Grey},
	} {
		if got := fleetVerdict(tc.inc, tc.non, 6); got != tc.want {
			t.Errorf("%d rising and %d flat of 6: %s, want %s", tc.inc, tc.non, got, tc.want)
		}
	}
}

func TestMode(t *testing.T) {
	// Trains that cross traffic joined spread below the capacity; the
	// others agree on it.
	xs := []float64{100e6, 99.5e6, 100.2e6, 99.8e6, 100.1e6, 71e6, 64e6, 83e6, 90e6, 55e6}
	if m := mode(xs, 0.02); math.Abs(m-100e6) > 0.5e6 {
		t.Errorf("mode %.3g, want about 100e6", m)
	}
	if m := mode([]float64{42}, 0.02); m != 42 {
		t.Errorf("mode of one value %v", m)
	}
}

func TestTrainEstimates(t *testing.T) {
	// Two trains of 1500-byte IP packets 120 us apart: 100 Mbit/s; the
	// second lost its third packet, which never crossed the narrow link.
	bits := BandwidthSpec{Size: 1472}.wireBits()
	var got train.Received
	for s := range 2 {
		for q := range 8 {
			if s == 1 && q == 2 {
				continue
			}
			got.Arrivals = append(got.Arrivals, train.Arrival{Stream: s, Seq: q, Recv: int64(s)*1e9 + int64(len(got.Arrivals)%8)*120_000})
		}
	}
	trains, pairs := trainEstimates(got, bits)
	if len(trains) != 2 || math.Abs(trains[0]-100e6) > 1e5 || math.Abs(trains[1]-100e6) > 1e5 {
		t.Errorf("train estimates %v, want two of 100e6", trains)
	}
	if len(pairs) != 12 {
		t.Errorf("%d pair estimates, want 12 (7, and 5 beside the gap)", len(pairs))
	}
}

func TestHighestCluster(t *testing.T) {
	// 30 trains of 25 packets at 100 Mbit/s: 4 untouched, 10 joined by
	// one cross packet (96.2), 12 by two (92.6), 4 by three (89.3).
	var xs []float64
	for _, c := range []struct {
		n int
		v float64
	}{{4, 100e6}, {10, 96.2e6}, {12, 92.6e6}, {4, 89.3e6}} {
		for i := range c.n {
			xs = append(xs, c.v*(1+0.001*float64(i%3)))
		}
	}
	if got := highestCluster(xs, 0.02, 3); math.Abs(got-100e6) > 0.5e6 {
		t.Errorf("highest cluster %.4g, want 100e6", got)
	}
	if got := mode(xs, 0.02); math.Abs(got-92.6e6) > 0.5e6 {
		t.Errorf("the densest window %.4g: this test's premise (the interfered trains outnumber the untouched) is wrong", got)
	}
	if got := highestCluster([]float64{1, 50, 100}, 0.02, 3); got != mode([]float64{1, 50, 100}, 0.02) {
		t.Errorf("with no cluster of 3, the densest window: got %v", got)
	}
}

func TestSpareRoom(t *testing.T) {
	fl := func(rate float64, inc, non int) Fleet {
		return Fleet{RateBPS: rate * 1e6, Increasing: inc, NonIncreasing: non}
	}
	for _, tc := range []struct {
		name           string
		fleets         []Fleet
		est, low, high float64 // Mbit/s
	}{
		{"a clean search", []Fleet{fl(50, 0, 6), fl(75, 6, 0), fl(62.5, 6, 0), fl(56, 0, 6), fl(59, 0, 6)},
			(59 + 62.5) / 2, 59, 62.5},
		// A fleet at 25 Mbit/s with one stream rising and four flat turned
		// grey and bounded the binary search at 22 (the run read 44, the
		// truth 60); the fit reads the crossing between 50 and 63.
		{"one noisy fleet low", []Fleet{fl(50.3, 0, 4), fl(25.2, 1, 4), fl(75.5, 6, 0), fl(62.9, 3, 0), fl(12.6, 0, 6), fl(69.2, 6, 0), fl(18.9, 1, 5), fl(22, 0, 6), fl(66.1, 6, 0)},
			50.3 + 12.6*(0.5-1.0/9)/(1-1.0/9), 50.3, 62.9},
		{"a block at one half", []Fleet{fl(50, 0, 6), fl(60, 3, 3), fl(70, 6, 0)}, 60, 60, 60},
		{"a violation pooled to one half", []Fleet{fl(40, 0, 6), fl(55, 4, 2), fl(65, 2, 4), fl(80, 6, 0)}, 60, 55, 65},
		{"every fleet below", []Fleet{fl(50, 0, 6), fl(75, 0, 6), fl(88, 1, 5)}, 94, 88, 100},
		{"every fleet above", []Fleet{fl(50, 6, 0), fl(25, 5, 1), fl(12.5, 6, 0)}, 6.25, 0, 12.5},
		{"no fleet with a trend", []Fleet{{RateBPS: 50e6}}, 50, 0, 100},
		{"no fleet", nil, 50, 0, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			est, low, high := spareRoom(tc.fleets, 100e6)
			for _, g := range []struct {
				what      string
				got, want float64
			}{{"estimate", est, tc.est}, {"low", low, tc.low}, {"high", high, tc.high}} {
				if math.Abs(g.got-g.want*1e6) > 1e3 {
					t.Errorf("%s %.4g Mbit/s, want %.4g", g.what, g.got/1e6, g.want)
				}
			}
		})
	}
}
