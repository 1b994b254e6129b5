package core

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// Far ends that run no wanlab agent (issue 36): a configuration's targets:
// {NAME: {iperf3: HOST[:PORT]}}, {NAME: {stamp: HOST[:PORT]}} or {NAME:
// {ping: HOST}}. A target's name is a host's, as groups list it: a group
// may hold targets besides its hosts, and a test of the group tests from
// each of its hosts toward each of its targets of a kind the test reaches
// (TargetReaches): a probe test toward stamp and ping targets, a
// throughput test toward iperf3 targets. A target is never a source.

// The kinds of target (package farend's words, which policies and the
// agent's Target call use).
const (
	TargetIperf3 = farend.Iperf3
	TargetSTAMP  = farend.STAMP
	TargetPing   = farend.Ping
)

// TargetKinds are the kinds of target, in the order messages list them.
var TargetKinds = farend.Kinds

// Bounds of a probe test toward a target, those of the agent's ICMP echo
// and STAMP sender (package icmpecho, package stamp; the runner's tests
// check that they agree): a round of probes is one Target call.
const (
	// PingMinInterval and PingMaxCount bound a ping target's round: at
	// most 100 echoes a second, 10000 a summary.
	PingMinInterval = 10 * time.Millisecond
	PingMaxCount    = 10000
	// PingMaxSize is the most data an echo carries (9000 bytes less the
	// IPv6 and ICMP headers).
	PingMaxSize = 9000 - 40 - 8
	// STAMPMinInterval and STAMPMaxCount bound a STAMP target's round.
	STAMPMinInterval = time.Millisecond
	STAMPMaxCount    = 100_000
	// STAMPMinSize is the base STAMP test packet (RFC 8762, 44 bytes).
	STAMPMinSize = 44
	// ProbeTimeout is how long a probe toward a target may take.
	ProbeTimeout = 2 * time.Second
)

// Target is a far end that runs no agent: the agents of a group's hosts
// test toward it (farend.Target, the one home of what an inventory and a
// configuration name).
type Target = farend.Target

// TargetReaches says whether a test of type testType tests toward a
// target of kind: probes toward STAMP reflectors and ping targets,
// throughput tests toward iperf3 servers.
func TargetReaches(testType, kind string) bool {
	switch testType {
	case Probe:
		return kind == TargetSTAMP || kind == TargetPing
	case Throughput:
		return kind == TargetIperf3
	}
	return false
}

// Target returns the target of that name.
func (c *Config) Target(name string) (Target, bool) { return farend.Find(c.Targets, name) }

// IsTarget says whether name is a target's.
func (c *Config) IsTarget(name string) bool {
	_, ok := c.Target(name)
	return ok
}

