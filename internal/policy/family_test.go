package policy

import (
	"net/netip"
	"testing"

	"github.com/wanlab/wanlab/internal/limits"
)

// Peers of either family: an IPv6 peer inside the rule's networks is
// reached, one outside is not, and an IPv4 address or network means the
// same written plainly or IPv4-mapped (::ffff:a.b.c.d), on either side.
func TestPeersBothFamilies(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`rules:
  - {name: v6, identities: [cn:six], peers: ["2001:db8:1::/48", "2001:db8:2::9"]}
  - {name: v4, identities: [cn:four], peers: [10.1.0.0/16]}
  - {name: mapped, identities: [cn:mapped], peers: ["::ffff:10.2.0.0/112", "::ffff:10.3.0.1"]}
  - {name: any, identities: [cn:any]}
`), limits.Default)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		who, addr string
		reached   bool
	}{
		{"cn:six", "2001:db8:1::5", true},
		{"cn:six", "2001:db8:1:ffff::1", true},
		{"cn:six", "2001:db8:2::9", true},
		{"cn:six", "2001:db8:2::8", false},
		{"cn:six", "2001:db9::1", false},
		{"cn:six", "10.1.0.1", false},
		{"cn:four", "10.1.2.3", true},
		{"cn:four", "::ffff:10.1.2.3", true},
		{"cn:four", "10.2.0.1", false},
		{"cn:four", "2001:db8:1::5", false},
		{"cn:four", "::a01:203", false}, // IPv4-compatible, not mapped: an IPv6 address
		{"cn:mapped", "10.2.0.77", true},
		{"cn:mapped", "::ffff:10.2.0.77", true},
		{"cn:mapped", "10.4.0.1", false},
		{"cn:mapped", "10.3.0.1", true},
		{"cn:mapped", "10.3.0.2", false},
		{"cn:any", "2001:db8::1", true},
	}
	for _, tc := range tests {
		r := p.Match([]string{tc.who})
		if r == nil {
			t.Fatalf("no rule for %s", tc.who)
		}
		if got := r.Reaches(netip.MustParseAddr(tc.addr)); got != tc.reached {
			t.Errorf("rule %s reaches %s: %v, want %v", r.Name, tc.addr, got, tc.reached)
		}
	}
	mapped := p.Match([]string{"cn:mapped"})
	if got := mapped.Peers[0].String(); got != "10.2.0.0/16" {
		t.Errorf("a mapped network is kept as %s, want 10.2.0.0/16", got)
	}
}
