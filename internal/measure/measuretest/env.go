package measuretest

import (
	"testing"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// Env is a step's env for a measure kind's driver: kindtest's, whose hosts
// are agents served in the test, reached as the controller's env reaches
// them (measure.Agents).
type Env struct {
	*kindtest.Env
	Endpoints map[string]measure.Endpoint
}

var _ measure.Agents = (*Env)(nil)

// NewEnv serves an agent with the default limits for each of hosts, for a
// step of k.
func NewEnv(t testing.TB, k kind.Kind, hosts ...string) *Env {
	t.Helper()
	e := &Env{Env: kindtest.NewEnv(t, k), Endpoints: map[string]measure.Endpoint{}}
	for _, h := range hosts {
		e.Endpoints[h], _ = Agent(t, h, limits.Default)
	}
	return e
}

// Endpoint is a host's agent; false for a host not served.
func (e *Env) Endpoint(host string) (measure.Endpoint, bool) {
	ep, ok := e.Endpoints[host]
	return ep, ok
}
