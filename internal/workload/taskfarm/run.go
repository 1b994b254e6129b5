package taskfarm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/delay"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// connectTimeout bounds the master's wait for its workers to connect.
const connectTimeout = 30 * time.Second

// run runs the master and its workers, spread over the worker hosts: each
// task is a job, from its dispatch to its result's return.
func run(ctx context.Context, env kind.Env, t *Spec) (*kind.Outcome, error) {
	env.Expect(t.Tasks)
	ms := t.masterSpec()
	ms.ConnectTimeout, ms.Token = connectTimeout, env.Token()
	master, err := env.Start(ctx, t.Master, env.ID()+"-master", RoleMaster, ms, true)
	if err != nil {
		return nil, err
	}
	defer master.Drain()
	workers := startWorkers(ctx, env, t, master.Address())
	c := kind.NewCollector(env)
	var res Result
	var errs []error
	if err := master.Summary(c.Add, &res); err != nil {
		errs = append(errs, err)
	}
	idle, busy, werrs := workers()
	errs = append(errs, werrs...)
	if res.Error != "" {
		errs = append([]error{fmt.Errorf("master on %s: %s", t.Master, res.Error)}, errs...)
	}
	return outcome(t, res, c.Jobs(), idle, busy), errors.Join(errs...)
}

// startWorkers starts the farm's workers, shared out over its worker hosts,
// and returns what waits for them: their idle and busy seconds, and errors.
func startWorkers(ctx context.Context, env kind.Env, t *Spec, master string) func() (idle, busy float64, errs []error) {
	var mu sync.Mutex
	var idle, busy float64
	var errs []error
	var wg sync.WaitGroup
	for i, host := range t.Workers {
		n := t.workersOn(i)
		if n == 0 {
			continue
		}
		wg.Go(func() {
			var res WorkerResult
			r, err := env.Start(ctx, host, fmt.Sprintf("%s-workers%d", env.ID(), i), RoleWorkers,
				WorkerSpec{Address: master, Workers: n, Token: env.Token()}, false)
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

// workersOn is how many of the farm's workers run on its i-th worker host:
// an even share, the first hosts taking one more of what is left.
func (s *Spec) workersOn(i int) int {
	n := s.Count / len(s.Workers)
	if i < s.Count%len(s.Workers) {
		n++
	}
	return n
}

// outcome is a task farm's figures from the master's result and its
// tasks' round trips.
func outcome(t *Spec, res Result, jobs []job.Record, idle, busy float64) *kind.Outcome {
	m := results.Metrics{
		results.Tasks: float64(t.Tasks), results.TasksDone: float64(res.Completed), results.Workers: float64(t.Count),
		results.Seconds: res.Seconds, results.TaskRateHz: res.TaskRate, results.MessageRateHz: res.MessageRate,
		results.ResultBytes: float64(res.ResultBytes),
		// What the farm would take with no network at all.
		results.IdealSeconds: math.Ceil(float64(t.Tasks)/float64(t.Count)) * t.Duration.Seconds(),
	}
	if res.Seconds > 0 && m[results.IdealSeconds] > 0 {
		m[results.Efficiency] = m[results.IdealSeconds] / res.Seconds
	}
	if idle+busy > 0 {
		m[results.WorkerIdleShare] = idle / (idle + busy)
	}
	var rtt []time.Duration
	for _, j := range jobs {
		rtt = append(rtt, j.Wallclock())
	}
	st := delay.Summarize(rtt)
	m[results.RoundtripP50Ms], m[results.RoundtripP99Ms], m[results.RoundtripMeanMs] = st.P50, st.P99, st.Avg
	return &kind.Outcome{Metrics: m, Jobs: jobs}
}
