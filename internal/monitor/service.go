package monitor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/runner"
)

// Options are what a service needs besides its configuration.
type Options struct {
	// Bed is the hosts to monitor, already up.
	Bed backend.Bed
	// Store is where results go.
	Store *Store
	// Logf reports events (hosts going down, alerts, the archive).
	Logf func(format string, args ...any)
	// Webhook, if set, is told of every alert that fires or ends.
	Webhook *Webhook
	// Seed makes the schedule's slips repeatable.
	Seed uint64
	// Viewer makes a service that measures nothing and shows what the
	// archive holds of every path (wanlab ui): Run refuses to start it.
	Viewer bool
}

// Service runs a configuration's tests and keeps what they found. It is
// the composition root of the monitoring service: the runners (package
// monitor/runner) measure and hand it what they find (Observe), it judges
// that with the core's detector and writes it through its store; the
// shares say which pairs this process measures. The HTTP layer (package
// monitor/web) reads and acts on it through its exported methods.
type Service struct {
	opts Options
	// out is where results, alerts and audit entries go (opts.Store).
	out appender
	// run are the loops that measure; shares are this process's part of
	// the mesh among those sharing the archive.
	run     *runner.Runners
	shares  *shares
	started time.Time
	// via are the link directions of each path, where the topology knows them.
	via map[[2]string][]string

	mu    sync.Mutex
	cfg   *core.Config
	det   *core.Detector
	paths map[core.PathKey]*PathState
	// changed is the time of the last link change recorded.
	changed time.Time
	counts  map[[2]string]int64 // (type, status) -> tests
	events  []core.Event
	// incidents are the faulty segments inferred from the paths' alerts
	// (infer).
	incidents core.Incidents
	// oneway follows the probed paths' one-way delays (OneWay).
	oneway *core.OneWay
}

// PathState is what the service knows of one test of a path now.
type PathState struct {
	Key    core.PathKey `json:"-"`
	Type   string       `json:"type"`
	Period float64      `json:"period_seconds"`
	// At is when the last result came, Values its figures by metric.
	At     time.Time          `json:"at,omitzero"`
	Values map[string]float64 `json:"values,omitempty"`
	// Hops is the latest hop list of a trace test.
	Hops []string `json:"hops,omitempty"`
	// Family is the address family of the latest result's traffic.
	Family string `json:"family,omitempty"`
	// Loss are the latest probe summary's loss counts: incidents pool them.
	Loss map[core.Name]core.LossCount `json:"-"`
	// Failed is why the latest attempt gave nothing ("" if it did).
	Failed   string    `json:"failed,omitempty"`
	FailedAt time.Time `json:"failed_at,omitzero"`
	// Disturbed says why the latest result measured more than the path
	// (the service's own tests): it is no verdict for incidents.
	Disturbed string `json:"disturbed,omitempty"`
	// Target is the kind of far end the destination is when it runs no
	// agent (core.TargetIperf3, TargetSTAMP, TargetPing); Busy why the
	// latest run found it busy (an iperf3 server running another's test).
	Target string    `json:"target,omitempty"`
	Busy   string    `json:"busy,omitempty"`
	BusyAt time.Time `json:"busy_at,omitzero"`
}

// Fresh says whether the path's values are recent enough to show: never a
// stale value in place of "no data".
func (p *PathState) Fresh(now time.Time, budget time.Duration) bool {
	if p.Failed != "" || p.At.IsZero() {
		return false
	}
	return now.Sub(p.At) <= time.Duration(2*p.Period*float64(time.Second))+budget+30*time.Second
}

// downEnd names the end of k whose agent does not answer ("" if neither):
// its paths show no data, whatever a round in flight handed over since.
func downEnd(k core.PathKey, down map[string]core.HostDown) string {
	for _, h := range core.Ends(k.Src, k.Dst) {
		if _, ok := down[h]; ok {
			return h
		}
	}
	return ""
}

// maxEvents bounds the events kept.
const maxEvents = 500

