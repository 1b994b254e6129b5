package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
)

// runEventDB runs the event server and its clients' jobs at once.
func runEventDB(ctx context.Context, env *stepEnv, e *scenario.EventDB) (*outcome, error) {
	srv, err := measure.StartRole(ctx, env.hosts[e.Server], env.id+"-server", agent.RoleEventServer,
		eventdb.ServerSpec{Store: e.Store, Model: e.ServerModel, Threads: e.Threads, CPUPerPage: e.ServerCPUPerPage,
			Sessions: e.Jobs * len(e.Clients), Token: env.token}, true)
	if err != nil {
		return nil, err
	}
	defer srv.Drain()
	env.expected.add(e.Jobs * len(e.Clients))
	c := &collect{env: env}
	errs := make([]error, len(e.Clients))
	var wg sync.WaitGroup
	for i, host := range e.Clients {
		wg.Go(func() {
			spec := eventdb.ClientSpec{Store: e.Store, Address: srv.Address(), Jobs: e.Jobs, EventsPerJob: e.EventsPerJob,
				FirstJob: i * e.Jobs, CPUPerEvent: e.ClientCPUPerEvent, Timeout: e.Timeout, Seed: env.seed, Token: env.token}
			r, err := measure.StartRole(ctx, env.hosts[host], fmt.Sprintf("%s-client%d", env.id, i), agent.RoleEventClient, spec, false)
			if err == nil {
				err = r.Summary(c.add, &struct{}{})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var totals eventdb.ServerTotals
	stopErr := srv.Stop(ctx)
	if stopErr == nil {
		stopErr = srv.Summary(c.add, &totals)
	}
	o := &outcome{jobs: c.jobs, metrics: kind.JobMetrics(c.jobs)}
	o.metrics[results.Jobs] = float64(e.Jobs * len(e.Clients))
	o.metrics[results.JobsPerClient] = float64(e.Jobs)
	if span := jobSpan(c.jobs); span > 0 {
		// The seeds' server throughput: user data sent over the step.
		o.metrics[results.ThroughputMbps] = float64(totals.Bytes) * 8 / span / 1e6
	}
	o.metrics[results.ServerPages] = float64(totals.Pages)
	return o, errors.Join(append(errs, stopErr)...)
}

// runTaskFarm runs the master and its workers, spread over the worker hosts.
func runTaskFarm(ctx context.Context, env *stepEnv, t *scenario.TaskFarm) (*outcome, error) {
	env.expected.add(t.Tasks)
	master, err := measure.StartRole(ctx, env.hosts[t.Master], env.id+"-master", agent.RoleFarmMaster, taskfarm.MasterSpec{
		Tasks: t.Tasks, Duration: t.Duration, Work: t.Work, ResultSize: t.ResultSize, Prefetch: t.Prefetch, Workers: t.Count,
		ConnectTimeout: 30 * time.Second, Token: env.token}, true)
	if err != nil {
		return nil, err
	}
	defer master.Drain()
	workers := startWorkers(ctx, env, t, master.Address())
	c := &collect{env: env}
	var res taskfarm.Result
	var errs []error
	if err := master.Summary(c.add, &res); err != nil {
		errs = append(errs, err)
	}
	idle, busy, werrs := workers()
	errs = append(errs, werrs...)
	if res.Error != "" {
		errs = append([]error{fmt.Errorf("master on %s: %s", t.Master, res.Error)}, errs...)
	}
	return farmOutcome(t, res, c.jobs, idle, busy), errors.Join(errs...)
}

// startWorkers starts the farm's workers, shared out over its worker hosts,
// and returns what waits for them: their idle and busy seconds, and errors.
func startWorkers(ctx context.Context, env *stepEnv, t *scenario.TaskFarm, master string) func() (idle, busy float64, errs []error) {
	var mu sync.Mutex
	var idle, busy float64
	var errs []error
	var wg sync.WaitGroup
	for i, host := range t.Workers {
		n := t.Count / len(t.Workers)
		if i < t.Count%len(t.Workers) {
			n++
		}
		if n == 0 {
			continue
		}
		wg.Go(func() {
			var res taskfarm.WorkerResult
			r, err := measure.StartRole(ctx, env.hosts[host], fmt.Sprintf("%s-workers%d", env.id, i), agent.RoleFarmWorkers,
				taskfarm.WorkerSpec{Address: master, Workers: n, Token: env.token}, false)
			if err == nil {
				err = r.Summary(func(job.Record) {}, &res)
			}
			mu.Lock()
			defer mu.Unlock()
			idle += res.Idle
			busy += res.Busy
			if err == nil && res.Error != "" {
				err = fmt.Errorf("workers on %s: %s", host, res.Error)
			}
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	return func() (float64, float64, []error) {
		wg.Wait()
		return idle, busy, errs
	}
}

// farmOutcome is a task farm's figures from the master's result and its
// tasks' round trips.
func farmOutcome(t *scenario.TaskFarm, res taskfarm.Result, jobs []job.Record, idle, busy float64) *outcome {
	o := &outcome{jobs: jobs, metrics: results.Metrics{
		results.Tasks: float64(t.Tasks), results.TasksDone: float64(res.Completed), results.Workers: float64(t.Count),
		results.Seconds: res.Seconds, results.TaskRateHz: res.TaskRate, results.MessageRateHz: res.MessageRate,
		results.ResultBytes: float64(res.ResultBytes),
		// What the farm would take with no network at all.
		results.IdealSeconds: math.Ceil(float64(t.Tasks)/float64(t.Count)) * t.Duration.Seconds(),
	}}
	if res.Seconds > 0 && o.metrics[results.IdealSeconds] > 0 {
		o.metrics[results.Efficiency] = o.metrics[results.IdealSeconds] / res.Seconds
	}
	if idle+busy > 0 {
		o.metrics[results.WorkerIdleShare] = idle / (idle + busy)
	}
	var rtt []time.Duration
	for _, j := range jobs {
		rtt = append(rtt, j.Wallclock())
	}
	st := measure.NewStats(rtt)
	o.metrics[results.RoundtripP50Ms], o.metrics[results.RoundtripP99Ms], o.metrics[results.RoundtripMeanMs] = st.P50, st.P99, st.Avg
	return o
}
