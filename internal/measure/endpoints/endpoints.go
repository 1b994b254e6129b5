// Package endpoints dials the agents of a test-bed's hosts, on whatever
// backend, as measure's endpoints. It is apart from measure, which
// imports no backend: the backends' test-bed resolves a scenario, whose
// workload kinds' measurements import measure.
package endpoints

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
)

// Dial dials the agents of hosts of a bed and returns an endpoint for
// each, by host name, on the test address the bed gives it; on an error
// none is left open. A host the bed lacks is measure.ErrNoHost.
func Dial(ctx context.Context, bed backend.Bed, hosts ...string) (map[string]measure.Endpoint, error) {
	out := map[string]measure.Endpoint{}
	for _, name := range hosts {
		if _, ok := bed.Topology().Host(name); !ok {
			measure.CloseAll(out)
			var names []string
			for _, h := range bed.Topology().Hosts {
				names = append(names, h.Name)
			}
			return nil, fmt.Errorf("test-bed %q has %w %q (hosts: %s)", bed.Topology().Name, measure.ErrNoHost, name, strings.Join(names, ", "))
		}
		c, err := bed.Dial(ctx, name)
		if err != nil {
			measure.CloseAll(out)
			return nil, err
		}
		// A real host's test address is known once its agent answers.
		h, _ := bed.Topology().Host(name)
		out[name] = measure.Endpoint{Host: name, Addr: h.Addr, Agent: c}
	}
	return out, nil
}

// DialFamily dials as Dial, with every endpoint's test address of one
// address family, so that the hosts' tests with each other use it:
// family measure.IPv4 or measure.IPv6 (a measure verb's -4, -6), or ""
// for the bed's own choice, or where the hosts' choices differ, the
// family they all have (IPv4 first). A host without an address of the
// family (or hosts with none in common) is backend.ErrFamily, naming it.
func DialFamily(ctx context.Context, bed backend.Bed, family string, hosts ...string) (map[string]measure.Endpoint, error) {
	eps, err := Dial(ctx, bed, hosts...)
	if err != nil {
		return nil, err
	}
	addrs := map[string][2]string{} // by host: IPv4, IPv6
	for name := range eps {
		h, _ := bed.Topology().Host(name)
		addrs[name] = addressesOf(h.Addr, h.Addr6)
	}
	if err := choose(eps, addrs, family); err != nil {
		measure.CloseAll(eps)
		return nil, err
	}
	return eps, nil
}

// choose sets the endpoints' addresses to those of family of their
// hosts' addrs, IPv4 and IPv6 (see DialFamily).
func choose(eps map[string]measure.Endpoint, addrs map[string][2]string, family string) error {
	given := map[string]bool{}
	for _, ep := range eps {
		given[measure.FamilyOf(ep.Addr)] = true
	}
	if family == "" {
		if len(given) < 2 {
			return nil
		}
		family = measure.IPv4
		for _, a := range addrs {
			if a[0] == "" {
				family = measure.IPv6
			}
		}
	}
	i, word := 0, "IPv4"
	if family == measure.IPv6 {
		i, word = 1, "IPv6"
	}
	var lack []string
	for name, a := range addrs {
		if a[i] == "" {
			lack = append(lack, fmt.Sprintf("%s (%s)", name, eps[name].Addr))
		}
	}
	if len(lack) > 0 {
		return backend.FamilyErrorf("host %s has no %s test address", strings.Join(sorted(lack), ", "), word)
	}
	for name, ep := range eps {
		ep.Addr = addrs[name][i]
		eps[name] = ep
	}
	return nil
}

// addressesOf is a host's IPv4 and IPv6 test addresses ("" for none), of
// its topology's Addr and Addr6.
func addressesOf(addrs ...string) [2]string {
	var out [2]string
	for _, s := range addrs {
		switch measure.FamilyOf(s) {
		case measure.IPv4:
			out[0] = netip.MustParseAddr(s).Unmap().String()
		case measure.IPv6:
			out[1] = s
		}
	}
	return out
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
