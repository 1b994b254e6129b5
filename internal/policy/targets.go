package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/farend"
)

// The kinds of far end without an agent (targets) an agent may test
// toward, as inventories and monitor configurations name them (package
// farend's words).
const (
	// TargetIperf3 is an iperf3 server: a throughput test.
	TargetIperf3 = farend.Iperf3
	// TargetSTAMP is a STAMP or TWAMP-light reflector (RFC 8762): probes.
	TargetSTAMP = farend.STAMP
	// TargetPing is a host that answers ICMP echo only: probes.
	TargetPing = farend.Ping
)

// TargetKinds maps each kind of far end to the test kind a rule must allow
// for the agent to test toward it: the rule's limits bound those tests as
// they bound the same kind between agents.
var TargetKinds = map[string]string{TargetIperf3: Throughput, TargetSTAMP: Probe, TargetPing: Probe}

// Target is an entry of a rule's targets: a network of far ends, the
// kinds of far end it allows there and the ports. A plain entry (a
// network or an address) allows every kind, each at its own default port
// only (farend.DefaultPort: STAMP at 862, iperf3 at 5201): listing a
// router to ping it does not let the agent send to its other ports.
type Target struct {
	// Network holds the far ends' addresses, without a zone.
	Network netip.Prefix
	// Zone is a link-local network's interface (fe80::/64%eth0): a
	// link-local target must be asked with the same zone.
	Zone string
	// Kinds are the kinds of far end allowed (farend.Kinds); nil: all.
	Kinds []string
	// Ports are the ports a STAMP or iperf3 far end may listen on; nil:
	// each kind's default port. Ping has none.
	Ports []PortRange
}

// PortRange is a range of ports, both ends included.
type PortRange struct{ First, Last uint16 }

