// Package policy is an agent's authorisation: which controller identities
// (names their certificates prove) may run which test kinds, toward which
// peer networks and which far ends without an agent (targets: networks,
// with the kinds and ports each allows), within which limits, and whether
// their throughput tests may share the host with others. A policy is a YAML file, validated with
// file:line errors (docs/policy.md); with none, an agent serves every
// controller its CA signed, with the default limits.
package policy

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// The test kinds a rule may allow: the agent's own tests, and the roles of
// the application workloads.
const (
	Throughput = "throughput"
	Probe      = "probe"
	Transfer   = "transfer"
	Disk       = "disk"
	EventDB    = "eventdb"
	TaskFarm   = "taskfarm"
	Mesh       = "mesh"
	// Bandwidth is the capacity and available-bandwidth estimates: short
	// trains of UDP packets.
	Bandwidth = "bandwidth"
	// Watch reads the TCP state of every connection on the host, other
	// users' included: never granted unless a rule names it.
	Watch = "watch"
)

// Kinds are every kind, in the order docs list them.
var Kinds = []string{Throughput, Probe, Transfer, Disk, Bandwidth, EventDB, TaskFarm, Mesh, Watch}

// MeasureKinds are what a rule allows unless it says: the measurements.
var MeasureKinds = []string{Throughput, Probe, Transfer, Disk, Bandwidth}

// ThroughputClass are the kinds that fill a path or a disk: two of them on
// one host would measure each other.
var ThroughputClass = map[string]bool{Throughput: true, Transfer: true, Disk: true, Bandwidth: true, EventDB: true, TaskFarm: true, Mesh: true}

// Anyone matches every controller whose certificate the agent's CA signed.
const Anyone = "*"

// Policy is an agent's rules, tried in order.
type Policy struct {
	Source string
	// Queue is how many throughput-class requests may wait for the host
	// at once; more are refused as busy.
	Queue int
	Rules []*Rule
}

// Rule grants what it says to the identities it names.
type Rule struct {
	Name       string
	Line       int
	Identities []string
	Kinds      []string
	// Peers are the networks the agent sends test traffic toward; none
	// means any wanlab test listener (the token handshake still holds).
	Peers []netip.Prefix
	// Targets are the far ends without an agent (an iperf3 server, a STAMP
	// reflector, a host that answers ping) the agent may test toward for
	// these identities, with the kinds and ports each entry allows; none
	// means none (AllowsTarget).
	Targets []Target
	// Share lets these identities' throughput-class tests run while
	// another runs on the host.
	Share bool
	// Wait is the longest a request may wait for the host to be free.
	Wait time.Duration
	// Limits bound each test (MaxTests: this identity's tests at once).
	Limits limits.Limits
	// Rate is the rule's own limits.rate, in bit/s (0: it gives none, and
	// Limits.MaxRate is the agent's).
	Rate        float64
	BytesPerDay int64
	// Requests bounds the calls per second of one identity (hellos
	// included); bursts of twice as many pass.
	Requests float64
}

// Defaults of a policy and of a rule that leaves a setting out.
const (
	DefaultQueue = 8
	DefaultWait  = time.Minute
	// DefaultBytesPerDay bounds what one identity moves in a day by default.
	DefaultBytesPerDay = 100 << 40 // 100 TiB
	// DefaultTests is how many tests one identity runs at once by default.
	DefaultTests = 16
	// DefaultRequests is how many calls per second one identity makes by
	// default: a mesh controller's dozens, not a flood.
	DefaultRequests = 50.0
)

// Default is the policy of an agent started without one: every controller
// its CA signed may run the measurements, with the default limits, toward
// other wanlab agents' listeners only.
func Default(agent limits.Limits) *Policy {
	l := agent
	l.MaxTests = min(DefaultTests, agent.MaxTests)
	return &Policy{Source: "the default policy", Queue: DefaultQueue, Rules: []*Rule{{
		Name: "default", Identities: []string{Anyone}, Kinds: MeasureKinds, Wait: DefaultWait,
		Limits: l, BytesPerDay: DefaultBytesPerDay, Requests: DefaultRequests,
	}}}
}

// Match is the first rule naming one of ids (a certificate's identities,
// as pki.Identities gives them), or nil.
func (p *Policy) Match(ids []string) *Rule {
	for _, r := range p.Rules {
		for _, want := range r.Identities {
			if want == Anyone || slices.Contains(ids, want) {
				return r
			}
		}
	}
	return nil
}

