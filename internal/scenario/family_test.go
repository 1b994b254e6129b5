package scenario

import (
	"net/netip"
	"testing"
)

// TestFamily checks subnet6: and family: (dual by default with subnet6,
// else IPv4 alone) and what is refused, naming the field.
func TestFamily(t *testing.T) {
	tests := []struct {
		name, top     string
		family        string
		subnet6, want string
	}{
		{"ipv4 by default", "", FamilyIPv4, "", ""},
		{"dual with subnet6", "subnet6: 2001:db8:5::/64\n", FamilyDual, "2001:db8:5::/64", ""},
		{"subnet6 masked", "subnet6: fd00:1::7/64\n", FamilyDual, "fd00:1::/64", ""},
		{"ipv6 alone, default prefix", "family: ipv6\n", FamilyIPv6, DefaultSubnet6.String(), ""},
		{"dual, default prefix", "family: dual\n", FamilyDual, DefaultSubnet6.String(), ""},
		{"unknown family", "family: ipx\n", "", "", `f.yaml:1: family: "ipx": say dual, ipv4 or ipv6`},
		{"ipv4 with subnet6", "family: ipv4\nsubnet6: fd00:1::/64\n", "", "", `f.yaml:2: subnet6: "fd00:1::/64" is given but family is ipv4: drop one`},
		{"ipv6 with subnet", "family: ipv6\nsubnet: 10.9.0.0/16\n", "", "", `f.yaml:2: subnet: "10.9.0.0/16" is given but family is ipv6: drop one`},
		{"not a prefix", "subnet6: fd00::1\n", "", "", `f.yaml:1: subnet6: "fd00::1" is not an IPv6 prefix such as fd00:1::/64`},
		{"an IPv4 prefix", "subnet6: 10.0.0.0/8\n", "", "", `f.yaml:1: subnet6: "10.0.0.0/8" is not an IPv6 prefix: IPv4 goes in subnet`},
		{"too small", "subnet6: fd00::/126\n", "", "", `f.yaml:1: subnet6: "fd00::/126" is too small: use /120 or larger`},
		{"over the routers'", "subnet6: fd77:616e:6c61::/48\n", "", "", `f.yaml:1: subnet6: "fd77:616e:6c61::/48" overlaps fd77:616e:6c61:ff::/64, where routers' IPv6 addresses are chosen`},
		{"link-local", "subnet6: fe80::/64\n", "", "", `f.yaml:1: subnet6: "fe80::/64" is a multicast, link-local or loopback prefix: use a unique local (fd00::/8) or global one`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("f.yaml", []byte(tt.top+"name: f\nhosts: {a: {}, b: {}}\nlinks: [{between: [a, b]}]\n"), false)
			if tt.want != "" {
				if err == nil || err.Error() != tt.want {
					t.Fatalf("got %v\nwant %s", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tb := f.Testbed
			if tb.Family != tt.family {
				t.Errorf("family %q, want %q", tb.Family, tt.family)
			}
			got := ""
			if tb.Subnet6.IsValid() {
				got = tb.Subnet6.String()
			}
			if got != tt.subnet6 {
				t.Errorf("subnet6 %q, want %q", got, tt.subnet6)
			}
			if tb.HasIPv4() != (tt.family != FamilyIPv6) || tb.HasIPv6() != (tt.family != FamilyIPv4) {
				t.Errorf("family %s: IPv4 %v, IPv6 %v", tb.Family, tb.HasIPv4(), tb.HasIPv6())
			}
		})
	}
	if RouterSubnet6.Overlaps(DefaultSubnet6) || !netip.MustParsePrefix("fd00::/8").Contains(DefaultSubnet6.Addr()) {
		t.Errorf("default prefixes %s and %s", DefaultSubnet6, RouterSubnet6)
	}
}

// TestFamilyMTU refuses a direction narrower than IPv6's minimum MTU on
// a test-bed whose hosts have IPv6, and takes it on one of IPv4 alone.
func TestFamilyMTU(t *testing.T) {
	bed := "name: f\nhosts: {a: {}, b: {}}\nlinks: [{between: [a, b], reverse: {mtu: 1000}}]\n"
	if _, err := Parse("f.yaml", []byte(bed), false); err != nil {
		t.Errorf("IPv4 alone: %v", err)
	}
	_, err := Parse("f.yaml", []byte("subnet6: fd00:1::/64\n"+bed), false)
	want := "f.yaml:1: family: b->a has an MTU of 1000, below IPv6's minimum of 1280: give the hosts IPv4 alone, or the direction mtu: 1280 or more"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
