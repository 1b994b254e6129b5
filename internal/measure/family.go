package measure

import (
	"net"
	"net/netip"
)

// The address families a test's traffic may use, as results name them
// (the words of a scenario's and an inventory's family:).
const (
	IPv4 = "ipv4"
	IPv6 = "ipv6"
)

// FamilyOf is the address family of addr, host:port or a bare address:
// IPv4 (an IPv4 address written ::ffff:a.b.c.d too), IPv6, or "" for a
// name or anything else.
func FamilyOf(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	switch {
	case err != nil:
		return ""
	case a.Unmap().Is4():
		return IPv4
	default:
		return IPv6
	}
}
