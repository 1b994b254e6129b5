package eventdb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// run runs an event-store step: the server, then its clients' jobs at
// once, each a job; the server is stopped once they have ended.
func run(ctx context.Context, env kind.Env, e *Spec) (*kind.Outcome, error) {
	srv, err := env.Start(ctx, e.Server, env.ID()+"-server", RoleServer, e.server(env.Token()), true)
	if err != nil {
		return nil, err
	}
	defer srv.Drain()
	env.Expect(e.Jobs * len(e.Clients))
	c := kind.NewCollector(env)
	errs := make([]error, len(e.Clients))
	var wg sync.WaitGroup
	for i, host := range e.Clients {
		wg.Go(func() {
			cs := e.client(i, srv.Address(), env.Seed(), env.Token())
			r, err := env.Start(ctx, host, fmt.Sprintf("%s-client%d", env.ID(), i), RoleClient, cs, false)
			if err == nil {
				err = r.Summary(c.Add, &struct{}{})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var totals ServerTotals
	stopErr := srv.Stop(ctx)
	if stopErr == nil {
		stopErr = srv.Summary(c.Add, &totals)
	}
	jobs := c.Jobs()
	o := &kind.Outcome{Jobs: jobs, Metrics: kind.JobMetrics(jobs)}
	o.Metrics[results.Jobs] = float64(e.Jobs * len(e.Clients))
	o.Metrics[results.JobsPerClient] = float64(e.Jobs)
	if span := kind.JobSpan(jobs); span > 0 {
		// The seeds' server throughput: user data sent over the step.
		o.Metrics[results.ThroughputMbps] = float64(totals.Bytes) * 8 / span / 1e6
	}
	o.Metrics[results.ServerPages] = float64(totals.Pages)
	return o, errors.Join(append(errs, stopErr)...)
}
