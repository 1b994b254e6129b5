package stamp

import (
	"net/netip"
	"testing"
)

// An IPv6 sender's sessions and rate count against its /64, which one
// host holds whole and may rotate through; IPv4 (and IPv4 mapped into a
// dual-stack socket) against the address.
func TestSourceOf(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2::7", "2001:db8:1:2::"},
		{"2001:db8:1:2:ffff:1:2:3", "2001:db8:1:2::"},
		{"fe80::1%eth0", "fe80::"},
	} {
		if got := sourceOf(netip.MustParseAddr(c.in)); got != netip.MustParseAddr(c.want) {
			t.Errorf("sourceOf(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	a := sessionAddr(netip.MustParseAddrPort("[2001:db8:1:2::7]:1024"))
	b := sessionAddr(netip.MustParseAddrPort("[2001:db8:1:2::8]:2048"))
	if a != b {
		t.Errorf("two addresses of one /64 count apart: %s, %s", a, b)
	}
}
