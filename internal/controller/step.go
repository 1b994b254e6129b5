package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/tcpwatch"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// runner runs the steps of one run on one bed.
type runner struct {
	o     Options
	bed   backend.Bed
	hosts map[string]measure.Endpoint
	run   int64
	steps int
	start time.Time
	// seed is the scenario's; a step's is this plus its place in the run.
	seed uint64
	// recorded is up to when the bed's link changes are in the archive.
	recorded time.Time
}

// step runs one step under the sampler and stores it. Its error is only
// for a failure to store; how the step itself went is in the result.
func (r *runner) step(ctx context.Context, p plannedStep) (StepResult, error) {
	a := r.o.Archive
	sr := p.result()
	stepID, err := a.StartStep(r.run, p.index, p.workload.Name, sr.Label, sr.Params)
	if err != nil {
		return sr, err
	}
	if err := waitForAgents(ctx, r.hosts); err != nil {
		sr.Status, sr.Reason = archive.StatusFailed, err.Error()
		return sr, errors.Join(a.AddEvent(r.run, stepID, archive.Failure, sr.Reason), a.EndStep(stepID, sr.Status, sr.Reason, sr.stored()))
	}
	env := &stepEnv{hosts: r.hosts, topo: r.bed.Topology(), bed: r.bed, seed: r.stepSeed(p), id: stepKey(p), token: token.New(),
		expected: &counter{}, finished: &counter{}, failed: &counter{}}
	out, smp, stepErr := r.measure(ctx, p, env, &sr)
	// Judged by what the workload measured: the sampler's figures alone
	// do not make a failed step partial.
	sr.Status, sr.Reason = stepStatus(ctx, stepErr, out)
	out.samples = append(out.samples, smp.samples...)
	sr.Metrics = out.metrics
	out.notes = append(out.notes, figures(sr.Metrics, smp.Totals, r.bed.Topology(), p.step)...)
	if sr.Status != archive.StatusFailed {
		sr.LimitedBy = smp.limits()
		sr.TestbedLimited = len(sr.LimitedBy) > 0
	}
	return sr, errors.Join(r.store(stepID, &sr, out), r.recordChanges(stepID))
}

// timeline starts events on the bed's links, their times from start, and
// returns what ends them. A bed whose links cannot change refuses.
func (r *runner) timeline(tag string, events []scenario.Event, start time.Time) (func() error, error) {
	tl, ok := r.bed.(backend.Timeline)
	if !ok {
		return nil, fmt.Errorf("the scenario's events change links, and these hosts' links cannot be changed (events need the emulated test-bed)")
	}
	if err := tl.Schedule(tag, start, scenario.Expand(events)); err != nil {
		return nil, fmt.Errorf("starting the events of %s: %w", tag, err)
	}
	return func() error {
		if err := tl.EndTimeline(tag); err != nil {
			return fmt.Errorf("ending the events of %s: %w", tag, err)
		}
		return nil
	}, nil
}

