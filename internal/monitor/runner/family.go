package runner

import (
	"context"
	"errors"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/endpoints"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// familyKey is the context key of the address family a loop or job tests
// over.
type familyKey struct{}

// withFamily makes the sessions of ctx test over family ("ipv4", "ipv6";
// "" the hosts' preference): a test run once per family (core.Test.Runs).
func withFamily(ctx context.Context, family string) context.Context {
	if family == "" {
		return ctx
	}
	return context.WithValue(ctx, familyKey{}, family)
}

// dial dials host's agent for a session of ctx, with the test address of
// the family ctx says (withFamily). A host without an address of that
// family is backend.ErrFamily, naming it: a failure of the path, not a
// host down.
func (r *Runners) dial(ctx context.Context, host string) (map[string]measure.Endpoint, error) {
	family, _ := ctx.Value(familyKey{}).(string)
	return endpoints.DialFamily(ctx, r.opts.Bed, family, host)
}

// hostDown says whether a failed dial means the host's agent is down
// (not a family it has no address of).
func hostDown(err error) bool { return !errors.Is(err, backend.ErrFamily) }

// HostFamilies are the address families of each host of a bed, as its
// topology gives its test addresses; not known for a host without any (a
// real host whose address is known once its agent answers).
func HostFamilies(bed backend.Bed) core.HostFamilies {
	return func(host string) ([]string, bool) {
		h, ok := bed.Topology().Host(host)
		if !ok {
			return nil, false
		}
		var out []string
		for _, a := range []string{h.Addr, h.Addr6} {
			if f := measure.FamilyOf(a); f != "" {
				out = append(out, f)
			}
		}
		return out, len(out) > 0
	}
}
