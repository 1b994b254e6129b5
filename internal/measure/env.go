package measure

import (
	"errors"
	"fmt"

	"github.com/wanlab/wanlab/internal/workload/kind"
)

// Agents is a step's env (kind.Env) that reaches its hosts' agents, as the
// controller's does: what the driver of a measure kind (throughput,
// transfer, probe, impact) needs beside kind.Env, whose vocabulary knows
// no agent. A fake env of a kind's test implements it over
// measuretest's agents.
type Agents interface {
	// Endpoint is a host's endpoint; false for a host the step's bed
	// lacks.
	Endpoint(host string) (Endpoint, bool)
}

// ErrNoAgents means a step's env does not reach its hosts' agents.
var ErrNoAgents = errors.New("the step's env reaches no agents")

// Endpoints are the endpoints of hosts in env, in their order.
func Endpoints(env kind.Env, hosts ...string) ([]Endpoint, error) {
	a, ok := env.(Agents)
	if !ok {
		return nil, fmt.Errorf("%w (%T)", ErrNoAgents, env)
	}
	eps := make([]Endpoint, len(hosts))
	for i, h := range hosts {
		if eps[i], ok = a.Endpoint(h); !ok {
			return nil, fmt.Errorf("the step's test-bed has %w %q", ErrNoHost, h)
		}
	}
	return eps, nil
}
