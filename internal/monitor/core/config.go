package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/yamlfile"
)

// Test types.
const (
	Probe      = "probe"
	Throughput = "throughput"
	Transfer   = "transfer"
	// Trace is a hop list, as tracepath finds it.
	Trace = "trace"
	// Disk is a host's sequential disk write and read rates: what a
	// disk-to-disk transfer from or to it can reach, whatever the network.
	Disk = "disk"
)

// Config is a validated monitoring configuration.
type Config struct {
	Source string
	// Testbed is a scenario file (relative to the config's folder) or a
	// built-in name, which serve brings up and tears down; Inventory is
	// an inventory of real agents instead.
	Testbed, Inventory string
	Groups             yamlfile.Ordered[[]string]
	// Targets are far ends that run no agent, which groups may hold
	// besides hosts (targets.go).
	Targets []Target
	Tests   []Test
	Alerts  Thresholds
	// Overrides are thresholds of some pairs or groups, later ones first.
	Overrides []Override
	Baseline  Baseline
	Retention Retention
	Buffer    Buffer
	Webhook   string
	SNMP      []SNMPTarget
	// HostInterfaces is how often the hosts' own interfaces are read
	// through their agents; 0 never.
	HostInterfaces time.Duration
	Access         Access
}

// Test is one kind of test run between every ordered pair of a group.
type Test struct {
	Name  string
	Type  string
	Group string
	// Probe: packets per second, summarised every Summary.
	Rate    float64
	Summary time.Duration
	Size    int
	// Throughput and transfer: one test per pair every Every, each moved
	// by up to Slip at random so that a mesh does not synchronise.
	Every, Slip time.Duration
	Duration    time.Duration // throughput
	Streams     int
	Congestion  string
	Window      int
	Bytes       int64 // transfer
	// Trace: at most MaxHops, waiting Wait for each hop, every Every.
	MaxHops int
	Wait    time.Duration
	// Families are the address families each pair is tested over, one
	// run each (families: [ipv4, ipv6], or family: ipv6); none: one run
	// over the hosts' preference. Family is the family of one run (Runs),
	// "" for a test's one run.
	Families []string
	Family   string
}

// Exclusive says whether the test takes a host's network to itself:
// throughput-class tests never overlap on a host.
func (t Test) Exclusive() bool { return t.Type == Throughput || t.Type == Transfer || t.Type == Disk }

// Period is how often a pair's test starts.
func (t Test) Period() time.Duration {
	if t.Type == Probe {
		return t.Summary
	}
	return t.Every
}

// Budget is how long one run of the test holds its hosts, with the time
// to connect and to wait for the last packet.
func (t Test) Budget() time.Duration {
	switch t.Type {
	case Probe:
		return t.Summary
	case Throughput:
		return t.Duration + 2*time.Second
	case Trace:
		return time.Duration(t.MaxHops)*2*t.Wait + 5*time.Second
	case Disk:
		return 2 * TransferTimeout(t.Bytes) // written, then read
	}
	// A transfer's length depends on the path: bound it by its timeout.
	return TransferTimeout(t.Bytes)
}

// TransferTimeout bounds a monitoring transfer of n bytes: at 1 Mbit/s.
func TransferTimeout(n int64) time.Duration {
	return 10*time.Second + time.Duration(float64(n)*8/1e6*float64(time.Second))
}

// Thresholds say when a path has left its baseline; a zero field is not checked.
type Thresholds struct {
	// ThroughputBelow is the fraction of the baseline under which a
	// throughput or transfer result alerts.
	ThroughputBelow float64
	// LossAbove is the round-trip loss ratio over which a probe summary alerts.
	LossAbove float64
	// RTTStep is the rise of the median round trip over the baseline's
	// that alerts (a route change).
	RTTStep time.Duration
	// OWDStep (owd_step:) is the smallest step of one direction's one-way
	// delay that raises owd_step, with or without synchronised clocks
	// (100µs to 1m, as rtt_step); 0, the default, follows rtt_step
	// (OneWayStep).
	OWDStep time.Duration
	// For is how many results in a row must break a threshold.
	For int
}

// DefaultOWDStep is the smallest one-way delay step where neither
// owd_step nor rtt_step says.
const DefaultOWDStep = time.Millisecond

// OneWayStep is the smallest one-way delay step that raises owd_step:
// OWDStep, else RTTStep, else DefaultOWDStep.
func (t Thresholds) OneWayStep() time.Duration {
	switch {
	case t.OWDStep > 0:
		return t.OWDStep
	case t.RTTStep > 0:
		return t.RTTStep
	}
	return DefaultOWDStep
}

// Override is thresholds for some pairs ("a->b") or groups.
type Override struct {
	Pairs  []string
	Groups []string
	Thresholds
}

// Baseline is how a path's normal is learnt.
type Baseline struct {
	Window    time.Duration
	MinPoints int
}

// Retention is how long the archive keeps raw points, hourly aggregates
// and the audit of what callers asked (mon_audit).
type Retention struct{ Raw, Hourly, Audit time.Duration }

