package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// rawTarget is an entry of a rule's targets written as a mapping:
// {network: 2001:db8::/64, kinds: [stamp], ports: [862, 8620-8629]}.
type rawTarget struct {
	Network string   `yaml:"network"`
	Kinds   []string `yaml:"kinds"`
	Ports   []string `yaml:"ports"`
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

// maxZoneLen is the longest interface name (IFNAMSIZ less its NUL).
const maxZoneLen = 15

// parseTargetNetwork reads a target's network, with the zone a link-local
// network must give: fe80::/64%eth0 (or fe80::%eth0/64, fe80::1%eth0).
func parseTargetNetwork(s string) (netip.Prefix, string, error) {
	addr, zone, zoned := strings.Cut(s, "%")
	if zoned {
		if z, bits, ok := strings.Cut(zone, "/"); ok { // fe80::%eth0/64
			addr, zone = addr+"/"+bits, z
		}
		if zone == "" || len(zone) > maxZoneLen || strings.ContainsAny(zone, "%/ \t") {
			return netip.Prefix{}, "", fmt.Errorf("zone %q: give the interface's name, as fe80::/64%%eth0", zone)
		}
	}
	pf, err := parseNetwork(addr)
	if err != nil {
		return netip.Prefix{}, "", fmt.Errorf("give a far end's network as 192.0.2.0/24 or 2001:db8::/48, or one address")
	}
	return unmapPrefix(pf), zone, nil
}

// checkZone says whether a target's network and zone agree: a link-local
// network must give its zone, no other may.
func checkZone(pf netip.Prefix, zone string) error {
	ll := pf.Addr().Is6() && linkLocal6.Overlaps(pf)
	switch {
	case ll && zone == "":
		return fmt.Errorf("a link-local network names its interface, as %s%%eth0: without it, it would hold the link-local addresses of every interface", pf)
	case zone != "" && !ll:
		return fmt.Errorf("only a link-local network (in fe80::/10) takes a zone")
	}
	return nil
}

// parsePorts reads ports as 862 or 8620-8629.
func parsePorts(raw []string) ([]PortRange, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("an empty list allows no port: give ports, or leave ports out for each kind's default (stamp %d, iperf3 %d)", farend.STAMPPort, farend.Iperf3Port)
	}
	out := make([]PortRange, 0, len(raw))
	for _, s := range raw {
		first, last, isRange := strings.Cut(s, "-")
		a, err1 := strconv.ParseUint(strings.TrimSpace(first), 10, 16)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseUint(strings.TrimSpace(last), 10, 16)
		}
		if err1 != nil || err2 != nil || a == 0 || b < a {
			return nil, fmt.Errorf("port %q: give a port from 1 to 65535, or a range as 8620-8629", s)
		}
		out = append(out, PortRange{First: uint16(a), Last: uint16(b)})
	}
	return out, nil
}

// ruleTargets reads a rule's targets: each a network (an address, or a
// mapping with its kinds and ports) of far ends, unicast and no broader
// than MinTargetBits4 or MinTargetBits6.
func ruleTargets(c *yamlfile.Checker, f, name string, raw []yaml.Node) []Target {
	var out []Target
	for j := range raw {
		n := &raw[j]
		field := fmt.Sprintf("%s.targets[%d]", f, j)
		t, ok := ruleTarget(c, field, name, n)
		if ok {
			out = append(out, t)
		}
	}
	return out
}

// ruleTarget reads one entry of a rule's targets.
func ruleTarget(c *yamlfile.Checker, field, name string, n *yaml.Node) (Target, bool) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	var rt rawTarget
	switch n.Kind {
	case yaml.ScalarNode:
		rt.Network = n.Value
	case yaml.MappingNode:
		problems := yamlfile.DecodeNode(n, &rt)
		c.Decoded(field, problems)()
		if len(problems) > 0 {
			return Target{}, false
		}
		if rt.Network == "" {
			c.Fail(field, "an entry of rule %q's targets lacks its network: write {network: 192.0.2.7, kinds: [stamp], ports: [862]}", name)
			return Target{}, false
		}
	default:
		c.Fail(field, "give a network, or a mapping as {network: 192.0.2.7, kinds: [stamp], ports: [862]}")
		return Target{}, false
	}
	pf, zone, err := parseTargetNetwork(rt.Network)
	if err != nil {
		c.Fail(field, "%q of rule %q: %v", rt.Network, name, err)
		return Target{}, false
	}
	least, mc := MinTargetBits4, multicast4
	if pf.Addr().Is6() {
		least, mc = MinTargetBits6, multicast6
	}
	switch {
	case pf.Bits() < least:
		c.Fail(field, "%q of rule %q: a network broader than /%d names far ends nobody runs; list the far ends' own networks", rt.Network, name, least)
		return Target{}, false
	case pf.Overlaps(mc) || pf.Addr().IsUnspecified():
		c.Fail(field, "%q of rule %q: a multicast or unspecified address is no far end to test toward", rt.Network, name)
		return Target{}, false
	}
	if err := checkZone(pf, zone); err != nil {
		c.Fail(field, "%q of rule %q: %v", rt.Network, name, err)
		return Target{}, false
	}
	t := Target{Network: pf, Zone: zone}
	ok := true
	if n.Kind == yaml.MappingNode && rt.Kinds != nil {
		t.Kinds = []string{}
		for i, k := range rt.Kinds {
			if !farend.Known(k) {
				c.Fail(fmt.Sprintf("%s.kinds[%d]", field, i), "unknown kind of far end %q (kinds: %s)", k, strings.Join(farend.Kinds, ", "))
				ok = false
			} else if !slices.Contains(t.Kinds, k) {
				t.Kinds = append(t.Kinds, k)
			}
		}
	}
	if n.Kind == yaml.MappingNode && rt.Ports != nil {
		ports, err := parsePorts(rt.Ports)
		switch {
		case err != nil:
			c.Fail(field+".ports", "%v", err)
			ok = false
		case t.Kinds != nil && !slices.Contains(t.Kinds, farend.STAMP) && !slices.Contains(t.Kinds, farend.Iperf3):
			c.Fail(field+".ports", "ping has no port: give ports with kinds stamp or iperf3")
			ok = false
		}
		t.Ports = ports
	}
	return t, ok
}
