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
	"github.com/wanlab/wanlab/internal/workload/kind"
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

// collect gathers the jobs roles report, counting them for the progress bar.
type collect struct {
	env  *stepEnv
	mu   sync.Mutex
	jobs []job.Record
}

func (c *collect) add(r job.Record) {
	c.mu.Lock()
	c.jobs = append(c.jobs, r)
	c.mu.Unlock()
	c.env.Done(r)
}

// execStep runs one step of a workload of kind k: through the registry,
// or the legacy table of the kinds not yet in it.
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
		return &outcome{metrics: o.Metrics, jobs: o.Jobs, events: o.Events, notes: o.Notes}, err
	}
	if run, ok := legacyRuns[k]; ok {
		return run(ctx, env, s.Spec)
	}
	return nil, fmt.Errorf("no driver for workload kind %q", k)
}

// legacyRun runs one step of a kind not yet in the registry.
type legacyRun func(ctx context.Context, env *stepEnv, s kind.Spec) (*outcome, error)

// legacyRuns are the kinds still run here (issue 32): each moves to a
// package of its own, registered in internal/workload/kinds, and leaves
// this table.
var legacyRuns = map[results.Kind]legacyRun{
	results.EventDB:    legacy(runEventDB),
	results.TaskFarm:   legacy(runTaskFarm),
	results.Mesh:       legacy(runMesh),
	results.Throughput: legacy(runThroughput),
	results.Transfer:   legacy(runTransfer),
	results.Probe:      legacy(runProbe),
	results.Impact:     legacy(runImpact),
}

// legacy makes a legacy kind's run of its spec type T.
func legacy[T kind.Spec](run func(context.Context, *stepEnv, T) (*outcome, error)) legacyRun {
	return func(ctx context.Context, env *stepEnv, s kind.Spec) (*outcome, error) {
		t, ok := s.(T)
		if !ok {
			return nil, fmt.Errorf("a step with a %T spec where a %T belongs", s, t)
		}
		return run(ctx, env, t)
	}
}

// jobSpan is the seconds from the first job's start to the last one's end.
func jobSpan(jobs []job.Record) float64 {
	if len(jobs) == 0 {
		return 0
	}
	first, last := jobs[0].Start, jobs[0].End
	for _, j := range jobs {
		if j.Start.Before(first) {
			first = j.Start
		}
		if j.End.After(last) {
			last = j.End
		}
	}
	return last.Sub(first).Seconds()
}

func boolFigure(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
