package owd

import (
	"math"
	"testing"
	"time"
)

// FuzzTracker feeds a Tracker any delays at any pace: it never fails on
// them, its window stays within its bound, and what it reports is finite.
func FuzzTracker(f *testing.F) {
	f.Add([]byte{100, 12, 100, 12, 100, 13, 100, 200, 1, 0}, uint8(5))
	f.Add([]byte{255, 255, 0, 0, 255, 0}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, per uint8) {
		cfg := DefaultConfig()
		cfg.MinSpan, cfg.MinBinSamples = time.Second, 1
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Two bytes a sample: the time since the last one (ms, times
		// 40), and its delay (ms, less 100).
		at := epoch
		var sum []Sample
		for i := 0; i+1 < len(data); i += 2 {
			at = at.Add(time.Duration(data[i]) * 40 * time.Millisecond)
			sum = append(sum, Sample{Sent: at, Delay: time.Duration(int(data[i+1])-100) * time.Millisecond})
			if len(sum) > int(per%40) || i+3 >= len(data) {
				r, err := tr.Observe(sum)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range []float64{r.SkewPPM, r.SkewErrPPM, float64(r.Floor), float64(r.Uncertainty), float64(r.Change)} {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("report %+v", r)
					}
				}
				if len(tr.window) > tr.capBins || cap(tr.window) != tr.capBins {
					t.Fatalf("window of %d bins (capacity %d), bound %d", len(tr.window), cap(tr.window), tr.capBins)
				}
				sum = nil
			}
		}
	})
}
