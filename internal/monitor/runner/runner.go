// Package runner runs the monitoring service's tests: a probe or trace
// loop per test and pair, a poll loop per SNMP device and one of the
// hosts' own interfaces, and the scheduler's loop of throughput-class
// tests. The runners measure through package measure; they hand each
// test's result to the service (Service.Observe: its state, baselines and
// alerts) and append the points that need no judging to the store they
// are given (Appender), as a Prometheus scrape pool appends to the
// storage it is given.
package runner

import (
	"context"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// Service is what the runners hand their results to.
type Service interface {
	// Observe takes what one test of a path gave, and the test's record
	// (nil for a probe summary).
	Observe(o core.Observation, test *archive.TestRecord)
	// Logf reports an event.
	Logf(format string, args ...any)
}

// Shares says which pairs this process measures, and leases the hosts of
// throughput-class tests, among the processes that share an archive.
type Shares interface {
	Owns(src, dst string) bool
	// Lock leases a test's two hosts for budget; free false (and when to
	// try again) if another process's test holds one.
	Lock(ctx context.Context, src, dst string, budget time.Duration) (free bool, retry time.Time)
	Unlock(ctx context.Context, src, dst string)
}

// Appender takes points that need no judging (interfaces' rates).
type Appender interface {
	AppendPoints(at time.Time, pts []core.Point)
}

// Options are what runners need besides their configuration.
type Options struct {
	Bed     backend.Bed
	Service Service
	Shares  Shares
	Store   Appender
	// Via are the link directions of a path, either way (none where the
	// topology does not know them).
	Via func(src, dst string) []string
	// Last is when each exclusive test's path last started: the schedule
	// resumes from it.
	Last map[core.PathKey]time.Time
	// Interfaces are the interfaces' latest rates, from the archive.
	Interfaces []core.IfaceState
	// Seed makes the schedule's slips repeatable.
	Seed uint64
}

// Runners are the loops of one configuration's tests.
type Runners struct {
	opts Options
	wake chan struct{}
	snmp snmpPoller

	mu    sync.Mutex
	cfg   *core.Config
	sched *core.Scheduler
	last  map[core.PathKey]time.Time
	// late counts the exclusive tests that started past their slip;
	// running are those running now.
	late    int64
	running int
	// spans are the recent and running throughput-class tests, which
	// disturb probes of the paths they share a host or a link with.
	spans []span
	down  backoff
	// busy counts the runs in a row an iperf3 target was busy for, by
	// (test, src, dst).
	busy     map[[3]string]int
	probes   context.CancelFunc
	probesWG sync.WaitGroup
}

// span is a throughput-class test's time on its path; end is zero while it runs.
type span struct {
	src, dst   string
	start, end time.Time
}

// Timings of the loops.
const (
	// probeStagger bounds how far apart a mesh's probe loops start.
	probeStagger = 10 * time.Second
	// recheck is how soon a pair another process measures is looked at
	// again (as often as the shares are renewed).
	recheck = 5 * time.Second
)

// New prepares the runners of cfg; Run starts them.
func New(cfg *core.Config, opts Options) *Runners {
	r := &Runners{opts: opts, wake: make(chan struct{}, 1), cfg: cfg, last: opts.Last, down: backoff{}, busy: map[[3]string]int{}, probes: func() {},
		snmp: snmpPoller{ifaces: map[[2]string]core.IfaceState{}, errs: map[string]string{}}}
	if r.last == nil {
		r.last = map[core.PathKey]time.Time{}
	}
	for _, st := range opts.Interfaces {
		r.snmp.ifaces[[2]string{st.Device, st.Interface}] = st
	}
	r.sched = core.NewScheduler(cfg, time.Now(), r.last, opts.Seed)
	return r
}

// Run runs the tests until ctx ends, then waits for those running.
func (r *Runners) Run(ctx context.Context) {
	r.mu.Lock()
	r.startProbes(ctx)
	r.mu.Unlock()
	r.exclusive(ctx)
	r.mu.Lock()
	r.probes()
	r.mu.Unlock()
	r.probesWG.Wait()
}

// Reload takes a new configuration: the probe loops start anew, the
// schedule is planned anew, and the tests still running hold their hosts
// in it.
func (r *Runners) Reload(ctx context.Context, cfg *core.Config) {
	r.mu.Lock()
	r.probes()
	r.cfg = cfg
	old := r.sched
	r.sched = core.NewScheduler(cfg, time.Now(), r.last, r.opts.Seed+1)
	r.sched.Carry(old)
	r.startProbes(ctx)
	r.mu.Unlock()
	r.Wake()
}

// Wake has the scheduler's loop look again at once (the shares changed,
// a run was asked for).
func (r *Runners) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Add queues a run of an exclusive test on demand, asked by by (at most
// max such runs queued).
func (r *Runners) Add(t *core.Test, src, dst, by string, max int) error {
	r.mu.Lock()
	err := r.sched.Add(t, src, dst, by, time.Now(), max)
	r.mu.Unlock()
	if err == nil {
		r.Wake()
	}
	return err
}

// Stats are the throughput-class tests that started late, that run now,
// and that are due and wait for their hosts.
func (r *Runners) Stats() (late int64, running, queued int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.late, r.running, r.sched.Waiting(time.Now())
}

// Down are the hosts whose agents do not answer.
func (r *Runners) Down() map[string]core.HostDown {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]core.HostDown{}
	for h, d := range r.down {
		out[h] = *d
	}
	return out
}

// startProbes starts one loop per probe test, pair and run (a run per
// family of a test that names families: core.Config.Keys), one per SNMP
// device, and that of the hosts' interfaces; r.mu is held.
func (r *Runners) startProbes(ctx context.Context) {
	pctx, cancel := context.WithCancel(ctx)
	r.probes = cancel
	for _, t := range r.cfg.Tests {
		if t.Exclusive() {
			continue
		}
		keys := r.cfg.Keys(t)
		for i, k := range keys {
			p, t := [2]string{k.Src, k.Dst}, t
			t.Family = k.Family
			r.probesWG.Add(1)
			// Stagger the loops, so that a mesh's sessions do not start
			// together: over one period, but probes (light) over at most
			// 10 s, so that a new service's grid fills within a minute.
			spread := t.Period()
			if t.Type == core.Probe {
				spread = min(spread, probeStagger)
			}
			delay := time.Duration(i) * spread / time.Duration(len(keys))
			tg, toTarget := r.cfg.Target(p[1])
			go func() {
				defer r.probesWG.Done()
				switch {
				case toTarget:
					r.targetProbeLoop(pctx, t, p[0], tg, delay)
				case t.Type == core.Trace:
					r.traceLoop(pctx, t, p[0], p[1], delay)
				default:
					r.probeLoop(pctx, t, p[0], p[1], delay)
				}
			}()
		}
	}
	if every := r.cfg.HostInterfaces; every > 0 {
		r.probesWG.Add(1)
		go func() {
			defer r.probesWG.Done()
			r.hostPollLoop(pctx, every)
		}()
	}
	for _, t := range r.cfg.SNMP {
		r.probesWG.Add(1)
		go func() {
			defer r.probesWG.Done()
			r.pollLoop(pctx, t)
		}()
	}
}

// hold says whether a job may not start now, and until when: a host is
// down, or another process measures the pair; r.mu is held.
func (r *Runners) hold(j core.Job) (time.Time, bool) {
	if !r.opts.Shares.Owns(j.Src, j.Dst) {
		return time.Now().Add(recheck), true
	}
	return r.down.blocked(time.Now(), j.Src, j.Dst)
}

// Sleep waits d, or until ctx ends: false then.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
