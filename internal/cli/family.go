package cli

import (
	"context"
	"errors"
	"net/netip"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/endpoints"
	"github.com/wanlab/wanlab/internal/realhosts"
)

// ipArg reads an IP address given on the command line: IPv4, or IPv6
// bare or in brackets (2001:db8::1, [2001:db8::1]); an IPv4 address
// written ::ffff:a.b.c.d is IPv4.
func ipArg(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	return a.Unmap(), err
}

// addrFamily is -4 and -6 of the verbs that test between hosts: the
// address family of the test's traffic where hosts have both.
type addrFamily struct{ v4, v6 bool }

func (f *addrFamily) flags(c *cobra.Command) {
	c.Flags().BoolVarP(&f.v4, "ipv4", "4", false, "test over IPv4 (default: the inventory's or the scenario's family:, else IPv4 where both ends have it)")
	c.Flags().BoolVarP(&f.v6, "ipv6", "6", false, "test over IPv6")
}

// value is the family asked for: measure.IPv4, measure.IPv6, or "" for
// the hosts' default.
func (f addrFamily) value() (string, error) {
	n, err := familyOf(f.v4, f.v6)
	switch n {
	case 4:
		return measure.IPv4, err
	case 6:
		return measure.IPv6, err
	}
	return "", err
}

// flag is the flag that asks for family, as a refusal names it.
func flagOf(family string) string {
	if family == measure.IPv6 {
		return "-6"
	}
	return "-4"
}

// withFamily is the inventory with its hosts' tests over the family
// asked for; an inventory that gives one of names no address of it is a
// usage error naming the host and the flag.
func withFamily(inv *realhosts.Inventory, family string, names ...string) (*realhosts.Inventory, error) {
	out, err := inv.WithFamily(family, names...)
	if errors.Is(err, backend.ErrFamily) {
		return nil, usagef("%s: %w", flagOf(family), err)
	}
	return out, err
}

// dialFamily dials the agents of names with test addresses of family; a
// host without one is a usage error naming it and the flag.
func dialFamily(ctx context.Context, bed backend.Bed, family string, names ...string) (map[string]measure.Endpoint, error) {
	eps, err := endpoints.DialFamily(ctx, bed, family, names...)
	switch {
	case errors.Is(err, measure.ErrNoHost):
		return nil, usageError{err}
	case errors.Is(err, backend.ErrFamily) && family != "":
		return nil, usagef("%s: %w", flagOf(family), err)
	case errors.Is(err, backend.ErrFamily):
		return nil, usageError{err}
	}
	return eps, err
}
