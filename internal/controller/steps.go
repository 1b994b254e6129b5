package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/workload/token"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// outcome is what one step measured: named figures, jobs and samples of
// its own (the sampler adds the test-bed's).
type outcome struct {
	metrics results.Metrics
	jobs    []job.Record
	samples []archive.Sample
	events  []string // warnings worth keeping
	notes   []string // what else happened (captures written)
}

// stepEnv is what a step runs with.
type stepEnv struct {
	hosts map[string]measure.Endpoint
	topo  *topology.Topology
	bed   backend.Bed
	seed  uint64
	id    string // unique among the run's steps, for role ids
	// token opens the connections of the step's application roles.
	token token.Token
	// jobs counts jobs for the progress bar: expected, finished, failed.
	expected, finished, failed *counter
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add(n int) {
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// execStep runs one step of a workload of kind k, through the registry.
func execStep(ctx context.Context, env *stepEnv, k results.Kind, s scenario.Step) (*outcome, error) {
	ctx = measure.AsTest(ctx) // the step's calls are one test to the agents
	if s.Spec == nil {
		return nil, errors.New("a step with no workload")
	}
	if kd, ok := kinds.Lookup(k); ok {
		o, err := kd.Run(ctx, env, s.Spec)
		if o == nil {
			return nil, err
		}
		return &outcome{metrics: o.Metrics, jobs: o.Jobs, samples: o.Samples, events: o.Events, notes: o.Notes}, err
	}
	return nil, fmt.Errorf("no driver for workload kind %q", k)
}
