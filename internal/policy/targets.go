package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/yamlfile"
)

// The kinds of far end without an agent (targets) an agent may test
// toward, as inventories and monitor configurations name them.
const (
	// TargetIperf3 is an iperf3 server: a throughput test.
	TargetIperf3 = "iperf3"
	// TargetSTAMP is a STAMP or TWAMP-light reflector (RFC 8762): probes.
	TargetSTAMP = "stamp"
	// TargetPing is a host that answers ICMP echo only: probes.
	TargetPing = "ping"
)

// TargetKinds maps each kind of far end to the test kind a rule must allow
// for the agent to test toward it: the rule's limits bound those tests as
// they bound the same kind between agents.
var TargetKinds = map[string]string{TargetIperf3: Throughput, TargetSTAMP: Probe, TargetPing: Probe}

// The shortest prefixes a rule's targets may give: a target is a far end a
// site admin names, not the Internet, so an agent stays no traffic
// generator for arbitrary addresses.
const (
	MinTargetBits4 = 8
	MinTargetBits6 = 16
)

var (
	multicast4 = netip.MustParsePrefix("224.0.0.0/4")
	multicast6 = netip.MustParsePrefix("ff00::/8")
)

// Why a policy refuses a target (TargetRefusal.Reason).
const (
	// NoRule: no rule names any of the caller's identities.
	NoRule = iota + 1
	// UnknownTarget: the kind of far end is none of TargetKinds.
	UnknownTarget
	// NotUnicast: the address is unspecified, multicast or the limited
	// broadcast; no rule can name it.
	NotUnicast
	// KindNotAllowed: the rule does not allow the kind of test the far
	// end takes (TargetKinds).
	KindNotAllowed
	// NotListed: the rule's targets do not hold the address.
	NotListed
)

// TargetRefusal is why a policy does not let the agent test toward a far
// end without an agent; match it with errors.As and read Reason.
type TargetRefusal struct {
	Reason int
	// Source is the policy's file, Rule the caller's rule (nil when
	// Reason is NoRule), IDs the caller's identities.
	Source string
	Rule   *Rule
	IDs    []string
	Addr   netip.Addr
	Kind   string
}

func (e *TargetRefusal) Error() string {
	switch e.Reason {
	case NoRule:
		return fmt.Sprintf("no rule of %s names %s", e.Source, strings.Join(e.IDs, ", "))
	case UnknownTarget:
		return fmt.Sprintf("%q toward %s: not a kind of far end a policy allows (%s, %s, %s)", e.Kind, e.Addr, TargetIperf3, TargetSTAMP, TargetPing)
	case NotUnicast:
		return fmt.Sprintf("%s is not a unicast address: no rule lets an agent test toward it", e.Addr)
	}
	rule := e.Rule.Describe(e.Source)
	switch e.Reason {
	case KindNotAllowed:
		return fmt.Sprintf("%s does not allow %s tests, which %s toward %s is (it allows %s)", rule, TargetKinds[e.Kind], article(e.Kind), e.Addr, strings.Join(e.Rule.Kinds, ", "))
	case NotListed:
		if len(e.Rule.Targets) == 0 {
			return fmt.Sprintf("%s names no targets, so it lets the agent test toward no far end without an agent (%s toward %s)", rule, article(e.Kind), e.Addr)
		}
		return fmt.Sprintf("%s does not list %s among its targets (%s)", rule, e.Addr, article(e.Kind))
	}
	return fmt.Sprintf("%s refuses %s toward %s", rule, article(e.Kind), e.Addr)
}

// article is a kind of far end's test as a sentence names it.
func article(kind string) string {
	switch kind {
	case TargetIperf3:
		return "an iperf3 test"
	case TargetSTAMP:
		return "a STAMP test"
	}
	return "a " + kind + " test"
}

// AllowsTarget finds the rule of a caller's identities (as Match does) and
// checks that it lets the agent test toward addr, a far end without an
// agent of the given kind (TargetIperf3, TargetSTAMP, TargetPing): the rule
// must allow that kind's test (TargetKinds) and its targets must hold
// addr. It returns the rule, whose limits (rate, bytes, bytes_per_day,
// tests) then bound the test, or a *TargetRefusal saying why not. Call it
// before the first packet is sent.
func (p *Policy) AllowsTarget(ids []string, addr netip.Addr, kind string) (*Rule, error) {
	refuse := func(reason int, r *Rule) error {
		return &TargetRefusal{Reason: reason, Source: p.Source, Rule: r, IDs: ids, Addr: addr, Kind: kind}
	}
	addr = addr.Unmap().WithZone("")
	test, known := TargetKinds[kind]
	switch {
	case !known:
		return nil, refuse(UnknownTarget, nil)
	case !addr.IsValid() || addr.IsUnspecified() || addr.IsMulticast() || addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return nil, refuse(NotUnicast, nil)
	}
	r := p.Match(ids)
	switch {
	case r == nil:
		return nil, refuse(NoRule, nil)
	case !r.Allows(test):
		return nil, refuse(KindNotAllowed, r)
	case !r.HasTarget(addr):
		return nil, refuse(NotListed, r)
	}
	return r, nil
}

// HasTarget says whether the rule's targets hold addr (an IPv4 address
// also as ::ffff:a.b.c.d; a zone is ignored). Unlike Reaches, a rule
// without targets holds none.
func (r *Rule) HasTarget(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	return slices.ContainsFunc(r.Targets, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// parseNetwork reads a network as 10.1.0.0/16 or 2001:db8::/32, or one
// address (a /32 or /128), masked.
func parseNetwork(s string) (netip.Prefix, error) {
	pf, err := netip.ParsePrefix(s)
	if err != nil {
		if a, aerr := netip.ParseAddr(s); aerr == nil {
			pf, err = a.Prefix(a.BitLen())
		}
	}
	if err != nil {
		return netip.Prefix{}, err
	}
	return pf.Masked(), nil
}

// ruleTargets reads a rule's targets: networks of far ends, each a unicast
// network no broader than MinTargetBits4 or MinTargetBits6.
func ruleTargets(c *yamlfile.Checker, f, name string, raw []string) []netip.Prefix {
	var out []netip.Prefix
	for j, s := range raw {
		field := fmt.Sprintf("%s.targets[%d]", f, j)
		pf, err := parseNetwork(s)
		if err != nil {
			c.Fail(field, "%q of rule %q: give a far end's network as 192.0.2.0/24 or 2001:db8::/48, or one address", s, name)
			continue
		}
		if a := pf.Addr(); a.Is4In6() && pf.Bits() >= 96 {
			pf = netip.PrefixFrom(a.Unmap(), pf.Bits()-96)
		}
		least := MinTargetBits4
		mc := multicast4
		if pf.Addr().Is6() {
			least, mc = MinTargetBits6, multicast6
		}
		switch {
		case pf.Bits() < least:
			c.Fail(field, "%q of rule %q: a network broader than /%d names far ends nobody runs; list the far ends' own networks", s, name, least)
		case pf.Overlaps(mc) || pf.Addr().IsUnspecified():
			c.Fail(field, "%q of rule %q: a multicast or unspecified address is no far end to test toward", s, name)
		default:
			out = append(out, pf)
		}
	}
	return out
}