// Buffer is where results wait while the archive is unreachable.
type Buffer struct {
	Dir string
	Max int64
}

// SNMPTarget is a router or switch whose interface counters are polled.
type SNMPTarget struct {
	Name       string
	Address    string // host:port
	Version    string // 2c or 3
	Community  string
	User       string
	AuthProto  string // SHA or MD5
	AuthPass   string
	PrivProto  string // AES or DES
	PrivPass   string
	Every      time.Duration
	Timeout    time.Duration // of one request; it is tried twice
	Interfaces []string      // names; empty for all
}

// Access is who may read and who may act (docs/dashboard.md, access).
type Access struct {
	// ReadNeedsToken closes every page and API call to those without an
	// identity; by default reading is open and acting needs one.
	ReadNeedsToken bool
	// Tokens is a file of "NAME sha256:HEX" lines: the identities that
	// may act, by the SHA-256 of their token (never the token itself).
	Tokens string
	// Hosts are the names, besides the listener's own address (and
	// localhost on loopback) and names (monitor.ListenerNames: --http's
	// name, the machine's), that requests may give in their Host header:
	// those a browser or a scraper reaches the service by.
	Hosts []string
}

// Defaults.
const (
	DefaultSummary   = time.Minute
	DefaultProbeRate = 10
	DefaultBufferMax = 256 << 20
	// DefaultDiskBytes is a disk test's file: large enough to pass a
	// disk's write cache, small enough to run every few hours.
	DefaultDiskBytes = 64 << 20
	// MaxGroup bounds a group, and so a test's mesh: 100 hosts, 9,900 pairs.
	MaxGroup = 100
)

var (
	defaultThresholds = Thresholds{ThroughputBelow: 0.5, LossAbove: 0.01, RTTStep: 5 * time.Millisecond, For: 2}
	defaultBaseline   = Baseline{Window: 24 * time.Hour, MinPoints: 5}
	defaultRetention  = Retention{Raw: 30 * 24 * time.Hour, Hourly: 400 * 24 * time.Hour, Audit: 400 * 24 * time.Hour}
)

// Group returns the hosts of a group.
func (c *Config) Group(name string) []string {
	for _, g := range c.Groups {
		if g.Key == name {
			return g.Value
		}
	}
	return nil
}

// Hosts are every host the configuration names, in order of first
// mention: the ends that run an agent (its targets left out).
func (c *Config) Hosts() []string {
	return slices.DeleteFunc(c.Names(), c.IsTarget)
}

// CheckHosts refuses host names that the test-bed or inventory lacks, at
// the line of their group, and targets named as one of its hosts.
func (c *Config) CheckHosts(known []string) error {
	var bad []string
	for _, t := range c.Targets {
		if slices.Contains(known, t.Name) {
			bad = append(bad, fmt.Sprintf("target %s (%s %s) has the name of host %s: hosts and targets share one namespace; rename the target", t.Name, t.Kind, t.Address, t.Name))
		}
	}
	for _, g := range c.Groups {
		for _, h := range g.Value {
			if !slices.Contains(known, h) && !c.IsTarget(h) {
				bad = append(bad, fmt.Sprintf("group %s names host %q", g.Key, h))
			}
		}
	}
	if len(bad) > 0 {
		where := c.Testbed
		if where == "" {
			where = c.Inventory
		}
		return fmt.Errorf("%s: %s, which %s does not have (hosts: %s)", c.Source, strings.Join(bad, "; "), where, strings.Join(known, ", "))
	}
	return nil
}

// For returns the thresholds of a pair: the last override naming the pair
// or one of its groups, else the configuration's.
func (c *Config) For(src, dst string) Thresholds {
	for i := len(c.Overrides) - 1; i >= 0; i-- {
		o := c.Overrides[i]
		if slices.Contains(o.Pairs, src+"->"+dst) {
			return o.Thresholds
		}
		for _, g := range o.Groups {
			if hosts := c.Group(g); slices.Contains(hosts, src) && slices.Contains(hosts, dst) {
				return o.Thresholds
			}
		}
	}
	return c.Alerts
}

// Pairs are the ordered pairs of a test's group; a disk test's are each
// host with itself. A target is never a source, and a destination of the
// tests that reach its kind only (TargetReaches).
func (c *Config) Pairs(t Test) [][2]string {
	var hosts, dsts []string
	for _, h := range c.Group(t.Group) {
		tg, ok := c.Target(h)
		if !ok {
			hosts = append(hosts, h)
		}
		if !ok || TargetReaches(t.Type, tg.Kind) {
			dsts = append(dsts, h)
		}
	}
	if t.Type == Disk {
		out := make([][2]string, len(hosts))
		for i, h := range hosts {
			out[i] = [2]string{h, h}
		}
		return out
	}
	out := make([][2]string, 0, len(hosts)*len(dsts))
	for _, a := range hosts {
		for _, b := range dsts {
			if a != b {
				out = append(out, [2]string{a, b})
			}
		}
	}
	return out
}
