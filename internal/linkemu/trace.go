package linkemu

import (
	"fmt"
	"slices"
)

// A trace makes a direction follow a recorded path. Its times are engine
// times: a trace starts when the engine does.

// Trace is a direction's recorded rate (or delivery opportunities) and delay.
type Trace struct {
	// Rate steps: Rates[i] bit/s from RateAt[i] ns on. A packet is
	// serialised at the rate in force when its serialisation starts.
	RateAt []int64
	Rates  []float64
	// Delay steps: Delays[i] ns from DelayAt[i] on, for packets whose
	// serialisation ends then.
	DelayAt []int64
	Delays  []int64
	// Loop repeats the rate and delay steps (each a period of its last
	// time plus the interval before it); otherwise the last values hold.
	Loop bool
	// Deliveries are mahimahi's opportunities, each of DeliveryBytes,
	// repeating every Period; with them Rate steps are not used.
	Deliveries []int64
	Period     int64
}

// DeliveryBytes is what a delivery opportunity carries (mahimahi's 1504).
const DeliveryBytes = 1504

func (tr *Trace) check() error {
	switch {
	case tr == nil:
		return nil
	case len(tr.RateAt) != len(tr.Rates) || len(tr.DelayAt) != len(tr.Delays):
		return fmt.Errorf("trace: times and values differ in number")
	case len(tr.Deliveries) > 0 && (tr.Period <= 0 || tr.Period < tr.Deliveries[len(tr.Deliveries)-1]):
		return fmt.Errorf("trace: delivery opportunities need a period that covers them")
	case !slices.IsSorted(tr.RateAt) || !slices.IsSorted(tr.DelayAt) || !slices.IsSorted(tr.Deliveries):
		return fmt.Errorf("trace: times go back")
	}
	for _, r := range tr.Rates {
		if !(r > 0 && r <= MaxRate) {
			return fmt.Errorf("trace: rate %v", r)
		}
	}
	for _, d := range tr.Delays {
		if d < 0 || d > int64(MaxDelay) {
			return fmt.Errorf("trace: delay %v", d)
		}
	}
	return nil
}

// period is how often steps at these times repeat: the last time plus the
// interval before it.
func period(at []int64) int64 {
	n := len(at)
	if n < 2 {
		return 0
	}
	return at[n-1] + at[n-1] - at[n-2]
}

// stepAt is the index of the step in force at engine time t.
func stepAt(at []int64, t int64, loop bool) int {
	if p := period(at); loop && p > 0 {
		t %= p
	}
	i, found := slices.BinarySearch(at, t)
	if found {
		return i
	}
	return max(0, i-1)
}

// tracedFinish is when a traced direction finishes sending size bytes it
// starts at start.
func (d *direction) tracedFinish(start int64, size int) int64 {
	if len(d.cfg.Trace.Deliveries) > 0 {
		return d.deliver(start, size)
	}
	return start + int64(float64(size)*d.nsPerByteAt(start))
}

// nsPerByteAt is the direction's serialisation time per byte at time t.
func (d *direction) nsPerByteAt(t int64) float64 {
	tr := d.cfg.Trace
	if tr == nil || len(tr.Rates) == 0 {
		return d.nsPerByte
	}
	return 8e9 / tr.Rates[stepAt(tr.RateAt, t, tr.Loop)]
}

// delayAt is the direction's propagation delay for a packet whose
// serialisation ends at t.
func (d *direction) delayAt(t int64) int64 {
	tr := d.cfg.Trace
	if tr == nil || len(tr.Delays) == 0 {
		return int64(d.cfg.Delay)
	}
	return tr.Delays[stepAt(tr.DelayAt, t, tr.Loop)]
}

// deliver takes size bytes arriving at t through the delivery
// opportunities, after what the direction holds, and returns when the last
// of them is delivered. An opportunity's bytes not used when it comes are
// lost, as in mahimahi.
func (d *direction) deliver(t int64, size int) int64 {
	tr := d.cfg.Trace
	n := int64(len(tr.Deliveries))
	when := func(k int64) int64 { return k/n*tr.Period + tr.Deliveries[k%n] }
	if d.opp < 0 || when(d.opp) < t {
		// The first opportunity at or after t.
		cycle := t / tr.Period
		i, _ := slices.BinarySearch(tr.Deliveries, t-cycle*tr.Period)
		d.opp, d.oppLeft = cycle*n+int64(i), DeliveryBytes
	}
	for {
		take := min(size, d.oppLeft)
		size -= take
		d.oppLeft -= take
		at := when(d.opp)
		if d.oppLeft == 0 {
			d.opp++
			d.oppLeft = DeliveryBytes
		}
		if size == 0 {
			return at
		}
	}
}