// Names are every host and target the groups name, in order of first
// mention: the ends a schedule's exclusive tests hold (an iperf3 server
// runs one test at a time, as a host does).
func (c *Config) Names() []string {
	var out []string
	for _, g := range c.Groups {
		for _, h := range g.Value {
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// rawTargets are targets as written: each name's one kind and its address.
type rawTargets = yamlfile.Ordered[map[string]string]

// targets checks the targets: a valid name, one kind of a known name, an
// address that kind takes.
func (v checker) targets(raw rawTargets) []Target {
	var out []Target
	for _, e := range raw {
		f := "targets." + e.Key
		if !scenario.ValidName(e.Key) {
			v.Fail(f, "target name %q must be 1-32 letters, digits, '-' or '_'", e.Key)
		}
		if len(e.Value) != 1 {
			var kinds []string
			for k := range e.Value {
				kinds = append(kinds, k)
			}
			slices.Sort(kinds)
			v.Fail(f, "target %q gives %d kinds (%s): give one, as {stamp: 192.0.2.7:862}, {iperf3: iperf.example.org:5201} or {ping: 192.0.2.1}",
				e.Key, len(kinds), strings.Join(kinds, ", "))
			continue
		}
		for kind, addr := range e.Value {
			t := Target{Name: e.Key, Kind: kind, Address: strings.TrimSpace(addr)}
			if !slices.Contains(TargetKinds, kind) {
				v.Fail(f+"."+kind, "%q: a target is {iperf3: HOST:PORT} (an iperf3 server), {stamp: HOST:PORT} (a STAMP or TWAMP-light reflector) or {ping: HOST}", kind)
				continue
			}
			if why := badTargetAddress(kind, t.Address); why != "" {
				v.Fail(f+"."+kind, "%q: %s", addr, why)
				continue
			}
			out = append(out, t)
		}
	}
	return out
}

// badTargetAddress says why addr is no address of a target of kind ("" if
// it is one): a host (an IPv4 or IPv6 address, or a name) for ping; a
// host, or a host and a port from 1 to 65535, for stamp and iperf3.
func badTargetAddress(kind, addr string) string { return farend.CheckAddress(kind, addr) }

// checkGroupTargets checks what the groups and tests ask of the targets:
// a group has a host to test from, and a test's group only targets of a
// kind the test reaches.
func (v checker) checkGroupTargets(cfg *Config) {
	for _, g := range cfg.Groups {
		if len(g.Value) > 0 && !slices.ContainsFunc(g.Value, func(h string) bool { return !cfg.IsTarget(h) }) {
			v.Fail("groups."+g.Key, "group %s holds targets only: a target runs no agent and is never a source; add the hosts that test toward them", g.Key)
		}
	}
	for i, t := range cfg.Tests {
		for _, h := range cfg.Group(t.Group) {
			tg, ok := cfg.Target(h)
			if !ok {
				continue
			}
			if !TargetReaches(t.Type, tg.Kind) {
				v.Fail(fmt.Sprintf("tests[%d].group", i), "test %s (%s) cannot test toward target %s of group %s, %s: probe tests reach stamp and ping targets, throughput tests iperf3 targets; give the test a group without it",
					t.Name, t.Type, tg.Name, t.Group, farend.KindWords(tg.Kind))
				continue
			}
			if t.Type == Probe {
				v.checkTargetProbes(fmt.Sprintf("tests[%d]", i), t, tg)
			}
		}
	}
}

// checkTargetProbes checks that a probe test's rounds fit a target's kind.
func (v checker) checkTargetProbes(f string, t Test, tg Target) {
	if t.Rate <= 0 {
		return
	}
	interval := time.Duration(float64(time.Second) / t.Rate)
	count := int(t.Rate*t.Summary.Seconds() + 0.5)
	switch tg.Kind {
	case TargetPing:
		if interval < PingMinInterval {
			v.Fail(f+".rate", "%g/s toward ping target %s: echoes go at most %g a second", t.Rate, tg.Name, float64(time.Second/PingMinInterval))
		}
		if count > PingMaxCount {
			v.Fail(f+".summary", "%s at %g/s is %d echoes toward ping target %s: a summary holds at most %d", t.Summary, t.Rate, count, tg.Name, PingMaxCount)
		}
		if t.Size > PingMaxSize {
			v.Fail(f+".size", "%d bytes toward ping target %s: an echo carries at most %d", t.Size, tg.Name, PingMaxSize)
		}
	case TargetSTAMP:
		if interval < STAMPMinInterval {
			v.Fail(f+".rate", "%g/s toward STAMP target %s: packets go at most %g a second", t.Rate, tg.Name, float64(time.Second/STAMPMinInterval))
		}
		if count > STAMPMaxCount {
			v.Fail(f+".summary", "%s at %g/s is %d packets toward STAMP target %s: a summary holds at most %d", t.Summary, t.Rate, count, tg.Name, STAMPMaxCount)
		}
		if t.Size < STAMPMinSize {
			v.Fail(f+".size", "%d bytes toward STAMP target %s: a STAMP test packet has at least %d", t.Size, tg.Name, STAMPMinSize)
		}
	}
}
