package eventdb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// run runs an event-store step: its servers, then its clients' jobs at
// once, each client's against its server (serverOf); the servers are
// stopped once the jobs have ended. The step's figures are those of all
// its servers together.
func run(ctx context.Context, env kind.Env, e *Spec) (*kind.Outcome, error) {
	srvs, err := startServers(ctx, env, e)
	if err != nil {
		return nil, err
	}
	env.Expect(e.Jobs * len(e.Clients))
	c := kind.NewCollector(env)
	errs := make([]error, len(e.Clients))
	var wg sync.WaitGroup
	for i, host := range e.Clients {
		wg.Go(func() {
			k := i % len(srvs)
			subject := e.subject(e.serverOf(i))
			add := func(r job.Record) {
				r.Subject = subject
				c.Add(r)
			}
			cs := e.client(i, srvs[k].Address(), env.Seed(), env.Token())
			r, err := env.Start(ctx, host, fmt.Sprintf("%s-client%d", env.ID(), i), RoleClient, cs, false)
			if err == nil {
				err = r.Summary(add, &struct{}{})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var totals ServerTotals
	for _, srv := range srvs {
		var t ServerTotals
		stopErr := srv.Stop(ctx)
		if stopErr == nil {
			stopErr = srv.Summary(c.Add, &t)
		}
		srv.Drain()
		totals.add(t)
		errs = append(errs, stopErr)
	}
	jobs := c.Jobs()
	o := &kind.Outcome{Jobs: jobs, Metrics: kind.JobMetrics(jobs)}
	o.Metrics[results.Jobs] = float64(e.Jobs * len(e.Clients))
	o.Metrics[results.JobsPerClient] = float64(e.Jobs)
	if span := kind.JobSpan(jobs); span > 0 {
		// The seeds' server throughput: user data sent over the step, by
		// all its servers.
		o.Metrics[results.ThroughputMbps] = float64(totals.Bytes) * 8 / span / 1e6
	}
	o.Metrics[results.ServerPages] = float64(totals.Pages)
	return o, errors.Join(errs...)
}

// startServers starts the step's servers, in the order of servers, and
// returns them once each listens; when one cannot start, those started are
// stopped and its error returned.
func startServers(ctx context.Context, env kind.Env, e *Spec) ([]kind.Started, error) {
	hosts := e.servers()
	var srvs []kind.Started
	for k, host := range hosts {
		id := env.ID() + "-server"
		if len(hosts) > 1 {
			id = fmt.Sprintf("%s-server%d", env.ID(), k)
		}
		srv, err := env.Start(ctx, host, id, RoleServer, e.server(k, env.Token()), true)
		if err != nil {
			for _, s := range srvs {
				err = errors.Join(err, s.Stop(ctx))
				s.Drain()
			}
			return nil, err
		}
		srvs = append(srvs, srv)
	}
	return srvs, nil
}

// add adds what another server did to t.
func (t *ServerTotals) add(o ServerTotals) {
	t.Sessions += o.Sessions
	t.Pages += o.Pages
	t.Bytes += o.Bytes
	t.Errors += o.Errors
}