// captures starts the workload's captures of this step, each into its own
// file, and returns what stops them and says, for the step's events, what
// each wrote. A capture that fails (a full disk) stops and says so; the
// step goes on.
func (r *runner) captures(p plannedStep) func() (notes, warnings []string) {
	c := p.workload.Capture
	capturer, ok := r.bed.(backend.Capturer)
	if c == nil {
		return func() ([]string, []string) { return nil, nil }
	}
	if !ok {
		return func() ([]string, []string) {
			return nil, []string{"capture: these hosts' links cannot be captured (the emulated test-bed's can)"}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	said := make([]string, len(c.Links))
	failed := make([]bool, len(c.Links))
	for i, link := range c.Links {
		name := fmt.Sprintf("wanlab-run-%d-step-%d-%s.pcapng", r.run, p.index+1, fileSafe(link))
		path := filepath.Join(r.o.CaptureDir, name)
		wg.Go(func() {
			f, err := os.Create(path)
			if err != nil {
				said[i], failed[i] = fmt.Sprintf("capture of %s: %v", link, err), true
				return
			}
			packets, dropped, missed, err := capturer.Capture(ctx, link, c.Snaplen, c.Count, f)
			err = errors.Join(err, f.Close())
			if err != nil {
				said[i], failed[i] = fmt.Sprintf("capture of %s stopped: %v; %d packets are kept in %s", link, err, packets, path), true
				return
			}
			said[i] = fmt.Sprintf("captured %d packets of %s (%d dropped by the link model) into %s", packets, link, dropped, path)
			if missed > 0 {
				said[i] += fmt.Sprintf("; %d missed (the capture fell behind: a smaller snaplen keeps up)", missed)
			}
		})
	}
	// The captures attach between two packets; give them that moment.
	time.Sleep(50 * time.Millisecond)
	return func() (notes, warnings []string) {
		// Packets still crossing the links leave them a moment later.
		time.Sleep(200 * time.Millisecond)
		cancel()
		wg.Wait()
		for i, s := range said {
			if failed[i] {
				warnings = append(warnings, s)
			} else {
				notes = append(notes, s)
			}
		}
		return notes, warnings
	}
}

// watches starts the workload's watches of hosts' TCP connections for
// this step and returns what stops them, with what they add to the step:
// their samples, the most a watched sender was application-limited, and
// how each went (a note, or a warning for a watch that failed: the step
// goes on).
func (r *runner) watches(ctx context.Context, p plannedStep) func() *outcome {
	specs := p.workload.Watch
	if len(specs) == 0 {
		return func() *outcome { return &outcome{metrics: results.Metrics{}} }
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	got := make([]*measure.WatchResult, len(specs))
	errs := make([]error, len(specs))
	for i, w := range specs {
		wg.Go(func() {
			spec := tcpwatch.Spec{Port: w.Port, Peer: w.Peer, Cgroup: w.Cgroup, Interval: w.Interval}
			if ep, ok := r.hosts[w.Peer]; ok && ep.Addr != "" {
				spec.Peer = ep.Addr // of the family the run's tests are over
			} else if h, ok := r.bed.Topology().Host(w.Peer); ok {
				spec.Peer = h.Addr
			}
			got[i], errs[i] = measure.Watch(wctx, r.hosts[w.Host], spec, nil)
		})
	}
	// The watches look for connections as they start: give them that moment.
	time.Sleep(20 * time.Millisecond)
	return func() *outcome {
		cancel()
		wg.Wait()
		o := &outcome{metrics: results.Metrics{}}
		for i, res := range got {
			w := specs[i]
			if res == nil {
				o.events = append(o.events, fmt.Sprintf("watch of %s: %v", w.Host, errs[i]))
				continue
			}
			o.samples = append(o.samples, res.Samples()...)
			for _, c := range res.Connections {
				if c.Sender && c.Seconds > 0 {
					o.metrics[results.AppLimitedPct] = max(o.metrics[results.AppLimitedPct], 100*c.Limited.App)
				}
			}
			s := res.Summary
			note := fmt.Sprintf("watched %d connections on %s every %v: %d samples, %d intervals missed (achieved p99 %.1f ms), sampling used %.2f%% of a core",
				len(res.Connections), w.Host, w.Interval, s.Ticks, s.Missed, s.IntervalP99, s.CPUPercent)
			if errs[i] != nil {
				o.events = append(o.events, note+"; stopped early: "+errs[i].Error())
			} else {
				o.notes = append(o.notes, note)
			}
		}
		return o
	}
}

// fileSafe turns a link selector into a file name part: a->b as a-b,
// "site cern up" as site-cern-up.
func fileSafe(link string) string {
	var b strings.Builder
	for _, r := range strings.ReplaceAll(strings.ReplaceAll(link, "<->", "-"), "->", "-") {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// recordChanges stores the bed's link changes since the last call as the
// run's events (of step, or of none if 0), each at the time it took effect.
func (r *runner) recordChanges(step int64) error {
	log, ok := r.bed.(backend.ChangeLog)
	if !ok {
		return nil
	}
	changes, err := log.Changes(r.recorded)
	if err != nil {
		return fmt.Errorf("reading the links' changes: %w", err)
	}
	var errs []error
	for _, c := range changes {
		msg := results.LinkEventMessage(c.What, c.Dirs)
		if !c.Due.IsZero() {
			msg += fmt.Sprintf(" (%.3f ms after it was due)", float64(c.T.Sub(c.Due))/1e6)
		}
		errs = append(errs, r.o.Archive.AddEventAt(r.run, step, c.T, archive.Link, msg))
		r.recorded = c.T
	}
	return errors.Join(errs...)
}

// measure runs the step's workload while the sampler samples the bed, and
// reports progress every second.
func (r *runner) measure(ctx context.Context, p plannedStep, env *stepEnv, sr *StepResult) (*outcome, *sampler, error) {
	began := time.Now()
	report := func() {
		if r.o.Progress != nil {
			r.o.Progress(Progress{Step: p.index + 1, Steps: r.steps, Workload: p.workload.Name, Label: sr.Label,
				Expected: env.expected.get(), Finished: env.finished.get(), Failed: env.failed.get(),
				StepElapsed: time.Since(began), Elapsed: time.Since(r.start)})
		}
	}
	report()
	smp := newSampler(r.bed)
	sampleCtx, stopSampling := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { smp.run(sampleCtx) })
	ticker := time.NewTicker(time.Second)
	tickDone := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-ticker.C:
				report()
			case <-tickDone:
				return
			}
		}
	})
	stopEvents := func() error { return nil }
	if len(p.workload.Events) > 0 {
		stop, err := r.timeline(fmt.Sprintf("step %d", p.index+1), p.workload.Events, began)
		if err != nil {
			ticker.Stop()
			close(tickDone)
			stopSampling()
			wg.Wait()
			return &outcome{metrics: results.Metrics{}}, smp, err
		}
		stopEvents = stop
	}
	stopCaptures := r.captures(p)
	stopWatches := r.watches(ctx, p)
	out, err := execStep(ctx, env, p.workload.Kind, p.step)
	err = errors.Join(err, stopEvents())
	if out == nil {
		out = &outcome{metrics: results.Metrics{}}
	}
	notes, warnings := stopCaptures()
	out.notes, out.events = append(out.notes, notes...), append(out.events, warnings...)
	watched := stopWatches()
	out.samples = append(out.samples, watched.samples...)
	out.notes, out.events = append(out.notes, watched.notes...), append(out.events, watched.events...)
	maps.Copy(out.metrics, watched.metrics)
	ticker.Stop()
	close(tickDone)
	stopSampling()
	wg.Wait()
	report()
	sr.Seconds = time.Since(began).Seconds()
	return out, smp, err
}