// New prepares a service; Run starts it.
func New(cfg *core.Config, opts Options) (*Service, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	var known []string
	for _, h := range opts.Bed.Topology().Hosts {
		known = append(known, h.Name)
	}
	if err := cfg.CheckHosts(known); err != nil {
		return nil, err
	}
	if err := cfg.CheckFamilies(runner.HostFamilies(opts.Bed)); err != nil {
		return nil, err
	}
	if err := core.Impossible(cfg); err != nil {
		return nil, err
	}
	s := &Service{opts: opts, out: opts.Store, cfg: cfg, det: core.NewDetector(cfg), paths: map[core.PathKey]*PathState{},
		counts: map[[2]string]int64{}, via: map[[2]string][]string{}, oneway: core.NewOneWay()}
	for _, p := range opts.Bed.Topology().Paths {
		s.via[[2]string{p.From, p.To}] = p.Via
	}
	s.shares = &shares{store: opts.Store, owner: newOwner(), viewer: opts.Viewer, logf: s.Logf}
	latest, last, ifaces := s.resume()
	s.run = runner.New(cfg, runner.Options{Bed: opts.Bed, Service: s, Shares: s.shares, Store: pointAppender{s.out}, Via: s.Via,
		Last: last, Interfaces: ifaces, Seed: opts.Seed})
	s.shares.changed = s.run.Wake
	s.addPaths(cfg)
	for k, l := range latest {
		if ps := s.paths[k]; ps != nil {
			ps.At, ps.Values = l.At, l.Values
		}
	}
	return s, nil
}

// resume reads what the archive remembers: the recent results that make
// the baselines, the alerts still active; it returns each path's latest
// result, when each exclusive test last ran and the interfaces' latest
// rates.
func (s *Service) resume() (latest map[core.PathKey]*PathState, last map[core.PathKey]time.Time, ifaces []core.IfaceState) {
	latest, last = map[core.PathKey]*PathState{}, map[core.PathKey]time.Time{}
	ar := s.opts.Store.Archive()
	if ar == nil {
		s.logf("archive unreachable at start: the schedule starts afresh and baselines are learnt anew")
		return latest, last, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if l, err := ar.LastStarts(ctx); err == nil {
		for k, t := range l {
			last[core.PathKey{Test: k[0], Src: k[1], Dst: k[2], Family: k[3]}] = t
		}
	} else {
		s.logf("resuming the schedule: %v", err)
	}
	latestIface := map[[2]string]core.IfaceState{}
	n := 0
	err := ar.RecentPoints(ctx, time.Now().Add(-s.cfg.Baseline.Window), func(p archive.Point) error {
		s.det.Learn(pointOf(p))
		n++
		// An interface's latest rates, likewise (a viewer shows them).
		if p.Test == "snmp" || p.Test == "agent" {
			k := [2]string{p.Src, p.Dst}
			st := latestIface[k]
			if p.T.Before(st.At) {
				return nil
			}
			if p.T.After(st.At) {
				st = core.IfaceState{Source: p.Test, Device: p.Src, Interface: p.Dst, At: p.T}
			}
			switch core.Name(p.Metric) {
			case core.IfaceIn:
				st.InBPS = p.Value
			case core.IfaceOut:
				st.OutBPS = p.Value
			case core.IfaceSpeed:
				st.SpeedBPS = p.Value
			}
			latestIface[k] = st
			return nil
		}
		// Each path's latest result is its state until a new one comes,
		// shown while fresh: a restart does not blank the grid.
		k := core.PathKey{Src: p.Src, Dst: p.Dst, Test: p.Test, Family: p.Family}
		ps := latest[k]
		if ps == nil || p.T.After(ps.At) {
			ps = &PathState{At: p.T, Values: map[string]float64{}}
			latest[k] = ps
		}
		if p.T.Equal(ps.At) {
			ps.Values[p.Metric] = p.Value
		}
		return nil
	})
	if err != nil {
		s.logf("learning baselines from the archive: %v", err)
	}
	if active, err := ar.Alerts(ctx, time.Now(), true); err == nil {
		alerts := alertsOf(active)
		// Incidents are followed apart from the paths' alerts.
		s.incidents.Resume(alerts)
		for _, a := range alerts {
			// The one-way delay windows start afresh: a step found before
			// cannot be followed.
			if a.Rule == core.RuleOWDStep {
				s.out.Put(record{At: time.Now(), Close: &closed{Ref: a.Ref, Ended: time.Now()}})
			}
		}
		s.det.Resume(slices.DeleteFunc(alerts, func(a core.Alert) bool { return a.Rule == core.RuleIncident || a.Rule == core.RuleOWDStep }))
	}
	if t, err := ar.LastChange(ctx); err == nil {
		s.changed = t
	}
	if n > 0 || len(last) > 0 {
		s.logf("resumed from the archive: %d recent results for the baselines, %d pairs' last tests", n, len(last))
	}
	for _, st := range latestIface {
		ifaces = append(ifaces, st)
	}
	return latest, last, ifaces
}

func (s *Service) addPaths(cfg *core.Config) {
	for _, t := range cfg.Tests {
		for _, k := range cfg.Keys(t) {
			tg, _ := cfg.Target(k.Dst)
			if ps, ok := s.paths[k]; ok && ps.Type == t.Type && ps.Target == tg.Kind {
				ps.Period = t.Period().Seconds()
				continue
			}
			s.paths[k] = &PathState{Key: k, Type: t.Type, Period: t.Period().Seconds(), Target: tg.Kind}
		}
	}
	for k := range s.paths {
		if _, ok := cfg.Run(k); !ok {
			delete(s.paths, k)
		}
	}
}

// Logf reports an event (runner.Service).
func (s *Service) Logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logf(format, args...)
}

