package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// Family: a dual-stack test-bed tests over IPv4 unless -6 is given, one
// of IPv6 alone over IPv6; a family the hosts lack is backend.ErrFamily
// naming the scenario's family.
func TestFamily(t *testing.T) {
	for _, tc := range []struct {
		family, asked, want string
		err                 string
	}{
		{scenario.FamilyIPv4, "", measure.IPv4, ""},
		{scenario.FamilyIPv4, measure.IPv4, measure.IPv4, ""},
		{scenario.FamilyIPv4, measure.IPv6, "", "family: ipv4: its hosts have no IPv6 address"},
		{scenario.FamilyDual, "", measure.IPv4, ""},
		{scenario.FamilyDual, measure.IPv4, measure.IPv4, ""},
		{scenario.FamilyDual, measure.IPv6, measure.IPv6, ""},
		{scenario.FamilyIPv6, "", measure.IPv6, ""},
		{scenario.FamilyIPv6, measure.IPv6, measure.IPv6, ""},
		{scenario.FamilyIPv6, measure.IPv4, "", "scenario s.yaml has family: ipv6: its hosts have no IPv4 address"},
	} {
		got, err := Family("s.yaml", &scenario.Testbed{Family: tc.family}, tc.asked)
		if tc.err != "" {
			if !errors.Is(err, backend.ErrFamily) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("family %s, asked %q: %v, want backend.ErrFamily with %q", tc.family, tc.asked, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("family %s, asked %q: %q, %v; want %q", tc.family, tc.asked, got, err, tc.want)
		}
	}
}

// The run's family is its endpoints' one, and a step's hosts are at
// their endpoints' addresses (of that family), not at the topology's
// first one.
func TestTestFamily(t *testing.T) {
	v6 := map[string]measure.Endpoint{"a": {Addr: "2001:db8::1"}, "b": {Addr: "2001:db8::2"}}
	for _, tc := range []struct {
		eps  map[string]measure.Endpoint
		want string
	}{
		{map[string]measure.Endpoint{"a": {Addr: "10.0.0.1"}, "b": {Addr: "10.0.0.2"}}, measure.IPv4},
		{v6, measure.IPv6},
		{map[string]measure.Endpoint{"a": {Addr: "10.0.0.1"}, "b": {Addr: "2001:db8::2"}}, ""},
		{nil, ""},
	} {
		if got := testFamily(tc.eps); got != tc.want {
			t.Errorf("testFamily(%v) = %q, want %q", tc.eps, got, tc.want)
		}
	}
	if note := familyNote(measure.IPv6, v6); note != "the workloads test over IPv6 (test addresses: a 2001:db8::1, b 2001:db8::2)" {
		t.Errorf("familyNote: %q", note)
	}
	topo := &topology.Topology{Hosts: []topology.Host{{Name: "a", Addr: "10.0.0.1", Addr6: "2001:db8::1"}, {Name: "c", Addr: "10.0.0.3"}}}
	env := &stepEnv{topo: topo, hosts: v6}
	for host, want := range map[string]string{"a": "2001:db8::1", "c": "10.0.0.3", "nowhere": ""} {
		if got := env.Addr(host); got != want {
			t.Errorf("Addr(%s) = %q, want %q", host, got, want)
		}
	}
}