// figures adds what a step used of its hosts and links (what the sampler
// saw, or a simulation gave) to its figures: each host's CPU and disk,
// each role's CPU, the engine's and the machine's CPU when there was a
// test-bed, and each link direction's rate, utilisation and drops. A
// host's share of its quota that cannot be told (results.QuotaShare) is
// left out, with its role's CPU figures, and the note returned says why.
func figures(m results.Metrics, t Totals, topo *topology.Topology, s scenario.Step) (notes []string) {
	leftOut := map[string]bool{}
	for h, pct := range t.HostCPU {
		m[results.CPUPct.Of(h)] = pct
		if hp, ok := topo.Host(h); ok && hp.CPUs > 0 {
			if share, ok := results.QuotaShare(pct, time.Duration(t.Seconds*float64(time.Second)), hp.CPUs); ok {
				m[results.CPUQuotaPct.Of(h)] = share
			} else {
				leftOut[h] = true
			}
		}
	}
	if len(leftOut) > 0 {
		hosts := slices.Sorted(maps.Keys(leftOut))
		notes = append(notes, fmt.Sprintf("the CPU of %s as a share of its quota is left out: a quota holds per %v period, and over this step's %.2f s (under %v, or with more use than the periods it cuts explain) a share of it is no measurement",
			strings.Join(hosts, ", "), results.CFSPeriod, t.Seconds, results.MinQuotaWindow))
	}
	for _, h := range topo.Hosts {
		read, ok := t.DiskRead[h.Name]
		if !ok {
			continue
		}
		write := t.DiskWrite[h.Name]
		m[results.DiskReadMBs.Of(h.Name)] = read / 1e6
		m[results.DiskWriteMBs.Of(h.Name)] = write / 1e6
		if h.DiskReadBps > 0 {
			m[results.DiskReadPct.Of(h.Name)] = 100 * read / float64(h.DiskReadBps)
		}
		if h.DiskWriteBps > 0 {
			m[results.DiskWritePct.Of(h.Name)] = 100 * write / float64(h.DiskWriteBps)
		}
	}
	roleCPU(m, s, leftOut)
	if l := t.Testbed; l != nil {
		m[results.CPUPct.Of(results.Engine)] = l.EngineCPU
		m[results.CPUPct.Of(results.Machine)] = l.Machine
		if l.Rcvbuf > 0 {
			m[results.HostRcvbufErrors] = float64(l.Rcvbuf)
		}
	}
	for _, d := range topo.Dirs {
		if b, ok := t.DirBytes[d.Name]; ok && t.Seconds > 0 {
			m[results.LinkMbps.Of(d.Name)] = float64(b) * 8 / t.Seconds / 1e6
			if d.Config.Rate > 0 {
				m[results.LinkUtilizationPct.Of(d.Name)] = 100 * float64(b) * 8 / t.Seconds / float64(d.Config.Rate)
			}
			if t.DirDrops != nil {
				m[results.LinkDrops.Of(d.Name)] = float64(t.DirDrops[d.Name])
			}
			if full, ok := t.DirFull[d.Name]; ok {
				m[results.LinkFullPct.Of(d.Name)] = full
			}
		}
	}
	return notes
}