// logf reports an event; s.mu is held.
func (s *Service) logf(format string, args ...any) { s.event(false, format, args...) }

// auditf is logf of what a caller did: its event is shown to identities
// only. s.mu is held.
func (s *Service) auditf(format string, args ...any) { s.event(true, format, args...) }

func (s *Service) event(audit bool, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.events = append(s.events, core.Event{T: time.Now().UTC(), Message: msg, Audit: audit})
	if len(s.events) > maxEvents {
		s.events = slices.Delete(s.events, 0, len(s.events)-maxEvents)
	}
	s.opts.Logf("%s", msg)
}

// Run runs the tests until ctx ends, then waits for those running.
func (s *Service) Run(ctx context.Context) error {
	if s.opts.Viewer {
		return errors.New("a viewer of the archive measures nothing: it cannot run")
	}
	s.mu.Lock()
	s.started = time.Now()
	s.mu.Unlock()
	s.shares.coordinate(ctx)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); s.run.Run(ctx) }()
	go func() { defer wg.Done(); s.maintain(ctx) }()
	go func() {
		defer wg.Done()
		for runner.Sleep(ctx, coordinateEvery) {
			s.shares.coordinate(ctx)
		}
	}()
	wg.Wait()
	s.opts.Store.Flush()
	s.shares.leave()
	return nil
}

// Reload takes a new configuration of the same hosts without losing the
// paths' state, baselines or alerts. apply are the other layers' parts of
// it (the HTTP layer's access:, web.API.Reload): each is called once the
// service's own checks pass, before anything changes, and one that fails
// refuses the reload.
func (s *Service) Reload(ctx context.Context, cfg *core.Config, apply ...func(*core.Config) error) error {
	// The one-way alerts of paths gone end, stored once the lock is released.
	var ended []core.Alert
	defer func() { s.putAlerts(nil, ended) }()
	s.mu.Lock()
	defer s.mu.Unlock()
	if cfg.Testbed != s.cfg.Testbed || cfg.Inventory != s.cfg.Inventory {
		return errors.New("a new testbed: or inventory: needs a restart of wanlab serve; the running configuration stays")
	}
	var known []string
	for _, h := range s.opts.Bed.Topology().Hosts {
		known = append(known, h.Name)
	}
	if err := cfg.CheckHosts(known); err != nil {
		return err
	}
	if err := cfg.CheckFamilies(runner.HostFamilies(s.opts.Bed)); err != nil {
		return err
	}
	if err := core.Impossible(cfg); err != nil {
		return err
	}
	for _, f := range apply {
		if err := f(cfg); err != nil {
			return err
		}
	}
	s.cfg = cfg
	s.det.SetConfig(cfg)
	s.addPaths(cfg)
	ended = s.oneway.Forget(func(k core.PathKey) bool { return s.paths[k] != nil }, time.Now())
	for _, a := range ended {
		s.logf("resolved %s on %s->%s (%s): its path left the configuration", a.Rule, a.Src, a.Dst, a.Test)
	}
	// Tests still running hold their hosts in the new plan too.
	s.run.Reload(ctx, cfg)
	s.logf("configuration %s reloaded: %d tests over %d hosts", cfg.Source, len(cfg.Tests), len(cfg.Hosts()))
	return nil
}

