package policy

import "net/netip"

// unmapPrefix is a network written as IPv4-mapped IPv6 (::ffff:10.0.0.0/104)
// as the IPv4 network it is (10.0.0.0/8): an address is unmapped before a
// rule is asked about it, so both spellings name the same peers.
func unmapPrefix(pf netip.Prefix) netip.Prefix {
	if a := pf.Addr(); a.Is4In6() && pf.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), pf.Bits()-96)
	}
	return pf
}