// stepStatus is how a step ended: interrupted, failed with nothing
// measured, partial with something, or done.
func stepStatus(ctx context.Context, stepErr error, out *outcome) (status, reason string) {
	switch {
	case ctx.Err() != nil:
		return archive.StatusInterrupted, fmt.Sprintf("interrupted (%v)", context.Cause(ctx))
	case stepErr != nil && len(out.jobs) == 0 && len(out.samples) == 0 && len(out.metrics) == 0:
		return archive.StatusFailed, stepErr.Error()
	case stepErr != nil:
		return archive.StatusPartial, stepErr.Error()
	}
	return archive.StatusDone, ""
}

// store keeps everything the step measured before the next one starts. A
// step whose samples, jobs or events could not all be stored is not done:
// a resumed run does it again.
func (r *runner) store(stepID int64, sr *StepResult, out *outcome) error {
	a := r.o.Archive
	var events []string
	if sr.TestbedLimited {
		events = append(events, "the test-bed limited this step: "+strings.Join(sr.LimitedBy, "; "))
	}
	if n := sr.Metrics[results.JobsEnded("timeout")]; n > 0 {
		events = append(events, fmt.Sprintf("%.0f jobs timed out", n))
	}
	if n := sr.Metrics[results.JobsEnded("failed")] + sr.Metrics[results.JobsEnded("corrupt")]; n > 0 {
		events = append(events, fmt.Sprintf("%.0f jobs failed or arrived corrupt", n))
	}
	events = append(events, out.events...)
	err := errors.Join(a.AddSamples(r.run, stepID, out.samples), a.AddJobs(r.run, stepID, out.jobs))
	for _, e := range events {
		err = errors.Join(err, a.AddEvent(r.run, stepID, archive.Warning, e))
	}
	for _, n := range out.notes {
		err = errors.Join(err, a.AddEvent(r.run, stepID, archive.Info, n))
	}
	if err != nil {
		sr.Status, sr.Reason = archive.StatusFailed, fmt.Sprintf("storing what it measured: %v", err)
	}
	if sr.Status != archive.StatusDone {
		err = errors.Join(err, a.AddEvent(r.run, stepID, archive.Failure, sr.Reason))
	}
	return errors.Join(err, a.EndStep(stepID, sr.Status, sr.Reason, sr.stored()))
}

// waitForAgents checks that every host's agent answers before a step starts.
func waitForAgents(ctx context.Context, hosts map[string]measure.Endpoint) error {
	ctx, cancel := context.WithTimeout(ctx, agentWait)
	defer cancel()
	var errs []error
	for _, h := range hosts {
		if _, err := h.Agent.Hello(ctx, &agentpb.HelloRequest{ApiVersion: agentapi.APIVersion}, grpc.WaitForReady(true)); err != nil {
			errs = append(errs, fmt.Errorf("the agent on %s did not answer within %v: %w", h.Host, agentWait, err))
		}
	}
	return errors.Join(errs...)
}

// roleCPU adds the CPU figures of a workload's roles: the mean over the
// role's hosts of cpu_pct.HOST as ROLE_cpu_pct, and of the share of quota.
// A role with a host whose share of quota was left out has neither: its
// column would show a share of one core where a share of quota belongs.
func roleCPU(m results.Metrics, s scenario.Step, leftOut map[string]bool) {
	alias := func(role string, hosts ...string) {
		if slices.ContainsFunc(hosts, func(h string) bool { return leftOut[h] }) {
			return
		}
		for _, f := range []results.Family{results.CPUPct, results.CPUQuotaPct} {
			sum, n := 0.0, 0
			for _, h := range hosts {
				if v, ok := f.In(m, h); ok {
					sum += v
					n++
				}
			}
			if n > 0 {
				m[results.Role(role, f)] = sum / float64(n)
			}
		}
	}
	if s.Spec == nil {
		return
	}
	for role, hosts := range s.Spec.RoleHosts() {
		alias(role, hosts...)
	}
}
