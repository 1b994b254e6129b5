package linkemu

import (
	"math"
	"testing"
	"time"
)

// saturate offers a direction 1500-byte packets every gap for span and
// returns the bytes it delivered in each second, by release time less delay.
func saturate(d *direction, gap, span time.Duration) []float64 {
	perSecond := make([]float64, int(span/time.Second))
	for t := int64(0); t < int64(span); t += int64(gap) {
		if r, v := d.admit(t, 1500, nil); v == pass {
			if s := int((r - d.delayAt(r)) / int64(time.Second)); s < len(perSecond) {
				perSecond[s] += 1500
			}
		}
	}
	return perSecond
}

func TestMahimahiDeliveries(t *testing.T) {
	// An opportunity every millisecond, and two at 5 ms: 1001 per second.
	var at []int64
	for ms := int64(1); ms <= 1000; ms++ {
		at = append(at, ms*int64(time.Millisecond))
		if ms == 5 {
			at = append(at, ms*int64(time.Millisecond))
		}
	}
	d := newDirection(DirConfig{QueuePackets: 1000, Trace: &Trace{Deliveries: at, Period: int64(time.Second)}}, &DirStats{})
	got := saturate(&d, 100*time.Microsecond, 10*time.Second)
	// Whole 1500-byte packets in 1504-byte opportunities: the 4 bytes left
	// of each start the next packet, so 1001 x 1504 bytes a second.
	want := 1001.0 * DeliveryBytes
	for s, b := range got[1:] {
		if math.Abs(b-want)/want > 0.005 {
			t.Errorf("second %d: delivered %.0f bytes, want %.0f", s+1, b, want)
		}
	}
}

func TestRateAndDelayTrace(t *testing.T) {
	sec := int64(time.Second)
	tr := &Trace{RateAt: []int64{0, sec}, Rates: []float64{8e6, 2e6}, Loop: true}
	if err := tr.check(); err != nil {
		t.Fatal(err)
	}
	d := newDirection(DirConfig{QueuePackets: 100, Trace: tr}, &DirStats{})
	got := saturate(&d, 500*time.Microsecond, 6*time.Second)
	for s, b := range got {
		want := 1e6 // 8 Mbit/s in even seconds (a 2 s loop), 2 in odd
		if s%2 == 1 {
			want = 0.25e6
		}
		// A packet under way when the rate changes keeps its rate.
		if math.Abs(b-want)/want > 0.02 {
			t.Errorf("second %d: %.0f bytes, want %.0f", s, b, want)
		}
	}
	tr.DelayAt, tr.Delays = []int64{0, sec / 2}, []int64{int64(10 * time.Millisecond), int64(50 * time.Millisecond)}
	if d1, d2 := d.delayAt(int64(200*time.Millisecond)), d.delayAt(int64(2700*time.Millisecond)); d1 != int64(10*time.Millisecond) || d2 != int64(50*time.Millisecond) {
		t.Errorf("delays %v and %v, want 10ms then 50ms (looping every second)", time.Duration(d1), time.Duration(d2))
	}
	tr.Loop = false
	if r := d.nsPerByteAt(int64(5 * time.Second)); r != 8e9/2e6 {
		t.Errorf("after a trace that does not loop the last rate holds: %v ns/byte", r)
	}
}
