package stamp

import (
	"errors"
	"testing"
	"time"
)

func TestTimestampKnownValues(t *testing.T) {
	for _, c := range []struct {
		at   time.Time
		f    Format
		want Timestamp
	}{
		{time.Unix(0, 0), NTP, 0x83aa7e80_00000000},                   // 1970 in NTP seconds since 1900
		{time.Unix(0, 500_000_000), NTP, 0x83aa7e80_80000000},         // half a second: the fraction's top bit
		{time.Unix(0, 0), PTP, 0},                                     // PTP counts from 1970
		{time.Unix(1, 999_999_999), PTP, 0x00000001_3b9ac9ff},         // nanoseconds, not a fraction
		{time.Date(2036, 2, 7, 6, 28, 16, 0, time.UTC), NTP, 0},       // NTP era 1 begins
		{time.Date(2036, 2, 7, 6, 28, 17, 0, time.UTC), NTP, 1 << 32}, // one second into era 1
	} {
		if got := NewTimestamp(c.at, c.f); got != c.want {
			t.Errorf("%v in %v: %#x, want %#x", c.at, c.f, uint64(got), uint64(c.want))
		}
		if back, err := c.want.Time(c.f); err != nil || !back.Equal(c.at) {
			t.Errorf("%#x in %v: %v %v, want %v", uint64(c.want), c.f, back, err, c.at)
		}
	}
}

// A time comes back from either format to the nanosecond, over the
// years NTP's era rule covers.
func TestTimestampRoundTrip(t *testing.T) {
	start := time.Date(1968, 2, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2000 {
		at := start.Add(time.Duration(i) * 18_446_744_073_709 * 71) // strides of about 15 days and odd nanoseconds
		if at.Year() >= 2104 {
			break
		}
		for _, f := range []Format{NTP, PTP} {
			if f == PTP && at.Unix() < 0 {
				continue
			}
			back, err := NewTimestamp(at, f).Time(f)
			if err != nil || !back.Equal(at) {
				t.Fatalf("%v in %v: back %v %v", at, f, back, err)
			}
		}
	}
}

func TestPTPNanosecondsChecked(t *testing.T) {
	if _, err := Timestamp(1e9).Time(PTP); !errors.Is(err, ErrMalformed) {
		t.Errorf("1e9 ns: %v", err)
	}
	if _, err := Timestamp(1e9).Time(NTP); err != nil {
		t.Errorf("the same bits in NTP: %v", err)
	}
}

func TestErrorEstimateBits(t *testing.T) {
	for _, c := range []struct {
		e    ErrorEstimate
		wire uint16
		est  time.Duration
	}{
		{ErrorEstimate{Synchronized: true, Format: NTP, Scale: 22, Multiplier: 1}, 0x9601, 976563}, // 2^-10 s, rounded up to the ns
		{ErrorEstimate{Format: PTP, Multiplier: 1}, 0x4001, 1},                                     // 2^-32 s
		{ErrorEstimate{Synchronized: true, Format: PTP, Scale: 63, Multiplier: 255}, 0xffff, 1<<63 - 1},
		{ErrorEstimate{Scale: 32, Multiplier: 3}, 0x2003, 3 * time.Second},
		{ErrorEstimate{}, 0, 0},
	} {
		if got := c.e.wire(); got != c.wire {
			t.Errorf("%+v: %#04x, want %#04x", c.e, got, c.wire)
		}
		if got := parseErrorEstimate(c.wire); got != c.e {
			t.Errorf("%#04x: %+v, want %+v", c.wire, got, c.e)
		}
		if got := c.e.Estimate(); got != c.est {
			t.Errorf("%+v: estimate %v, want %v", c.e, got, c.est)
		}
	}
}

// NewErrorEstimate rounds up: the estimate it makes is never below the
// error it was given, and within a factor of two of it above 255*2^-32 s.
func TestNewErrorEstimate(t *testing.T) {
	for _, d := range []time.Duration{0, 1, time.Microsecond, 37 * time.Microsecond, time.Millisecond, 1500 * time.Millisecond, time.Hour} {
		e := NewErrorEstimate(d, true, PTP)
		if !e.Synchronized || e.Format != PTP || e.Multiplier == 0 {
			t.Errorf("%v: %+v", d, e)
		}
		if got := e.Estimate(); got < d || (d > 100*time.Nanosecond && got > 2*d) {
			t.Errorf("%v: estimate %v (%+v)", d, got, e)
		}
	}
}

// The host's clock gives an estimate whatever its state; the test
// cannot know whether this machine's clock is synchronised.
func TestLocalErrorEstimate(t *testing.T) {
	e := LocalErrorEstimate(PTP)
	if e.Format != PTP || e.Multiplier == 0 || e.Estimate() <= 0 {
		t.Errorf("%+v", e)
	}
}