func (r PortRange) String() string {
	if r.First == r.Last {
		return fmt.Sprint(r.First)
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// String is the entry as a policy writes it, kinds and ports appended
// when it gives them: "192.0.2.0/24", "fe80::/64%eth0",
// "2001:db8::/64 kinds=stamp ports=862,8620-8629".
func (t Target) String() string {
	s := t.Network.String()
	if t.Zone != "" {
		s += "%" + t.Zone
	}
	if t.Kinds != nil {
		s += " kinds=" + strings.Join(t.Kinds, ",")
	}
	if t.Ports != nil {
		ports := make([]string, len(t.Ports))
		for i, p := range t.Ports {
			ports[i] = p.String()
		}
		s += " ports=" + strings.Join(ports, ",")
	}
	return s
}

// holds says whether the entry holds addr, zone included: a link-local
// entry holds only addresses of its zone, any other only addresses
// without one.
func (t Target) holds(addr netip.Addr) bool {
	return addr.Zone() == t.Zone && t.Network.Contains(addr.WithZone(""))
}

// allows says whether the entry allows a far end of kind at port (0 for
// ping).
func (t Target) allows(kind string, port int) bool {
	if t.Kinds != nil && !slices.Contains(t.Kinds, kind) {
		return false
	}
	if kind == TargetPing {
		return port == 0
	}
	if t.Ports == nil {
		return port == farend.DefaultPort(kind)
	}
	return slices.ContainsFunc(t.Ports, func(r PortRange) bool { return port >= int(r.First) && port <= int(r.Last) })
}

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
	linkLocal6 = netip.MustParsePrefix("fe80::/10")
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
	// NotListed: no entry of the rule's targets holds the address (with
	// its zone) and allows the kind of far end at the port.
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
	// Addr is the far end's address (invalid when only its kind and
	// port were checked: MayTarget), Port its port (0 for ping).
	Addr netip.Addr
	Port int
	Kind string
}

func (e *TargetRefusal) Error() string {
	switch e.Reason {
	case NoRule:
		return fmt.Sprintf("no rule of %s names %s", e.Source, strings.Join(e.IDs, ", "))
	case UnknownTarget:
		return fmt.Sprintf("%q toward %s: not a kind of far end a policy allows (%s)", e.Kind, e.where(), strings.Join(farend.Kinds, ", "))
	case NotUnicast:
		return fmt.Sprintf("%s is not a unicast address: no rule lets an agent test toward it", e.Addr)
	}
	rule := e.Rule.Describe(e.Source)
	switch e.Reason {
	case KindNotAllowed:
		return fmt.Sprintf("%s does not allow %s tests, which %s toward %s is (it allows %s)", rule, TargetKinds[e.Kind], article(e.Kind), e.where(), strings.Join(e.Rule.Kinds, ", "))
	case NotListed:
		if len(e.Rule.Targets) == 0 {
			return fmt.Sprintf("%s names no targets, so it lets the agent test toward no far end without an agent (%s toward %s)", rule, article(e.Kind), e.where())
		}
		if e.Addr.Is6() && linkLocal6.Contains(e.Addr.WithZone("")) && e.Addr.Zone() == "" {
			return fmt.Sprintf("%s: %s is link-local, and a link-local target names its interface (as %s%%eth0), which its targets must list", rule, e.Addr, e.Addr)
		}
		if !e.Addr.IsValid() {
			return fmt.Sprintf("%s lists no target for %s at port %d (%s)", rule, article(e.Kind), e.Port, portHint)
		}
		if e.Kind != TargetPing && e.Rule.HasTarget(e.Addr) {
			return fmt.Sprintf("%s lists %s among its targets, but not for %s at port %d (%s)", rule, e.Addr, article(e.Kind), e.Port, portHint)
		}
		return fmt.Sprintf("%s does not list %s among its targets (%s)", rule, e.Addr, article(e.Kind))
	}
	return fmt.Sprintf("%s refuses %s toward %s", rule, article(e.Kind), e.where())
}

// portHint says what a plain entry allows, and how to allow more.
const portHint = "a plain entry allows STAMP at port 862 and iperf3 at 5201 only; an entry as {network: 192.0.2.7, kinds: [stamp], ports: [8620]} allows others"

// where is the far end as a refusal names it.
func (e *TargetRefusal) where() string {
	switch {
	case !e.Addr.IsValid():
		return fmt.Sprintf("port %d", e.Port)
	case e.Port == 0:
		return e.Addr.String()
	}
	return netip.AddrPortFrom(e.Addr, uint16(e.Port)).String()
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
// checks that it lets the agent test toward a far end without an agent of
// the given kind (TargetIperf3, TargetSTAMP, TargetPing) at addr and port
// (0 for ping): the rule must allow that kind's test (TargetKinds), and
// an entry of its targets must hold addr (a link-local address with the
// entry's zone) and allow the kind at the port. It returns the rule, whose
// limits (rate, bytes, bytes_per_day, tests) then bound the test, or a
// *TargetRefusal saying why not. Call it before the first packet is sent.
func (p *Policy) AllowsTarget(ids []string, kind string, addr netip.Addr, port int) (*Rule, error) {
	addr = addr.Unmap()
	if !addr.IsValid() || addr.IsUnspecified() || addr.IsMulticast() || addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		if _, known := TargetKinds[kind]; known {
			return nil, &TargetRefusal{Reason: NotUnicast, Source: p.Source, IDs: ids, Addr: addr, Port: port, Kind: kind}
		}
	}
	return p.checkTarget(ids, kind, addr, port)
}

// MayTarget is AllowsTarget before the far end's address is known: it
// checks the caller's rule, the kind, and that some entry of the rule's
// targets allows the kind at the port. An agent calls it before it
// resolves a far end's name, so that names are looked up only for callers
// who may test toward some far end of that kind.
func (p *Policy) MayTarget(ids []string, kind string, port int) (*Rule, error) {
	return p.checkTarget(ids, kind, netip.Addr{}, port)
}

// checkTarget is AllowsTarget's checks, the address's left out when it is
// invalid.
func (p *Policy) checkTarget(ids []string, kind string, addr netip.Addr, port int) (*Rule, error) {
	refuse := func(reason int, r *Rule) error {
		return &TargetRefusal{Reason: reason, Source: p.Source, Rule: r, IDs: ids, Addr: addr, Port: port, Kind: kind}
	}
	test, known := TargetKinds[kind]
	if !known {
		return nil, refuse(UnknownTarget, nil)
	}
	r := p.Match(ids)
	switch {
	case r == nil:
		return nil, refuse(NoRule, nil)
	case !r.Allows(test):
		return nil, refuse(KindNotAllowed, r)
	}
	listed := slices.ContainsFunc(r.Targets, func(t Target) bool {
		return t.allows(kind, port) && (!addr.IsValid() || t.holds(addr))
	})
	if !listed {
		return nil, refuse(NotListed, r)
	}
	return r, nil
}

// HasTarget says whether an entry of the rule's targets holds addr,
// whatever kinds and ports it allows (an IPv4 address also as
// ::ffff:a.b.c.d; a link-local address with the entry's zone). Unlike
// Reaches, a rule without targets holds none.
func (r *Rule) HasTarget(addr netip.Addr) bool {
	addr = addr.Unmap()
	return slices.ContainsFunc(r.Targets, func(t Target) bool { return t.holds(addr) })
}
