package stamp

import (
	"fmt"
	"math"
	"time"

	"golang.org/x/sys/unix"
)

// Format is the format of a packet's timestamps: the Z bit of its error
// estimate (RFC 8762 section 4.2.1, RFC 8186 section 2.3).
type Format uint8

const (
	// NTP is the NTP 64-bit format (RFC 5905): seconds since 1900 in 32
	// bits, then the fraction of a second in 32 bits. STAMP's default,
	// and what TWAMP-light senders expect (RFC 8762 section 4.6).
	NTP Format = 0
	// PTP is the PTPv2 truncated format (IEEE 1588): seconds since 1970
	// in 32 bits, then nanoseconds in 32 bits. This package stamps it
	// from the system clock, on the UTC timescale, as other STAMP
	// implementations do, not on PTP's TAI.
	PTP Format = 1
)

func (f Format) String() string {
	switch f {
	case NTP:
		return "NTP"
	case PTP:
		return "PTP"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// Timestamp is a timestamp as it is on the wire, in the Format its
// packet's error estimate names.
type Timestamp uint64

// ntpUnixOffset is the seconds from 1900-01-01 to 1970-01-01.
const ntpUnixOffset = 2_208_988_800

// NewTimestamp is t in format f. NTP's seconds wrap in 2036 and PTP's
// in 2106; Time unfolds NTP's (see there).
func NewTimestamp(t time.Time, f Format) Timestamp {
	sec, nsec := t.Unix(), uint64(t.Nanosecond())
	if f == PTP {
		return Timestamp(uint64(uint32(sec))<<32 | nsec)
	}
	frac := nsec << 32 / 1e9
	return Timestamp(uint64(uint32(sec+ntpUnixOffset))<<32 | frac)
}

// Time is the time ts says in format f; ErrMalformed for a PTP
// timestamp with a billion nanoseconds or more. An NTP timestamp whose
// seconds have the top bit clear is taken to be in era 1 (2036-2104),
// as RFC 4330 section 3 advises, so NTP timestamps mean 1968 to 2104.
func (ts Timestamp) Time(f Format) (time.Time, error) {
	sec, low := int64(ts>>32), uint64(ts&math.MaxUint32)
	if f == PTP {
		if low >= 1e9 {
			return time.Time{}, fmt.Errorf("PTP timestamp %#016x: %d nanoseconds: %w", uint64(ts), low, ErrMalformed)
		}
		return time.Unix(sec, int64(low)).UTC(), nil
	}
	if sec < 1<<31 {
		sec += 1 << 32
	}
	nsec := (low*1e9 + 1<<31) >> 32 // rounded: an encoded time comes back to the nanosecond
	return time.Unix(sec-ntpUnixOffset, int64(nsec)).UTC(), nil
}

// ErrorEstimate is the Error Estimate field of RFC 4656 section 4.1.2,
// with Z as RFC 8186 section 2.3 defines it: whether the clock that
// took the timestamps is synchronised to UTC by an external source (S),
// their Format (Z), and their error, Multiplier*2^(Scale-32) seconds.
type ErrorEstimate struct {
	Synchronized bool
	Format       Format
	Scale        uint8 // 6 bits: 0 to 63
	Multiplier   uint8 // 0 says the error is unknown (RFC 4656 forbids sending it)
}

// maxScale is the largest Scale the field's 6 bits hold.
const maxScale = 63

func (e ErrorEstimate) check() error {
	if e.Scale > maxScale || e.Format > PTP {
		return fmt.Errorf("error estimate scale %d, format %d: %w (scale 0-%d, format NTP or PTP)", e.Scale, e.Format, ErrMalformed, maxScale)
	}
	return nil
}

// wire is the field's 16 bits: S, Z, Scale (6 bits), Multiplier (8 bits).
func (e ErrorEstimate) wire() uint16 {
	v := uint16(e.Scale&maxScale)<<8 | uint16(e.Multiplier)
	if e.Synchronized {
		v |= 1 << 15
	}
	if e.Format == PTP {
		v |= 1 << 14
	}
	return v
}

func parseErrorEstimate(v uint16) ErrorEstimate {
	return ErrorEstimate{
		Synchronized: v&(1<<15) != 0,
		Format:       Format(v >> 14 & 1),
		Scale:        uint8(v >> 8 & maxScale),
		Multiplier:   uint8(v),
	}
}

// Estimate is the error the field gives, at most math.MaxInt64
// nanoseconds (about 292 years); 0 when the multiplier is 0 (unknown).
func (e ErrorEstimate) Estimate() time.Duration {
	sec := float64(e.Multiplier) * math.Ldexp(1, int(e.Scale)-32)
	if ns := sec * 1e9; ns < math.MaxInt64 {
		return time.Duration(math.Ceil(ns))
	}
	return math.MaxInt64
}

// NewErrorEstimate is the estimate of an error of d (rounded up to the
// field's precision; at least 2^-32 s, at most 255*2^31 s), for
// timestamps in format f from a clock synchronised or not.
func NewErrorEstimate(d time.Duration, synchronized bool, f Format) ErrorEstimate {
	units := math.Ceil(d.Seconds() * (1 << 32)) // in 2^-32 s
	scale := 0
	for units > math.MaxUint8 && scale < maxScale {
		units = math.Ceil(units / 2)
		scale++
	}
	return ErrorEstimate{Synchronized: synchronized, Format: f, Scale: uint8(scale), Multiplier: uint8(min(max(units, 1), math.MaxUint8))}
}

// LocalErrorEstimate is this host's clock as the kernel's discipline
// (adjtimex, read only) sees it: synchronised when NTP or PTP steers it
// and the kernel does not flag it unsynchronised, with its estimated
// error (its maximum error when unsynchronised); unsynchronised with
// an error of a second when the kernel cannot say.
func LocalErrorEstimate(f Format) ErrorEstimate {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return NewErrorEstimate(time.Second, false, f)
	}
	if state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0 {
		return NewErrorEstimate(time.Duration(max(tx.Esterror, 1))*time.Microsecond, true, f)
	}
	return NewErrorEstimate(time.Duration(max(tx.Maxerror, 1))*time.Microsecond, false, f)
}
