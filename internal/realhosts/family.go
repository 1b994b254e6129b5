package realhosts

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// The address families of real hosts: an inventory gives a host a test
// address of either family (address:, IPv6 written bare), or both
// (address: and address6:), and says which its tests use by default
// (family:, the inventory's or the host's); a measure verb's -4 or -6
// says it for one test (WithFamily).

// checkFamily reads a family: field ("" when absent).
func checkFamily(c *yamlfile.Checker, field, f string) string {
	switch f {
	case "", scenario.FamilyDual, scenario.FamilyIPv4, scenario.FamilyIPv6:
		return f
	}
	c.Fail(field, "%q: say dual, ipv4 or ipv6", f)
	return ""
}

// checkAgent checks an agent's control address, host:port; an IPv6
// address goes in brackets, as [2001:db8::1]:7400.
func checkAgent(a string) error {
	if _, _, err := net.SplitHostPort(a); err != nil {
		if ip, perr := netip.ParseAddr(strings.Trim(a, "[]")); perr == nil && ip.Is6() {
			return fmt.Errorf("%q: write an IPv6 agent's address and port as [ADDR]:PORT, as [2001:db8::1]:7400", a)
		}
	}
	return scenario.CheckAgent(a)
}

// parseTestAddr reads a test address: an IP address, IPv6 bare or in
// brackets; an IPv4 address written ::ffff:a.b.c.d is IPv4.
func parseTestAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		return netip.Addr{}, err
	}
	return a.Unmap(), nil
}

// hostAddresses reads a host's test addresses and family (inherited is
// the inventory's).
func hostAddresses(c *yamlfile.Checker, f, name string, raw rawHost, inherited string) Host {
	h := Host{Name: name, Agent: raw.Agent, Family: inherited}
	var v4, v6 netip.Addr
	if raw.Address != "" {
		a, err := parseTestAddr(raw.Address)
		switch {
		case err != nil:
			c.Fail(f+".address", "%q: give the host's test address as an IP address", raw.Address)
		case a.Is4():
			v4 = a
		case raw.Address6 != "":
			c.Fail(f+".address", "%q is IPv6, and address6 gives the IPv6 address: give the IPv4 one here, or drop address6", raw.Address)
		default:
			v6 = a
		}
	}
	if raw.Address6 != "" {
		a, err := parseTestAddr(raw.Address6)
		switch {
		case err != nil || !a.Is6():
			c.Fail(f+".address6", "%q: give the host's IPv6 test address, as 2001:db8::1 (IPv4 goes in address)", raw.Address6)
		default:
			v6 = a
		}
	}
	if v6.IsValid() {
		h.Address6 = v6.String()
	}
	h.Address = h.Address6
	if v4.IsValid() {
		h.Address = v4.String()
	}
	if raw.Family != "" {
		h.Family = checkFamily(c, f+".family", raw.Family)
	}
	if raw.Address == "" && raw.Address6 == "" {
		return h // the agent says its test address: checked once dialled
	}
	switch {
	case h.Family == scenario.FamilyIPv4 && !v4.IsValid():
		c.Fail(f+".family", "family ipv4, but the host's test address is IPv6 alone (%s): give its IPv4 one in address", v6)
	case h.Family == scenario.FamilyIPv6 && !v6.IsValid():
		c.Fail(f+".family", "family ipv6, but the host's test address is IPv4 alone (%s): give its IPv6 one in address6", v4)
	case h.Family == scenario.FamilyDual && (!v4.IsValid() || !v6.IsValid()) && raw.Family != "":
		c.Fail(f+".family", "family dual needs both test addresses: address (IPv4) and address6")
	}
	return h
}

// familyWord is how a family is written in messages.
func familyWord(f string) string {
	if f == scenario.FamilyIPv6 {
		return "IPv6"
	}
	return "IPv4"
}

// WithFamily is the inventory with every host's tests over family
// (scenario.FamilyIPv4 or FamilyIPv6; "" leaves it as it is): a measure
// verb's -4 or -6. A host of names (every host, if none) whose
// addresses the inventory gives and lack that family is an error
// (backend.ErrFamily) naming it; a host whose agent says its address is
// checked when it is dialled.
func (inv *Inventory) WithFamily(family string, names ...string) (*Inventory, error) {
	if family == "" {
		return inv, nil
	}
	out := *inv
	out.Family = family
	out.Hosts = make([]Host, len(inv.Hosts))
	var wrong []string
	for i, h := range inv.Hosts {
		h.Family = family
		out.Hosts[i] = h
		if len(names) > 0 && !containsName(names, h.Name) || h.Address == "" {
			continue
		}
		if _, ok := h.addressOf(family); !ok {
			wrong = append(wrong, fmt.Sprintf("%s (%s)", h.Name, h.Address))
		}
	}
	if len(wrong) > 0 {
		return nil, backend.FamilyErrorf("the inventory %s gives host %s no %s test address", inv.Source, strings.Join(wrong, ", "), familyWord(family))
	}
	return &out, nil
}