// Observe records what a test of a path gave (runner.Service): the path's
// state, the archive, alerts.
func (s *Service) Observe(o core.Observation, test *archive.TestRecord) {
	s.mu.Lock()
	ps := s.paths[o.Key]
	if ps == nil {
		s.mu.Unlock()
		return // the path left the configuration meanwhile
	}
	if o.Busy != "" {
		// A busy far end is no verdict on the path: the test is recorded,
		// not judged.
		ps.Busy, ps.BusyAt = o.Busy, o.At
		s.counts[[2]string{o.Type, "busy"}]++
		s.logf("%s: %s (tried again later; not a fault of the path)", o.Key, o.Busy)
		s.mu.Unlock()
		if test != nil {
			s.out.Put(record{At: o.At, Test: test})
		}
		return
	}
	ps.Busy, ps.BusyAt = "", time.Time{}
	status := "ok"
	if o.Failed != "" {
		status = "failed"
		ps.Failed, ps.FailedAt = o.Failed, o.At
	} else {
		ps.Failed, ps.At, ps.Hops, ps.Disturbed, ps.Family, ps.Loss = "", o.At, o.Hops, o.Disturbed, o.Family, o.Loss
		ps.Values = map[string]float64{}
		for _, p := range o.Points {
			ps.Values[p.Metric] = p.Value
		}
	}
	s.counts[[2]string{o.Type, status}]++
	labelFamily(o, test)
	fired, resolved := s.det.Observe(o)
	for _, a := range fired {
		s.logf("ALERT %s on %s: %s", a.Rule, keyOf(a), a.Message)
	}
	for _, a := range resolved {
		s.logf("resolved %s on %s after %s", a.Rule, keyOf(a), a.Ended.Sub(a.Started).Round(time.Second))
	}
	var opened, closedIncidents []core.Alert
	if len(fired)+len(resolved) > 0 || s.incidents.Pending() || core.LossSuspect(o, s.cfg.For(o.Key.Src, o.Key.Dst).LossAbove) {
		opened, closedIncidents = s.infer(o.At)
	}
	s.mu.Unlock()
	if len(o.Points) > 0 || test != nil {
		s.out.Put(record{At: o.At, Points: o.Points, Test: test})
	}
	s.putAlerts(slices.Concat(fired, opened), slices.Concat(resolved, closedIncidents))
}

// infer explains the paths' latest verdicts by faulty segments (package
// segment, over the topology's expected paths) and follows the incidents
// from one inference to the next: it returns those that open and those
// that close. s.mu is held.
func (s *Service) infer(at time.Time) (opened, ended []core.Alert) {
	now := time.Now()
	budgets := map[string]time.Duration{}
	var span, slow time.Duration // the shortest probe summary; else the shortest test period
	for _, t := range s.cfg.Tests {
		budgets[t.Name] = t.Budget()
		switch p := t.Period(); {
		case t.Type == core.Probe && (span == 0 || p < span):
			span = p
		case t.Type == core.Throughput || t.Type == core.Transfer:
			if slow == 0 || p < slow {
				slow = p
			}
		}
	}
	if span == 0 {
		span = slow
	}
	var paths []core.PathStatus
	fresh := map[core.PathKey]bool{}
	down := s.run.Down()
	via := func(src, dst string) []string { return s.via[[2]string{src, dst}] }
	var cutOff [][]string // the directions of paths with an end down
	for k, ps := range s.paths {
		_, oneWay := ps.Values[string(core.LossForward)]
		owned, isDown := s.shares.Owns(k.Src, k.Dst), downEnd(k, down) != ""
		fresh[k] = owned && !isDown && ps.Fresh(now, budgets[k.Test])
		paths = append(paths, core.PathStatus{Key: k, Type: ps.Type, OneWayLoss: oneWay, Usable: fresh[k] && ps.Disturbed == "",
			At: ps.At, Loss: ps.Loss})
		if owned && isDown {
			cutOff = append(cutOff, slices.Concat(via(k.Src, k.Dst), via(k.Dst, k.Src)))
		}
	}
	usable := func(k core.PathKey) bool { return fresh[k] }
	res, err := s.det.InferFamilies(paths, via, core.SourceExpected, s.oneway, usable)
	if err != nil {
		s.logf("%v", err)
		return nil, nil
	}
	// A host that no longer answers (a site cut off takes its agent with
	// it, on real hosts) leaves its paths with no evidence either way: an
	// open incident they cross stays open until they speak again.
	res.Lingering = append(res.Lingering, cutOff...)
	opened, ended = s.incidents.Update(res, at, s.cfg.Alerts.For, span)
	for _, a := range opened {
		s.logf("INCIDENT %s", a.Message)
	}
	for _, a := range ended {
		s.logf("incident on segment %s ended after %s", core.IncidentKey(a), a.Ended.Sub(a.Started).Round(time.Second))
	}
	return opened, ended
}

