package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/scenario"
)

// Family is the address family the workloads of a scenario's emulated
// test-bed test over: asked (wanlab run's -4 or -6: measure.IPv4 or
// measure.IPv6; "" for none) where its hosts have it, else the
// scenario's preference: IPv6 where its hosts have IPv6 alone (family:
// ipv6), IPv4 otherwise (a dual-stack test-bed tests over IPv4 unless
// asked for IPv6). A family the hosts lack is backend.ErrFamily, naming
// the scenario's family.
func Family(source string, tb *scenario.Testbed, asked string) (string, error) {
	switch {
	case asked == measure.IPv4 && !tb.HasIPv4():
		return "", backend.FamilyErrorf("scenario %s has family: %s: its hosts have no IPv4 address (leave -4 out, or make it family: dual with a subnet:)", source, tb.Family)
	case asked == measure.IPv6 && !tb.HasIPv6():
		return "", backend.FamilyErrorf("scenario %s has family: %s: its hosts have no IPv6 address (give it subnet6:, or leave -6 out)", source, tb.Family)
	case asked != "":
		return asked, nil
	case !tb.HasIPv4():
		return measure.IPv6, nil
	}
	return measure.IPv4, nil
}

// testFamily is the family the endpoints' tests are over: that of their
// test addresses, "" where they have none or differ.
func testFamily(eps map[string]measure.Endpoint) string {
	seen := map[string]bool{}
	for _, ep := range eps {
		seen[measure.FamilyOf(ep.Addr)] = true
	}
	if len(seen) != 1 {
		return ""
	}
	return slices.Collect(maps.Keys(seen))[0]
}

// familyNote says, for the run's events, which family its workloads test
// over and on which addresses.
func familyNote(family string, eps map[string]measure.Endpoint) string {
	var addrs []string
	for _, name := range slices.Sorted(maps.Keys(eps)) {
		addrs = append(addrs, name+" "+eps[name].Addr)
	}
	word := "IPv4"
	switch family {
	case measure.IPv6:
		word = "IPv6"
	case "":
		word = "mixed address families"
	}
	return fmt.Sprintf("the workloads test over %s (test addresses: %s)", word, strings.Join(addrs, ", "))
}