// Allows says whether the rule allows a kind of test.
func (r *Rule) Allows(kind string) bool { return slices.Contains(r.Kinds, kind) }

// Reaches says whether the rule lets the agent send toward addr.
func (r *Rule) Reaches(addr netip.Addr) bool {
	if len(r.Peers) == 0 {
		return true
	}
	addr = addr.Unmap()
	for _, p := range r.Peers {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Describe is the rule as a refusal names it.
func (r *Rule) Describe(source string) string {
	if r.Line == 0 {
		return fmt.Sprintf("rule %q of %s", r.Name, source)
	}
	return fmt.Sprintf("rule %q (%s:%d)", r.Name, source, r.Line)
}

type rawPolicy struct {
	Queue *int      `yaml:"queue"`
	Rules []rawRule `yaml:"rules"`
}

type rawRule struct {
	Name       string      `yaml:"name"`
	Identities []string    `yaml:"identities"`
	Kinds      []string    `yaml:"kinds"`
	Peers      []string    `yaml:"peers"`
	Targets    []yaml.Node `yaml:"targets"` // a network, or {network, kinds, ports}
	Share      bool        `yaml:"share"`
	Wait       string      `yaml:"wait"`
	Limits     rawLimits   `yaml:"limits"`
}

type rawLimits struct {
	Rate        string   `yaml:"rate"`
	Duration    string   `yaml:"duration"`
	Streams     *int     `yaml:"streams"`
	Bytes       string   `yaml:"bytes"`
	BytesPerDay string   `yaml:"bytes_per_day"`
	Tests       *int     `yaml:"tests"`
	Connections *int     `yaml:"connections"`
	Requests    *float64 `yaml:"requests"`
}

// Load reads and validates a policy file. agent is the agent's own limits:
// no rule may grant more, and a rule's unset limits are the agent's.
func Load(path string, agent limits.Limits) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	return Parse(path, data, agent)
}

// Parse validates a policy; a returned error is a *yamlfile.Error listing
// every problem.
func Parse(file string, data []byte, agent limits.Limits) (*Policy, error) {
	var raw rawPolicy
	c, _, err := yamlfile.Decode(file, data, &raw, "the policy is empty: it needs a rules: list (docs/policy.md)")
	if err != nil {
		return nil, err
	}
	p := &Policy{Source: file, Queue: DefaultQueue}
	if raw.Queue != nil {
		if *raw.Queue < 0 || *raw.Queue > 1000 {
			c.Fail("queue", "%d: give 0 to 1000 requests", *raw.Queue)
		}
		p.Queue = *raw.Queue
	}
	if len(raw.Rules) == 0 {
		c.Fail("rules", "no rules: nobody could use the agent")
	}
	names := map[string]bool{}
	for i, rr := range raw.Rules {
		f := fmt.Sprintf("rules[%d]", i)
		r := rule(c, f, rr, agent)
		r.Line = c.Line(f)
		if names[r.Name] {
			c.Fail(f+".name", "rule %q is named twice", r.Name)
		}
		names[r.Name] = true
		p.Rules = append(p.Rules, r)
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

func rule(c *yamlfile.Checker, f string, rr rawRule, agent limits.Limits) *Rule {
	r := &Rule{Name: rr.Name, Share: rr.Share, Wait: DefaultWait, Limits: agent, BytesPerDay: DefaultBytesPerDay, Requests: DefaultRequests}
	r.Limits.MaxTests = min(DefaultTests, agent.MaxTests)
	if r.Name == "" {
		c.Fail(f+".name", "give the rule a name: refusals and the audit log name it")
	}
	if len(rr.Identities) == 0 {
		c.Fail(f+".identities", "give the identities this rule is for (cn:NAME, dns:NAME, uri:URI, email:ADDR, or \"*\" for any certificate the agent's CA signed)")
	}
	for j, id := range rr.Identities {
		if id == Anyone {
			r.Identities = append(r.Identities, id)
			continue
		}
		kind, name, ok := strings.Cut(id, ":")
		if !ok || name == "" || !slices.Contains([]string{"cn", "dns", "ip", "uri", "email"}, kind) {
			c.Fail(fmt.Sprintf("%s.identities[%d]", f, j), "%q: write cn:NAME, dns:NAME, ip:ADDR, uri:URI or email:ADDR (the certificate's subject common name or a subject alternative name), or \"*\"", id)
			continue
		}
		r.Identities = append(r.Identities, id)
	}
	r.Kinds = MeasureKinds
	if rr.Kinds != nil {
		r.Kinds = nil
		for j, k := range rr.Kinds {
			if !slices.Contains(Kinds, k) {
				c.Fail(fmt.Sprintf("%s.kinds[%d]", f, j), "unknown test kind %q (kinds: %s)", k, strings.Join(Kinds, ", "))
				continue
			}
			r.Kinds = append(r.Kinds, k)
		}
	}
	for j, s := range rr.Peers {
		pf, err := parseNetwork(s)
		if err != nil {
			c.Fail(fmt.Sprintf("%s.peers[%d]", f, j), "%q: give a network as 10.1.0.0/16 or 2001:db8::/32, or one address", s)
			continue
		}
		r.Peers = append(r.Peers, unmapPrefix(pf))
	}
	r.Targets = ruleTargets(c, f, r.Name, rr.Targets)
	if rr.Wait != "" {
		d, err := units.ParseDuration(rr.Wait)
		if err != nil || d < 0 || d > time.Hour {
			c.Fail(f+".wait", "%q: give a duration from 0s to 1h", rr.Wait)
		}
		r.Wait = d
	}
	ruleLimits(c, f+".limits", rr.Limits, agent, r)
	return r
}

// ruleLimits reads a rule's limits; none may exceed the agent's own.
func ruleLimits(c *yamlfile.Checker, f string, rl rawLimits, agent limits.Limits, r *Rule) {
	over := func(field string, what any, most any) {
		c.Fail(f+"."+field, "%v is over the agent's own limit of %v (its command line)", what, most)
	}
	if rl.Rate != "" {
		v, err := units.ParseRate(rl.Rate)
		switch {
		case err != nil:
			c.Fail(f+".rate", "%v", err)
		case float64(v) > agent.MaxRate:
			over("rate", v, units.Rate(agent.MaxRate))
		case v <= 0:
			c.Fail(f+".rate", "give a positive rate")
		default:
			r.Limits.MaxRate, r.Rate = float64(v), float64(v)
		}
	}
	if rl.Duration != "" {
		d, err := units.ParseDuration(rl.Duration)
		switch {
		case err != nil:
			c.Fail(f+".duration", "%v", err)
		case d <= 0:
			c.Fail(f+".duration", "give a positive duration")
		case d > agent.MaxDuration:
			over("duration", d, agent.MaxDuration)
		default:
			r.Limits.MaxDuration = d
		}
	}
	for _, n := range []struct {
		field string
		v     *int
		most  int
		set   *int
	}{
		{"streams", rl.Streams, agent.MaxStreams, &r.Limits.MaxStreams},
		{"tests", rl.Tests, agent.MaxTests, &r.Limits.MaxTests},
		{"connections", rl.Connections, agent.MaxConnections, &r.Limits.MaxConnections},
	} {
		switch {
		case n.v == nil:
		case *n.v < 1:
			c.Fail(f+"."+n.field, "%d: give at least 1", *n.v)
		case *n.v > n.most:
			over(n.field, *n.v, n.most)
		default:
			*n.set = *n.v
		}
	}
	if q := rl.Requests; q != nil {
		if !(*q > 0 && *q <= 10000) { // also NaN
			c.Fail(f+".requests", "%v: give 0.01 to 10000 calls per second", *q)
		} else {
			r.Requests = *q
		}
	}
	for _, z := range []struct {
		field, v string
		most     int64
		set      *int64
	}{
		{"bytes", rl.Bytes, agent.MaxBytes, &r.Limits.MaxBytes},
		{"bytes_per_day", rl.BytesPerDay, 1 << 62, &r.BytesPerDay},
	} {
		if z.v == "" {
			continue
		}
		v, err := units.ParseSize(z.v)
		switch {
		case err != nil:
			c.Fail(f+"."+z.field, "%v", err)
		case int64(v) > z.most:
			over(z.field, v, units.Size(z.most))
		case v <= 0:
			c.Fail(f+"."+z.field, "give a positive size")
		default:
			*z.set = int64(v)
		}
	}
}