// putAlerts stores the alerts (incidents, one-way delay steps) that open
// and close and tells the webhook.
func (s *Service) putAlerts(opened, ended []core.Alert) {
	for _, a := range opened {
		s.out.Put(record{At: a.Started, Open: &a})
		s.opts.Webhook.Send("firing", a)
	}
	for _, a := range ended {
		s.out.Put(record{At: a.Ended, Close: &closed{Ref: a.Ref, Ended: a.Ended}})
		s.opts.Webhook.Send("resolved", a)
	}
}

// Incidents are the open incidents: the faulty segments inferred from the
// paths' alerts (web.State).
func (s *Service) Incidents() []core.ActiveIncident {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.incidents.Active()
	for i := range out {
		out[i].Rows, out[i].Columns = core.Marks(out[i].Segment, s.via)
	}
	return out
}

// OneWay follows a probe summary's one-way delays per direction (the
// probe runner's call, runner.OneWayService): owd_step alerts, and the
// windows restarted when the clocks stepped. It returns the summary's
// one-way figures, which the runner stores with the summary.
func (s *Service) OneWay(k core.PathKey, at time.Time, in core.OneWaySamples) []core.Point {
	if in.ClockStep != "" {
		s.mu.Lock()
		s.oneway.Restart(k, in.ClockStep)
		s.logf("%s: %s: its one-way delay windows restart", k, in.ClockStep)
		s.mu.Unlock()
		return nil
	}
	if len(in.Forward) == 0 {
		return nil
	}
	s.mu.Lock()
	var period time.Duration
	if i := slices.IndexFunc(s.cfg.Tests, func(t core.Test) bool { return t.Name == k.Test }); i >= 0 {
		period = s.cfg.Tests[i].Period()
	}
	if _, ok := s.paths[k]; !ok || period <= 0 {
		s.mu.Unlock()
		return nil // the path left the configuration meanwhile
	}
	got, err := s.oneway.Observe(k, at, in, s.cfg.For(k.Src, k.Dst), period, s.cfg.Baseline.Window)
	if err != nil {
		s.logf("%v", err)
	}
	for _, e := range got.Events {
		s.logf("%s", e)
	}
	for _, a := range got.Fired {
		s.logf("ALERT %s on %s->%s (%s): %s", a.Rule, a.Src, a.Dst, a.Test, a.Message)
	}
	for _, a := range got.Resolved {
		s.logf("resolved %s on %s->%s (%s) after %s", a.Rule, a.Src, a.Dst, a.Test, a.Ended.Sub(a.Started).Round(time.Second))
	}
	var opened, ended []core.Alert
	if len(got.Fired)+len(got.Resolved) > 0 || s.incidents.Pending() {
		opened, ended = s.infer(at)
	}
	s.mu.Unlock()
	s.putAlerts(slices.Concat(got.Fired, opened), slices.Concat(got.Resolved, ended))
	return got.Points
}

// maintain flushes the buffer, aggregates hours, applies retention and
// watches the clock.
func (s *Service) maintain(ctx context.Context) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	prev := time.Now()
	var lastHousekeeping time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		// The monotonic clock measures what passed; the wall clock may jump.
		if jump := now.Round(0).Sub(prev.Round(0)) - now.Sub(prev); jump > 2*time.Second || jump < -2*time.Second {
			s.mu.Lock()
			s.logf("the system clock jumped by %s: results are timed by the new clock; the one-way delay windows restart", jump.Round(time.Millisecond))
			s.oneway.RestartAll(fmt.Sprintf("the system clock jumped by %s", jump.Round(time.Millisecond)))
			s.mu.Unlock()
		}
		prev = now
		s.watchChanges()
		s.opts.Store.Flush()
		if now.Sub(lastHousekeeping) >= time.Minute {
			lastHousekeeping = now
			s.housekeeping(ctx, now)
		}
	}
}

// watchChanges records the test-bed's link changes (wanlab testbed set)
// since the last one recorded: the injected events that explain what the
// paths show next.
func (s *Service) watchChanges() {
	log, ok := s.opts.Bed.(backend.ChangeLog)
	if !ok {
		return
	}
	changes, err := log.Changes(s.changed)
	if err != nil {
		return // the test-bed's state is unreadable now; the next tick tries again
	}
	for _, c := range changes {
		s.mu.Lock()
		s.logf("link change: %s", c.What)
		s.mu.Unlock()
		s.out.Put(record{At: c.T, Change: &archive.Change{T: c.T, What: c.What, Dirs: c.Dirs}})
		s.changed = c.T
	}
}

