package realhosts

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/scenario"
)

const tlsLine = "tls: {ca: a, cert: b, key: c}\n"

// An inventory of IPv6 alone: agents as [addr]:port, test addresses bare.
func TestParseIPv6Inventory(t *testing.T) {
	inv, err := Parse("v6.yaml", []byte(tlsLine+`family: ipv6
hosts:
  cnaf: {agent: "[2001:db8:1::1]:7400"}
  cern: {agent: "[2001:db8:2::1]:7400", address: 2001:db8:2::9}
  t2:   {agent: "[2001:db8:3::1]:7400", address: "[2001:db8:3::9]"}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{
		{Name: "cnaf", Agent: "[2001:db8:1::1]:7400", Family: scenario.FamilyIPv6},
		{Name: "cern", Agent: "[2001:db8:2::1]:7400", Address: "2001:db8:2::9", Address6: "2001:db8:2::9", Family: scenario.FamilyIPv6},
		{Name: "t2", Agent: "[2001:db8:3::1]:7400", Address: "2001:db8:3::9", Address6: "2001:db8:3::9", Family: scenario.FamilyIPv6},
	}
	if inv.Family != scenario.FamilyIPv6 || len(inv.Hosts) != len(want) {
		t.Fatalf("inventory %+v", inv)
	}
	for i, h := range inv.Hosts {
		if h != want[i] {
			t.Errorf("host %d: %+v, want %+v", i, h, want[i])
		}
	}
}

// A host of both families, with its own preference beside the
// inventory's.
func TestParseDualInventory(t *testing.T) {
	inv, err := Parse("dual.yaml", []byte(tlsLine+`family: dual
hosts:
  cnaf: {agent: 10.1.0.1:7400, address: 10.1.0.1, address6: "2001:db8:1::1"}
  cern: {agent: "dtn01.example.org:7400", address: "::ffff:10.2.0.9", address6: 2001:db8:2::9, family: ipv6}
`))
	if err != nil {
		t.Fatal(err)
	}
	cnaf, cern := inv.Hosts[0], inv.Hosts[1]
	if cnaf.Address != "10.1.0.1" || cnaf.Address6 != "2001:db8:1::1" || cnaf.Family != scenario.FamilyDual {
		t.Errorf("cnaf %+v", cnaf)
	}
	// An IPv4 address written as IPv4-mapped IPv6 is IPv4.
	if cern.Address != "10.2.0.9" || cern.Address6 != "2001:db8:2::9" || cern.Family != scenario.FamilyIPv6 {
		t.Errorf("cern %+v", cern)
	}
}

func TestInventoryFamilyProblems(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"bare v6 agent", "hosts:\n  a: {agent: \"2001:db8::1\"}\n", `hosts.a.agent: "2001:db8::1": write an IPv6 agent's address and port as [ADDR]:PORT`},
		{"v6 agent with port unbracketed", "hosts:\n  a: {agent: \"2001:db8::1:7400\"}\n", `as [2001:db8::1]:7400`},
		{"bracketed, no port", "hosts:\n  a: {agent: \"[2001:db8::1]\"}\n", `as [ADDR]:PORT`},
		{"family", "family: ipv5\nhosts:\n  a: {agent: h:1}\n", `family: "ipv5": say dual, ipv4 or ipv6`},
		{"host family", "hosts:\n  a: {agent: h:1, family: both}\n", `hosts.a.family: "both": say dual, ipv4 or ipv6`},
		{"address6 v4", "hosts:\n  a: {agent: h:1, address6: 10.0.0.1}\n", `hosts.a.address6: "10.0.0.1": give the host's IPv6 test address`},
		{"two v6", "hosts:\n  a: {agent: h:1, address: \"2001:db8::1\", address6: \"2001:db8::2\"}\n", `hosts.a.address: "2001:db8::1" is IPv6, and address6 gives the IPv6 address`},
		{"ipv4 of v6 alone", "family: ipv4\nhosts:\n  a: {agent: h:1, address: \"2001:db8::1\"}\n", `hosts.a.family: family ipv4, but the host's test address is IPv6 alone (2001:db8::1)`},
		{"ipv6 of v4 alone", "hosts:\n  a: {agent: h:1, address: 10.0.0.1, family: ipv6}\n", `family ipv6, but the host's test address is IPv4 alone (10.0.0.1)`},
		{"dual of one", "hosts:\n  a: {agent: h:1, address: 10.0.0.1, family: dual}\n", `family dual needs both test addresses`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("inv.yaml", []byte(tlsLine+tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}

// WithFamily (-4, -6) refuses a host the inventory gives no address of
// that family, naming it; a host whose agent says its address passes, to
// be checked once dialled.
func TestWithFamily(t *testing.T) {
	inv, err := Parse("inv.yaml", []byte(tlsLine+`hosts:
  v6: {agent: "[2001:db8::1]:7400", address: 2001:db8::1}
  v4: {agent: 10.0.0.1:7400, address: 10.0.0.1}
  both: {agent: 10.0.0.2:7400, address: 10.0.0.2, address6: 2001:db8::2}
  asks: {agent: "[2001:db8::3]:7400"}
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		family string
		names  []string
		want   string // "" for no error
	}{
		{scenario.FamilyIPv4, []string{"v6", "both"}, "gives host v6 (2001:db8::1) no IPv4 test address"},
		{scenario.FamilyIPv4, []string{"v4", "both", "asks"}, ""},
		{scenario.FamilyIPv6, []string{"v4"}, "gives host v4 (10.0.0.1) no IPv6 test address"},
		{scenario.FamilyIPv6, nil, "host v4 (10.0.0.1)"},
		{scenario.FamilyIPv6, []string{"v6", "both", "asks"}, ""},
		{"", []string{"v4", "v6"}, ""},
	}
	for _, tc := range tests {
		got, err := inv.WithFamily(tc.family, tc.names...)
		if tc.want == "" {
			if err != nil {
				t.Errorf("WithFamily(%q, %v): %v", tc.family, tc.names, err)
			} else if tc.family != "" && got.Hosts[0].Family != tc.family {
				t.Errorf("WithFamily(%q): host family %q", tc.family, got.Hosts[0].Family)
			}
			continue
		}
		if !errors.Is(err, backend.ErrFamily) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WithFamily(%q, %v) = %v, want backend.ErrFamily with %q", tc.family, tc.names, err, tc.want)
		}
	}
	if inv.Hosts[0].Family != "" {
		t.Error("WithFamily changed the inventory it was called on")
	}
}

// testAddresses: the inventory's addresses first, then the agent's word,
// then the control address; a family the host cannot have is
// backend.ErrFamily.
func TestTestAddresses(t *testing.T) {
	tests := []struct {
		name       string
		h          Host
		agentSays  string
		agentSays6 string
		addr, six  string
		familyFail bool
	}{
		{"inventory v4", Host{Agent: "h:1", Address: "10.0.0.1"}, "10.9.9.9", "", "10.0.0.1", "", false},
		{"inventory dual", Host{Agent: "h:1", Address: "10.0.0.1", Address6: "2001:db8::1"}, "", "", "10.0.0.1", "2001:db8::1", false},
		{"inventory dual, ipv6", Host{Agent: "h:1", Address: "10.0.0.1", Address6: "2001:db8::1", Family: scenario.FamilyIPv6}, "", "", "2001:db8::1", "2001:db8::1", false},
		{"inventory v6", Host{Agent: "h:1", Address: "2001:db8::1", Address6: "2001:db8::1"}, "", "", "2001:db8::1", "2001:db8::1", false},
		{"agent v6", Host{Agent: "h:1"}, "::1", "", "::1", "::1", false},
		{"agent wildcard: control address", Host{Agent: "[::1]:7400"}, "::", "", "::1", "::1", false},
		{"control v6", Host{Agent: "[2001:db8::7]:7400"}, "", "", "2001:db8::7", "2001:db8::7", false},
		{"control mapped", Host{Agent: "[::ffff:10.0.0.7]:7400"}, "", "", "10.0.0.7", "", false},
		{"dual-stack agent", Host{Agent: "h:1"}, "10.0.0.1", "2001:db8::1", "10.0.0.1", "2001:db8::1", false},
		{"dual-stack agent, ipv6", Host{Agent: "h:1", Family: scenario.FamilyIPv6}, "10.0.0.1", "2001:db8::1", "2001:db8::1", "2001:db8::1", false},
		{"agent names IPv6 alone, listens on every address", Host{Agent: "127.0.0.1:7400"}, "", "::1", "127.0.0.1", "::1", false},
		{"agent names IPv6, inventory's IPv4 first", Host{Agent: "h:1", Address: "10.0.0.1"}, "", "2001:db8::1", "10.0.0.1", "", false},
		{"v6 alone, ipv4 asked", Host{Agent: "[::1]:7400", Family: scenario.FamilyIPv4}, "::1", "", "", "", true},
		{"v4 alone, ipv6 asked", Host{Agent: "127.0.0.1:7400", Family: scenario.FamilyIPv6}, "127.0.0.1", "", "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.h.Name = "h"
			addr, six, err := testAddresses(context.Background(), tc.h, tc.agentSays, tc.agentSays6)
			if tc.familyFail {
				if !errors.Is(err, backend.ErrFamily) {
					t.Errorf("got %q %q %v, want backend.ErrFamily", addr, six, err)
				}
				return
			}
			if err != nil || addr != tc.addr || six != tc.six {
				t.Errorf("got %q %q %v, want %q %q", addr, six, err, tc.addr, tc.six)
			}
		})
	}
}
