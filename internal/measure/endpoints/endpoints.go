// Package endpoints dials the agents of a test-bed's hosts, on whatever
// backend, as measure's endpoints. It is apart from measure, which
// imports no backend: the backends' test-bed resolves a scenario, whose
// workload kinds' measurements import measure.
package endpoints

import (
	"context"
	"fmt"
	"strings"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
)

// Dial dials the agents of hosts of a bed and returns an endpoint for
// each, by host name; on an error none is left open. A host the bed lacks
// is measure.ErrNoHost.
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
