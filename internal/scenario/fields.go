package scenario

import (
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// fieldChecker records the problems of a scenario file, each at its field
// (and so its line): the one part of the validator every other shares, and
// its checks of single values (counts, sizes, durations, names, limits).
type fieldChecker struct {
	*yamlfile.Checker
}

func (v *fieldChecker) fail(field, format string, args ...any) { v.Fail(field, format, args...) }

// failAt records a problem at field, placing field at line first.
func (v *fieldChecker) failAt(line int, field, format string, args ...any) {
	v.At(field, line)
	v.fail(field, format, args...)
}

// name checks the name of a test-bed, site, host or workload (kind says
// which).
func (v *fieldChecker) name(field, kind, s string) {
	if !nameRE.MatchString(s) {
		v.fail(field, "%s name %q must be 1-32 letters, digits, '-' or '_', starting with a letter or digit", kind, s)
	}
}

// count is *n if it is within lo..hi (else it fails field), def if n is nil.
func (v *fieldChecker) count(field string, n *int, def, lo, hi int) int {
	if n == nil {
		return def
	}
	if *n < lo || *n > hi {
		v.fail(field, "%d is out of range: from %d to %d", *n, lo, hi)
	}
	return *n
}

// size parses a size (100MB), def if s is empty.
func (v *fieldChecker) size(field, s string, def int64) int64 {
	if s == "" {
		return def
	}
	z, err := units.ParseSize(s)
	if err != nil {
		v.fail(field, "%v", err)
	}
	return int64(z)
}

// duration parses a duration (10s), def if s is empty.
func (v *fieldChecker) duration(field, s string, def time.Duration) time.Duration {
	if s == "" {
		return def
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		v.fail(field, "%v", err)
	}
	return d
}

// agentLimits are the limits a scenario's workloads are checked against
// before anything runs: those of an agent started with its defaults.
var agentLimits = limits.Default

// limit records a limit's refusal of a field, if any.
func (v *fieldChecker) limit(field string, err error) {
	if err != nil {
		v.fail(field, "%v (an agent's default limit)", err)
	}
}