func (s *Service) housekeeping(ctx context.Context, now time.Time) {
	ar := s.opts.Store.Archive()
	if ar == nil || s.opts.Store.Health().BufferedBytes > 0 {
		return
	}
	s.mu.Lock()
	ret := s.cfg.Retention
	s.mu.Unlock()
	since, err := ar.LastAggregated(ctx)
	if err == nil {
		if since.IsZero() {
			since = now.Add(-ret.Raw)
		}
		// The last aggregated hour again: results may have landed late.
		_, err = ar.AggregateHours(ctx, since, now)
	}
	if err == nil {
		_, err = ar.Prune(ctx, now.Add(-ret.Raw), now.Add(-ret.Hourly))
	}
	if err == nil {
		_, err = ar.PruneAudit(ctx, now.Add(-ret.Audit))
	}
	if err != nil {
		s.mu.Lock()
		s.logf("archive housekeeping: %v", err)
		s.mu.Unlock()
	}
}

// Snapshot copies the service's state.
func (s *Service) Snapshot() core.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var alerts []core.Alert
	for _, a := range slices.Concat(s.det.Active(), s.oneway.Active()) {
		if s.shares.Owns(a.Src, a.Dst) {
			alerts = append(alerts, a)
		}
	}
	snap := core.Snapshot{Now: now.UTC(), Started: s.started.UTC(), Config: s.cfg.Source, Testbed: s.opts.Bed.Topology().Name,
		Down: s.run.Down(), Alerts: alerts, Tests: map[string]int64{}, Archive: s.opts.Store.Health(), Events: slices.Clone(s.events)}
	snap.Owner, snap.Shares, snap.Members = s.shares.view()
	snap.Late, snap.Running, snap.Queued = s.run.Stats()
	budgets := map[string]time.Duration{}
	for _, t := range s.cfg.Tests {
		budgets[t.Name] = t.Budget()
		snap.Configured = append(snap.Configured, t.Name)
	}
	alerting := map[core.PathKey]bool{}
	for _, a := range snap.Alerts {
		alerting[keyOf(a)] = true
	}
	for _, ps := range s.paths {
		v := core.PathView{Src: ps.Key.Src, Dst: ps.Key.Dst, Test: ps.Key.Test, Type: ps.Type, State: "no data", At: ps.At, Target: ps.Target,
			Family: cmp.Or(ps.Key.Family, ps.Family), PerFamily: ps.Key.Family != ""}
		downHost := downEnd(ps.Key, snap.Down)
		switch {
		case !s.shares.Owns(ps.Key.Src, ps.Key.Dst):
			v.State, v.Reason = core.Elsewhere, "measured by another wanlab serve process sharing the archive"
		case downHost != "":
			// A round in flight when the host went down may still hand
			// over a result: the path has no data all the same.
			d := snap.Down[downHost]
			v.Reason = fmt.Sprintf("host %s is down since %s: %s", downHost, d.Since.UTC().Format(time.RFC3339), d.Reason)
		case ps.Fresh(now, budgets[ps.Key.Test]):
			v.State, v.Values, v.Hops, v.Age = "ok", ps.Values, ps.Hops, now.Sub(ps.At).Seconds()
			v.Note = s.oneway.Status(ps.Key, now)
			if alerting[ps.Key] {
				v.State = "alert"
			}
		case ps.Failed != "":
			v.Reason = ps.Failed
		case ps.Busy != "":
			v.Reason = fmt.Sprintf("busy %s ago: %s", now.Sub(ps.BusyAt).Round(time.Second), ps.Busy)
		case ps.At.IsZero():
			v.Reason = "not measured yet"
		default:
			v.Reason = fmt.Sprintf("last result %s ago", now.Sub(ps.At).Round(time.Second))
		}
		snap.Paths = append(snap.Paths, v)
	}
	slices.SortFunc(snap.Paths, func(a, b core.PathView) int {
		return strings.Compare(a.Test+"\x00"+a.Src+"\x00"+a.Dst+"\x00"+a.Family, b.Test+"\x00"+b.Src+"\x00"+b.Dst+"\x00"+b.Family)
	})
	for k, n := range s.counts {
		snap.Tests[k[0]+" "+k[1]] = n
	}
	return snap
}