func containsName(names []string, n string) bool {
	for _, m := range names {
		if m == n {
			return true
		}
	}
	return false
}

// addressOf is the host's test address of a family, as the inventory
// gives it.
func (h Host) addressOf(family string) (string, bool) {
	if family == scenario.FamilyIPv6 {
		return h.Address6, h.Address6 != ""
	}
	if a, err := netip.ParseAddr(h.Address); err == nil && a.Is4() {
		return h.Address, true
	}
	return "", false
}

// testAddresses are where a host's peers reach its test listeners, IPv4
// and IPv6: the inventory's word, else the agent's (its Hello's test
// address, and a dual-stack agent's IPv6 one, agentSays6), else its
// control address's (a name is resolved). The first is the one its tests
// use by default (its family), the second its IPv6 one if known. A family
// the host asks for that it lacks is backend.ErrFamily.
func testAddresses(ctx context.Context, h Host, agentSays, agentSays6 string) (addr, addr6 string, err error) {
	var v4, v6 netip.Addr
	if h.Address != "" {
		v4, _ = netip.ParseAddr(h.Address)
		if !v4.Is4() {
			v4 = netip.Addr{}
		}
		v6, _ = netip.ParseAddr(h.Address6)
	} else if v4, v6, err = agentAddresses(ctx, h, agentSays, agentSays6); err != nil {
		return "", "", err
	}
	if v6.IsValid() {
		addr6 = v6.String()
	}
	switch {
	case h.Family == scenario.FamilyIPv6 && v6.IsValid(), !v4.IsValid():
		addr = addr6
	case h.Family == scenario.FamilyIPv6:
		return "", "", backend.FamilyErrorf("host %s: its tests are to be over IPv6, but its test address is %s (give address6: in the inventory)", h.Name, v4)
	default:
		addr = v4.String()
	}
	if h.Family == scenario.FamilyIPv4 && !v4.IsValid() {
		return "", "", backend.FamilyErrorf("host %s: its tests are to be over IPv4, but its test address is %s (give address: in the inventory)", h.Name, v6)
	}
	return addr, addr6, nil
}

// agentAddresses are a host's test addresses as its agent names them: its
// one, or a dual-stack agent's two; where it listens on every address,
// the control address's stand for those it does not name.
func agentAddresses(ctx context.Context, h Host, says, says6 string) (v4, v6 netip.Addr, err error) {
	a, aerr := parseTestAddr(says)
	everyAddress := aerr != nil || a.IsUnspecified()
	if !everyAddress {
		v4, v6 = pickFamily(a)
	}
	if a6, err := parseTestAddr(says6); err == nil && a6.Is6() && !a6.IsUnspecified() {
		v6 = a6
	}
	if !everyAddress {
		return v4, v6, nil
	}
	c4, c6, err := controlAddresses(ctx, h)
	if err != nil && !v6.IsValid() {
		return v4, v6, err
	}
	if !v6.IsValid() {
		v6 = c6
	}
	return c4, v6, nil
}

// pickFamily puts an address in its family's place.
func pickFamily(a netip.Addr) (v4, v6 netip.Addr) {
	if a.Is4() {
		return a, netip.Addr{}
	}
	return netip.Addr{}, a
}

// controlAddresses are the addresses of a host's control address: itself,
// or a name's first of each family.
func controlAddresses(ctx context.Context, h Host) (v4, v6 netip.Addr, err error) {
	name, _, _ := net.SplitHostPort(h.Agent)
	if a, err := parseTestAddr(name); err == nil {
		v4, v6 = pickFamily(a)
		return v4, v6, nil
	}
	network := "ip"
	switch h.Family {
	case scenario.FamilyIPv4:
		network = "ip4"
	case scenario.FamilyIPv6:
		network = "ip6"
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, network, name)
	if err != nil || len(addrs) == 0 {
		return v4, v6, fmt.Errorf("host %s: no address for %s (give address: in the inventory): %v", h.Name, name, err)
	}
	for _, a := range addrs {
		a = a.Unmap()
		if a.Is4() && !v4.IsValid() {
			v4 = a
		} else if a.Is6() && !v6.IsValid() {
			v6 = a
		}
	}
	return v4, v6, nil
}
