// Package kindtest has fakes for testing a workload kind in its own
// package, with neither a scenario nor agents: a Check that reads settings
// as the scenario's validator does, and an Env that runs the kind's own
// roles in this process, as agents would, each spec sent through JSON.
// Tests only.
package kindtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// Check is the scenario's check on a test-bed of hosts (kind.Check): it
// keeps every problem as "field: message", with the validator's messages
// for what it checks itself (hosts, counts, sizes, durations, limits).
type Check struct {
	// HostNames are the test-bed's hosts; those in Cut reach no other.
	HostNames, Cut []string
	// Real says the hosts are real ones, behind agents.
	Real bool
	// Found are the problems found, in order.
	Found []string
}

var _ kind.Check = (*Check)(nil)

// NewCheck is a check on an emulated test-bed of hosts.
func NewCheck(hosts ...string) *Check { return &Check{HostNames: hosts} }

// Want fails t unless the problems found are want, in order, each
// starting with its string.
func (c *Check) Want(t testing.TB, want ...string) {
	t.Helper()
	if len(c.Found) != len(want) {
		t.Fatalf("problems %q, want %q", c.Found, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Found[i], w) {
			t.Errorf("problem %q, want one starting %q", c.Found[i], w)
		}
	}
}

func (c *Check) Fail(field, format string, args ...any) {
	c.Found = append(c.Found, field+": "+fmt.Sprintf(format, args...))
}

func (c *Check) Host(field, name string) {
	switch {
	case name == "":
		c.Fail(field, "missing: name a host of the test-bed")
	case !slices.Contains(c.HostNames, name):
		c.Fail(field, "unknown host %q (hosts: %s)", name, strings.Join(c.HostNames, ", "))
	}
}

// Reaches refuses a pair of known hosts of which one is cut off.
func (c *Check) Reaches(field, a, b string) {
	if c.Real || a == "" || b == "" || a == b || !slices.Contains(c.HostNames, a) || !slices.Contains(c.HostNames, b) {
		return
	}
	if slices.Contains(c.Cut, a) || slices.Contains(c.Cut, b) {
		c.Fail(field, "hosts %s and %s cannot reach each other", a, b)
	}
}

func (c *Check) Hosts() []string { return c.HostNames }

// AllReach refuses the first pair of hosts that cannot reach each other.
func (c *Check) AllReach(field string, hosts []string) {
	before := len(c.Found)
	for _, a := range hosts {
		for _, b := range hosts {
			if c.Reaches(field, a, b); len(c.Found) > before {
				return
			}
		}
	}
}

func (c *Check) RealHosts() bool       { return c.Real }
func (c *Check) Limits() limits.Limits { return limits.Default }
func (c *Check) Problems() int         { return len(c.Found) }

func (c *Check) Limit(field string, err error) {
	if err != nil {
		c.Fail(field, "%v (an agent's default limit)", err)
	}
}

func (c *Check) Duration(field, s string, def time.Duration) time.Duration {
	if s == "" {
		return def
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		c.Fail(field, "%v", err)
	}
	return d
}

func (c *Check) Size(field, s string, def int64) int64 {
	if s == "" {
		return def
	}
	z, err := units.ParseSize(s)
	if err != nil {
		c.Fail(field, "%v", err)
	}
	return int64(z)
}

func (c *Check) Count(field string, n *int, def, lo, hi int) int {
	if n == nil {
		return def
	}
	if *n < lo || *n > hi {
		c.Fail(field, "%d is out of range: from %d to %d", *n, lo, hi)
	}
	return *n
}
