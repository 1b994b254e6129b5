package core

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Address families (issue 36): a test may run each pair once per family
// (families: [ipv4, ipv6], or family: ipv6), each run a path of its own
// (PathKey.Family) with its own series, baselines and alerts. A test that
// names none runs once over its hosts' preference, as before: its key's
// Family is "".

// The families a test may name, as measure.IPv4 and measure.IPv6 write
// them (the core imports no measure).
const (
	IPv4 = "ipv4"
	IPv6 = "ipv6"
)

// Scopes of an alert on a test run once per family: whether the other
// family's run of the same pair alerts too.
const (
	// ScopeIPv4Only and ScopeIPv6Only: the other family's run is healthy
	// (it gave a result and alerts on nothing).
	ScopeIPv4Only = "ipv4-only"
	ScopeIPv6Only = "ipv6-only"
	// ScopePath: the other family's run alerts as well: the path, not
	// one family, is at fault.
	ScopePath = "path"
)

// Runs are the test's runs of each pair: one per family it names, each
// with Family set, or the test itself (Family "") when it names none.
func (t Test) Runs() []Test {
	if len(t.Families) == 0 {
		return []Test{t}
	}
	out := make([]Test, len(t.Families))
	for i, f := range t.Families {
		out[i] = t
		out[i].Family = f
	}
	return out
}

// Keys are the paths of a test: a key per pair and run (Runs). A target
// (a far end without an agent) is tested once, over the family its
// address gives: its key's Family is "".
func (c *Config) Keys(t Test) []PathKey {
	var out []PathKey
	for _, p := range c.Pairs(t) {
		if c.IsTarget(p[1]) {
			out = append(out, PathKey{Src: p[0], Dst: p[1], Test: t.Name})
			continue
		}
		for _, r := range t.Runs() {
			out = append(out, PathKey{Src: p[0], Dst: p[1], Test: t.Name, Family: r.Family})
		}
	}
	return out
}

// Run returns the run of a test that a key names: the test with the
// key's family; false if the configuration has no such path.
func (c *Config) Run(k PathKey) (Test, bool) {
	i := slices.IndexFunc(c.Tests, func(t Test) bool { return t.Name == k.Test })
	if i < 0 || !slices.Contains(c.Keys(c.Tests[i]), k) {
		return Test{}, false
	}
	t := c.Tests[i]
	t.Family = k.Family
	return t, true
}

// HostFamilies says which families a host has test addresses of: known
// false where it is not known before its agent answers (a real host of an
// inventory without addresses).
type HostFamilies func(host string) (families []string, known bool)

// CheckFamilies refuses a test that names a family some host of its group
// has no address of, where the hosts' addresses are known, naming the
// host and the family.
func (c *Config) CheckFamilies(have HostFamilies) error {
	var bad []string
	for _, t := range c.Tests {
		for _, f := range t.Families {
			for _, h := range c.Group(t.Group) {
				if c.IsTarget(h) {
					continue
				}
				if fs, known := have(h); known && !slices.Contains(fs, f) {
					bad = append(bad, fmt.Sprintf("test %s runs over %s, which host %s has no address of", t.Name, f, h))
				}
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %s (give the test only the families every host of its group has)", c.Source, strings.Join(bad, "; "))
	}
	return nil
}

// Other is the other family's key of the same pair and test ("" family:
// none).
func (k PathKey) Other() (PathKey, bool) {
	switch k.Family {
	case IPv4:
		k.Family = IPv6
	case IPv6:
		k.Family = IPv4
	default:
		return PathKey{}, false
	}
	return k, true
}

// Scope judges an alert firing on k: ScopeIPv4Only or ScopeIPv6Only when
// the other family's run of the pair is healthy (its latest result came,
// and it alerts on nothing), ScopePath when that run alerts too, and ""
// when k runs one family only or the other's state is not known (no
// result yet, or a failed one not yet an alert).
func Scope(k PathKey, otherSeen, otherFailed, otherAlerts bool) string {
	if _, ok := k.Other(); !ok {
		return ""
	}
	switch {
	case otherAlerts:
		return ScopePath
	case !otherSeen || otherFailed:
		return ""
	case k.Family == IPv6:
		return ScopeIPv6Only
	}
	return ScopeIPv4Only
}

// scopeWords are how a message says an alert's scope.
func scopeWords(scope string) string {
	switch scope {
	case ScopeIPv6Only:
		return "IPv6 only (IPv4 healthy): "
	case ScopeIPv4Only:
		return "IPv4 only (IPv6 healthy): "
	case ScopePath:
		return "both IPv4 and IPv6: "
	}
	return ""
}

// scope is Scope of an alert of rule firing on k, from what the detector
// knows of the other family's run: only an alert of the same rule there
// makes it path-wide (an rtt_step on IPv4 says nothing of IPv6's loss).
// An alert of the other run that said its family alone is at fault says
// ScopePath from now on, in its message too.
func (d *Detector) scope(k PathKey, rule string) string {
	other, ok := k.Other()
	if !ok {
		return ""
	}
	alerts := false
	for ak, a := range d.active {
		if ak.PathKey != other || ak.Rule != rule {
			continue
		}
		alerts = true
		if a.Scope == ScopeIPv4Only || a.Scope == ScopeIPv6Only {
			a.Message = scopeWords(ScopePath) + strings.TrimPrefix(a.Message, scopeWords(a.Scope))
			a.Scope = ScopePath
			d.active[ak] = a
		}
	}
	gave, seen := d.gave[other]
	return Scope(k, seen, !gave, alerts)
}

// alertRef is the ref of an alert of a rule on k fired at a time:
// rule/src/dst/test[/family]/nanoseconds.
func alertRef(rule string, k PathKey, at time.Time) string {
	return fmt.Sprintf("%s/%s/%s/%s/%d", rule, k.Src, k.Dst, testRef(k), at.UnixNano())
}

// testRef is a key's test in an alert's ref: with its family when the
// test runs once per family.
func testRef(k PathKey) string {
	if k.Family != "" {
		return k.Test + "/" + k.Family
	}
	return k.Test
}
