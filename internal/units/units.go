// Package units parses and prints the quantities network engineers write:
// rates ("1.7Mbit"), durations ("0.5ms"), sizes ("256KiB") and percentages ("0.1%").
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrNoUnit reports a bare number where a unit is required.
var ErrNoUnit = errors.New("missing unit")

// Rate is a data rate in bits per second.
type Rate float64

// Common rates.
const (
	Kbit Rate = 1e3
	Mbit Rate = 1e6
	Gbit Rate = 1e9
)

var ratePrefixes = map[string]float64{
	"": 1, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9, "t": 1e12, "T": 1e12,
}

// ParseRate parses a rate in bits per second: "100Mbit", "1.7Mbit/s",
// "2Mbps", "10Gbit", or with a bare prefix as iperf3's -b takes it, "100m",
// "1G". Prefixes are decimal (k = 1000), as on every network link. A bare
// number is refused: its unit would be a guess.
func ParseRate(s string) (Rate, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	if unit == "" {
		return 0, fmt.Errorf("rate %q: %w (write e.g. 100Mbit)", s, ErrNoUnit)
	}
	if num < 0 {
		return 0, fmt.Errorf("rate %q is negative", s)
	}
	if mult, ok := ratePrefixes[unit]; ok {
		return Rate(num * mult), nil // iperf3's "100m"
	}
	for _, suffix := range []string{"bit/s", "bps", "bit", "b/s"} {
		prefix, ok := strings.CutSuffix(unit, suffix)
		if !ok {
			continue
		}
		if mult, ok := ratePrefixes[prefix]; ok {
			return Rate(num * mult), nil
		}
	}
	if bytes, ok := sizeUnits[strings.TrimSuffix(strings.TrimSuffix(unit, "/s"), "ps")]; ok && strings.Contains(unit, "B") {
		return 0, fmt.Errorf("rate %q: unknown unit %q: rates are in bits (%sMbit for %s)", s, unit, trimFloat(num*bytes*8/1e6), strings.TrimSpace(s))
	}
	return 0, fmt.Errorf("rate %q: unknown unit %q (use bit, kbit, Mbit, Gbit, or k, m, g as iperf3 takes them)", s, unit)
}

// String prints the rate to four significant digits with the largest prefix
// that keeps it at or above 1.
func (r Rate) String() string {
	v := float64(r)
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
	switch {
	case v >= 1e9:
		return g(v/1e9) + "Gbit"
	case v >= 1e6:
		return g(v/1e6) + "Mbit"
	case v >= 1e3:
		return g(v/1e3) + "kbit"
	}
	return g(v) + "bit"
}

// DurationUnits are the units ParseDuration takes, Go's: a duration may
// join several, as 1h30m or 1m30s.
var DurationUnits = []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"}

// ParseDuration parses a non-negative duration such as "25ms", "0.5ms", "1s",
// "250us", "2m" or "1h30m" (DurationUnits). A bare 0 is accepted; any other
// bare number is an error because its unit is ambiguous.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
			return 0, fmt.Errorf("duration %q: %w (write e.g. 25ms)", s, ErrNoUnit)
		}
		return 0, fmt.Errorf("duration %q: use a number and ns, us, ms, s, m or h, as 25ms, 1.5s, 2m or 1h30m (µs or μs for us)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// Size is a byte count.
type Size int64

var sizeUnits = map[string]float64{
	"B": 1, "": 1,
	"KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	// A bare prefix, as iperf3's -w, -l and -n take it: binary.
	"K": 1 << 10, "k": 1 << 10, "M": 1 << 20, "m": 1 << 20, "G": 1 << 30, "g": 1 << 30, "T": 1 << 40, "t": 1 << 40,
}

// ParseSize parses a byte size such as "256KiB", "1.6GB", "1500B", or with
// a bare prefix as iperf3 takes it, "64K" or "4M". KB/MB/GB are decimal;
// KiB/MiB/GiB and the bare K/M/G binary. A bare number is a byte count.
func ParseSize(s string) (Size, error) {
	num, unit, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KB, KiB, MB, MiB, GB, GiB, or K, M, G as iperf3 takes them)", s, unit)
	}
	if num < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	v := num * mult
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return Size(math.Round(v)), nil
}

// String prints the size in the exact unit that gives the smallest number, and
// approximately in KiB, MiB or GiB when it is not a round number.
func (z Size) String() string {
	best, bestN := "", int64(z)
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if z != 0 && int64(z)%u.size == 0 && int64(z)/u.size < bestN {
			best, bestN = u.name, int64(z)/u.size
		}
	}
	if best != "" {
		return strconv.FormatInt(bestN, 10) + best
	}
	switch v := float64(z); {
	case v >= 1<<30:
		return strconv.FormatFloat(v/(1<<30), 'f', 2, 64) + "GiB"
	case v >= 1<<20:
		return strconv.FormatFloat(v/(1<<20), 'f', 2, 64) + "MiB"
	case v >= 10<<10:
		return strconv.FormatFloat(v/(1<<10), 'f', 1, 64) + "KiB"
	}
	return strconv.FormatInt(int64(z), 10) + "B"
}

// ParseByteRate parses a disk rate in bytes per second such as "5MB/s" or
// "40MiB/s", as disk benchmarks (bonnie++, IOzone) report them.
func ParseByteRate(s string) (int64, error) {
	body, ok := strings.CutSuffix(strings.TrimSpace(s), "/s")
	if !ok {
		return 0, fmt.Errorf("disk rate %q: write bytes per second, e.g. 5MB/s", s)
	}
	z, err := ParseSize(body)
	if err != nil {
		if r, rerr := ParseRate(body); rerr == nil {
			return 0, fmt.Errorf("disk rate %q: give bytes per second, as disk benchmarks report them (that is %sB/s)", s, trimFloat(float64(r)/8e6)+"M")
		}
		return 0, fmt.Errorf("disk rate %q: %w", s, err)
	}
	return int64(z), nil
}

// ParsePercent parses a probability written as a percentage ("0.1%") into [0, 1].
// A bare 0 is accepted.
func ParsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	body, ok := strings.CutSuffix(s, "%")
	if !ok {
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return 0, fmt.Errorf("percentage %q: %w (write e.g. 0.1%%)", s, ErrNoUnit)
		}
		return 0, fmt.Errorf("percentage %q: write a number followed by %%", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(body), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("percentage %q is not a number", s)
	}
	if v < 0 || v > 100 {
		return 0, fmt.Errorf("percentage %q is outside 0%%..100%%", s)
	}
	return v / 100, nil
}

// FormatPercent prints a probability as a percentage to four significant digits.
func FormatPercent(p float64) string { return strconv.FormatFloat(p*100, 'g', 4, 64) + "%" }

// FormatDuration prints a duration in milliseconds, the unit of RTTs.
func FormatDuration(d time.Duration) string {
	return trimFloat(float64(d)/float64(time.Millisecond)) + "ms"
}

// splitNumber splits "1.7Mbit" into 1.7 and "Mbit".
func splitNumber(s string) (float64, string, error) {
	s = strings.TrimSpace(s)
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, "", fmt.Errorf("%q does not start with a number", s)
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, "", fmt.Errorf("%q does not start with a number", s)
	}
	return v, strings.TrimSpace(s[i:]), nil
}

func trimFloat(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}
