// Package limits holds what an agent accepts: how long a test may run, how
// many bytes, streams, connections and concurrent tests it may use, and how
// fast it may send. Agents check every request against them, and scenario
// validation checks workloads against the defaults before anything runs.
// All arithmetic on requested figures is overflow-safe.
package limits

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Limits bound what one agent does for its controllers.
type Limits struct {
	MaxDuration time.Duration // of one test, or one serving role
	MaxStreams  int           // per test, and in all at once
	MaxRate     float64       // bit/s, of paced (UDP) tests
	MaxBytes    int64         // moved or stored by one test
	// MaxConnections bounds the connections, clients, jobs or workers that
	// one workload role opens or serves at once.
	MaxConnections int
	MaxTests       int // tests running at once
}

// Default are an agent's limits unless it is told otherwise.
var Default = Limits{
	MaxDuration:    time.Hour,
	MaxStreams:     256,
	MaxRate:        10e9,
	MaxBytes:       1 << 40, // 1 TiB
	MaxConnections: 1024,
	MaxTests:       64,
}

// Unlimited bounds nothing: for checking a spec's own sense only.
var Unlimited = Limits{
	MaxDuration:    math.MaxInt64,
	MaxStreams:     math.MaxInt,
	MaxRate:        math.MaxFloat64,
	MaxBytes:       math.MaxInt64,
	MaxConnections: math.MaxInt,
	MaxTests:       math.MaxInt,
}

// ErrLimit marks a request over a limit.
var ErrLimit = errors.New("over the agent's limit")

// Duration checks a duration a request asks for.
func (l Limits) Duration(what string, d time.Duration) error {
	return upTo(what, d, l.MaxDuration, func(d time.Duration) string { return d.String() })
}

// Repeated checks n repetitions every interval, as a probe train's length.
func (l Limits) Repeated(what string, n int64, interval time.Duration) error {
	d, ok := Mul(n, interval)
	if !ok {
		return fmt.Errorf("%s: %d times %v: %w of %v", what, n, interval, ErrLimit, l.MaxDuration)
	}
	return l.Duration(what, d)
}

// Bytes checks a number of bytes a request asks to move or store.
func (l Limits) Bytes(what string, n int64) error {
	return upTo(what, n, l.MaxBytes, func(n int64) string { return fmt.Sprintf("%d bytes", n) })
}

// upTo checks that v of what is from 0 to most, saying each as show does.
func upTo[T int64 | time.Duration](what string, v, most T, show func(T) string) error {
	switch {
	case v < 0:
		return fmt.Errorf("%s %s: cannot be negative", what, show(v))
	case v > most:
		return fmt.Errorf("%s %s: %w of %s", what, show(v), ErrLimit, show(most))
	}
	return nil
}

// BytesTimes checks n items of size bytes each.
func (l Limits) BytesTimes(what string, n, size int64) error {
	if n < 0 || size < 0 {
		return fmt.Errorf("%s: cannot be negative", what)
	}
	if size != 0 && n > math.MaxInt64/size {
		return fmt.Errorf("%s: %d x %d bytes: %w of %d bytes", what, n, size, ErrLimit, l.MaxBytes)
	}
	return l.Bytes(what, n*size)
}

// Streams checks the streams of one test.
func (l Limits) Streams(n int) error { return count("streams", n, 1, l.MaxStreams, "streams") }

// Rate checks the rate of a paced test.
func (l Limits) Rate(bps float64) error {
	switch {
	case math.IsNaN(bps) || bps <= 0:
		return fmt.Errorf("rate %v bit/s: give a positive rate", bps)
	case bps > l.MaxRate:
		return fmt.Errorf("rate %.0f bit/s: %w of %.0f bit/s", bps, ErrLimit, l.MaxRate)
	}
	return nil
}

// Connections checks how many connections, clients or workers a role uses.
func (l Limits) Connections(what string, n int) error {
	return count(what, n, 0, l.MaxConnections, "connections")
}

// count checks that n of what is from least to most (of unit).
func count(what string, n, least, most int, unit string) error {
	switch {
	case n < least:
		return fmt.Errorf("%s %d: give at least %d", what, n, least)
	case n > most:
		return fmt.Errorf("%s %d: %w of %d %s", what, n, ErrLimit, most, unit)
	}
	return nil
}

// Validate checks that the limits themselves make sense.
func (l Limits) Validate() error {
	switch {
	case l.MaxDuration <= 0, l.MaxStreams < 1, l.MaxBytes < 1, l.MaxConnections < 1, l.MaxTests < 1:
		return errors.New("every limit must be positive")
	case math.IsNaN(l.MaxRate) || l.MaxRate <= 0 || math.IsInf(l.MaxRate, 0):
		return errors.New("the rate limit must be a positive number")
	}
	return nil
}

// Mul is n x d, and false when it overflows a Duration.
func Mul(n int64, d time.Duration) (time.Duration, bool) {
	if n < 0 || d < 0 {
		return 0, false
	}
	if d != 0 && n > math.MaxInt64/int64(d) {
		return 0, false
	}
	return time.Duration(n) * d, true
}

// Add is a + b, and false when it overflows a Duration.
func Add(a, b time.Duration) (time.Duration, bool) {
	if b > 0 && a > math.MaxInt64-b || b < 0 && a < math.MinInt64-b {
		return 0, false
	}
	return a + b, true
}
