package monitor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/monitor/core"
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
	// Hosts are the names the HTTP listener answers to besides its
	// address and access: hosts: (ListenerNames of --http).
	Hosts []string
	// Viewer makes a service that measures nothing and shows what the
	// archive holds of every path (wanlab ui): Run refuses to start it.
	Viewer bool
}

// Service runs a configuration's tests and keeps what they found.
type Service struct {
	opts Options
	// out is where results, alerts and audit entries go (opts.Store).
	out appender
	// run are the loops that measure.
	run     *runners
	started time.Time

	mu    sync.Mutex
	cfg   *core.Config
	sched *core.Scheduler
	det   *core.Detector
	paths map[core.PathKey]*PathState
	down  backoff
	last  map[[3]string]time.Time // when each exclusive test last started
	// changed is the time of the last link change recorded.
	changed  time.Time
	counts   map[[2]string]int64 // (type, status) -> tests
	late     int64
	events   []Event
	running  int
	probes   context.CancelFunc
	probesWG sync.WaitGroup
	wake     chan struct{}
	// spans are the recent and running throughput-class tests, which
	// disturb probes of the paths they share a host or a link with.
	spans []span
	// via are the link directions of each path, where the topology knows them.
	via  map[[2]string][]string
	snmp snmpPoller
	gate *gate
	// owner names this process among those sharing the archive; owned
	// are the shares of the mesh it measures, members how many share it.
	owner       string
	owned       []int
	members     int
	coordinated time.Time
}

// span is a throughput-class test's time on its path; end is zero while it runs.
type span struct {
	src, dst   string
	start, end time.Time
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
	// Failed is why the latest attempt gave nothing ("" if it did).
	Failed   string    `json:"failed,omitempty"`
	FailedAt time.Time `json:"failed_at,omitzero"`
}

// Fresh says whether the path's values are recent enough to show: never a
// stale value in place of "no data".
func (p *PathState) Fresh(now time.Time, budget time.Duration) bool {
	if p.Failed != "" || p.At.IsZero() {
		return false
	}
	return now.Sub(p.At) <= time.Duration(2*p.Period*float64(time.Second))+budget+30*time.Second
}

// Event is something the service noticed.
type Event struct {
	T       time.Time `json:"t"`
	Message string    `json:"message"`
	// Audit marks what callers of the service did (sign-ins, state
	// changes, refused requests): shown to identities only.
	Audit bool `json:"audit,omitempty"`
}

// probeStagger bounds how far apart a mesh's probe loops start.
const probeStagger = 10 * time.Second

// Backoff bounds of a host that does not answer.
const (
	firstBackoff = 5 * time.Second
	maxBackoff   = 5 * time.Minute
	maxEvents    = 500
)

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
	if err := core.Impossible(cfg); err != nil {
		return nil, err
	}
	s := &Service{opts: opts, out: opts.Store, cfg: cfg, det: core.NewDetector(cfg), paths: map[core.PathKey]*PathState{}, down: backoff{},
		last: map[[3]string]time.Time{}, counts: map[[2]string]int64{}, wake: make(chan struct{}, 1), via: map[[2]string][]string{},
		snmp: snmpPoller{ifaces: map[[2]string]IfaceState{}, errs: map[string]string{}}, owner: newOwner()}
	for _, p := range opts.Bed.Topology().Paths {
		s.via[[2]string{p.From, p.To}] = p.Via
	}
	g, err := newGate(cfg.Access, s.opts.Hosts)
	if err != nil {
		return nil, err
	}
	s.gate = g
	s.run = &runners{s}
	latest := s.resume()
	s.sched = core.NewScheduler(cfg, time.Now(), s.last, opts.Seed)
	s.addPaths(cfg)
	for k, l := range latest {
		if ps := s.paths[k]; ps != nil {
			ps.At, ps.Values = l.At, l.Values
		}
	}
	return s, nil
}

// resume reads what the archive remembers: when each exclusive test last
// ran, the recent results that make the baselines, the alerts still active,
// the interfaces' latest rates; it returns each path's latest result.
func (s *Service) resume() map[core.PathKey]*PathState {
	latest := map[core.PathKey]*PathState{}
	ar := s.opts.Store.Archive()
	if ar == nil {
		s.logf("archive unreachable at start: the schedule starts afresh and baselines are learnt anew")
		return latest
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if last, err := ar.LastStarts(ctx); err == nil {
		s.last = last
	} else {
		s.logf("resuming the schedule: %v", err)
	}
	n := 0
	err := ar.RecentPoints(ctx, time.Now().Add(-s.cfg.Baseline.Window), func(p archive.Point) error {
		s.det.Learn(p)
		n++
		// An interface's latest rates, likewise (a viewer shows them).
		if p.Test == "snmp" || p.Test == "agent" {
			k := [2]string{p.Src, p.Dst}
			st := s.snmp.ifaces[k]
			if p.T.Before(st.At) {
				return nil
			}
			if p.T.After(st.At) {
				st = IfaceState{Source: p.Test, Device: p.Src, Interface: p.Dst, At: p.T}
			}
			switch core.Name(p.Metric) {
			case core.IfaceIn:
				st.InBPS = p.Value
			case core.IfaceOut:
				st.OutBPS = p.Value
			case core.IfaceSpeed:
				st.SpeedBPS = p.Value
			}
			s.snmp.ifaces[k] = st
			return nil
		}
		// Each path's latest result is its state until a new one comes,
		// shown while fresh: a restart does not blank the grid.
		k := core.PathKey{Src: p.Src, Dst: p.Dst, Test: p.Test}
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
		s.det.Resume(active)
	}
	if t, err := ar.LastChange(ctx); err == nil {
		s.changed = t
	}
	if n > 0 || len(s.last) > 0 {
		s.logf("resumed from the archive: %d recent results for the baselines, %d pairs' last tests", n, len(s.last))
	}
	return latest
}

func (s *Service) addPaths(cfg *core.Config) {
	for _, t := range cfg.Tests {
		for _, p := range cfg.Pairs(t) {
			k := core.PathKey{Src: p[0], Dst: p[1], Test: t.Name}
			if ps, ok := s.paths[k]; ok && ps.Type == t.Type {
				ps.Period = t.Period().Seconds()
				continue
			}
			s.paths[k] = &PathState{Key: k, Type: t.Type, Period: t.Period().Seconds()}
		}
	}
	for k := range s.paths {
		if !slices.ContainsFunc(cfg.Tests, func(t core.Test) bool {
			return t.Name == k.Test && slices.Contains(cfg.Pairs(t), [2]string{k.Src, k.Dst})
		}) {
			delete(s.paths, k)
		}
	}
}

func (s *Service) logf(format string, args ...any) { s.event(false, format, args...) }

// auditf is logf of what a caller did: its event is shown to identities
// only. s.mu is held.
func (s *Service) auditf(format string, args ...any) { s.event(true, format, args...) }

func (s *Service) event(audit bool, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.events = append(s.events, Event{T: time.Now().UTC(), Message: msg, Audit: audit})
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
	s.started = time.Now()
	s.coordinate(ctx)
	s.mu.Lock()
	s.run.startProbes(ctx)
	s.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); s.run.exclusive(ctx) }()
	go func() { defer wg.Done(); s.maintain(ctx) }()
	go func() {
		defer wg.Done()
		for sleep(ctx, coordinateEvery) {
			s.coordinate(ctx)
		}
	}()
	<-ctx.Done()
	wg.Wait()
	s.mu.Lock()
	s.probes()
	s.mu.Unlock()
	s.probesWG.Wait()
	s.opts.Store.Flush()
	// Give the shares up at once: the other processes take them over at
	// their next round rather than when the leases expire.
	if ar := s.opts.Store.Archive(); ar != nil {
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ar.Leave(lctx, s.owner)
		cancel()
	}
	return nil
}

// Reload takes a new configuration of the same hosts without losing the
// paths' state, baselines or alerts.
func (s *Service) Reload(ctx context.Context, cfg *core.Config) error {
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
	if err := core.Impossible(cfg); err != nil {
		return err
	}
	g, err := newGate(cfg.Access, s.opts.Hosts)
	if err != nil {
		return err
	}
	// Browser sessions of names the new tokens file still has stay open.
	s.gate.mu.Lock()
	for id, ss := range s.gate.sessions {
		if slices.Contains(g.tokens.all(), ss.name) {
			g.sessions[id] = ss
		}
	}
	// Throttles and the count of sign-ins not yet summarised stay too
	// (copied: a request still in the old gate must not share them).
	for a, ts := range s.gate.failures {
		g.failures[a] = slices.Clone(ts)
	}
	// The Host refusals' pacing is shared: it has a lock of its own.
	g.logged, g.quiet, g.refusedHost = slices.Clone(s.gate.logged), s.gate.quiet, s.gate.refusedHost
	g.quiet.from = maps.Clone(s.gate.quiet.from)
	s.gate.quiet = quietLogins{}
	s.gate.mu.Unlock()
	s.gate = g
	s.probes()
	s.cfg = cfg
	s.det.SetConfig(cfg)
	s.addPaths(cfg)
	old := s.sched
	s.sched = core.NewScheduler(cfg, time.Now(), s.last, s.opts.Seed+1)
	// Tests still running hold their hosts in the new plan too.
	s.sched.Carry(old)
	s.run.startProbes(ctx)
	s.logf("configuration %s reloaded: %d tests over %d hosts", cfg.Source, len(cfg.Tests), len(cfg.Hosts()))
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// observe records an observation: the path's state, the archive, alerts.
func (s *Service) observe(o core.Observation, test *archive.TestRecord) {
	s.mu.Lock()
	ps := s.paths[o.Key]
	if ps == nil {
		s.mu.Unlock()
		return // the path left the configuration meanwhile
	}
	status := "ok"
	if o.Failed != "" {
		status = "failed"
		ps.Failed, ps.FailedAt = o.Failed, o.At
	} else {
		ps.Failed, ps.At, ps.Hops = "", o.At, o.Hops
		ps.Values = map[string]float64{}
		for _, p := range o.Points {
			ps.Values[p.Metric] = p.Value
		}
	}
	s.counts[[2]string{o.Type, status}]++
	fired, resolved := s.det.Observe(o)
	for _, a := range fired {
		s.logf("ALERT %s on %s->%s (%s): %s", a.Rule, a.Src, a.Dst, a.Test, a.Message)
	}
	for _, a := range resolved {
		s.logf("resolved %s on %s->%s (%s) after %s", a.Rule, a.Src, a.Dst, a.Test, a.Ended.Sub(a.Started).Round(time.Second))
	}
	s.mu.Unlock()
	if len(o.Points) > 0 || test != nil {
		s.out.Put(record{At: o.At, Points: o.Points, Test: test})
	}
	for _, a := range fired {
		s.out.Put(record{At: o.At, Open: &a})
		s.opts.Webhook.Send("firing", a)
	}
	for _, a := range resolved {
		s.out.Put(record{At: o.At, Close: &closed{Ref: a.Ref, Ended: a.Ended}})
		s.opts.Webhook.Send("resolved", a)
	}
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
			s.logf("the system clock jumped by %s: results are timed by the new clock; one-way delays across the jump may be off", jump.Round(time.Millisecond))
			s.mu.Unlock()
		}
		prev = now
		s.watchChanges()
		s.opts.Store.Flush()
		if now.Sub(lastHousekeeping) >= time.Minute {
			lastHousekeeping = now
			s.summariseLogins(now)
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

// Snapshot is the service's state at one moment.
type Snapshot struct {
	Now     time.Time `json:"now"`
	Started time.Time `json:"started"`
	Config  string    `json:"config"`
	Testbed string    `json:"testbed"`
	// Configured are the configuration's tests, in its order.
	Configured []string            `json:"configured_tests"`
	Paths      []PathView          `json:"paths"`
	Down       map[string]hostDown `json:"hosts_down"`
	Alerts     []archive.Alert     `json:"alerts"`
	Tests      map[string]int64    `json:"tests"`
	Late       int64               `json:"late"`
	Running    int                 `json:"running"`
	Queued     int                 `json:"queue_depth"`
	Archive    Health              `json:"archive"`
	Events     []Event             `json:"events"`
	// Shares are the shares of the mesh this process measures, of Shares;
	// Members is how many processes share the archive.
	Owner   string `json:"owner"`
	Shares  []int  `json:"shares"`
	Members int    `json:"members"`
}

// Elsewhere is the state of a path another process measures.
const Elsewhere = "elsewhere"

// PathView is one path's state as shown: values only while fresh.
type PathView struct {
	Src    string             `json:"src"`
	Dst    string             `json:"dst"`
	Test   string             `json:"test"`
	Type   string             `json:"type"`
	State  string             `json:"state"` // ok, alert, no data
	Reason string             `json:"reason,omitempty"`
	At     time.Time          `json:"at,omitzero"`
	Age    float64            `json:"age_seconds,omitempty"`
	Values map[string]float64 `json:"values,omitempty"`
	Hops   []string           `json:"hops,omitempty"`
}

// Snapshot copies the service's state.
func (s *Service) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var alerts []archive.Alert
	for _, a := range s.det.Active() {
		if s.owns(a.Src, a.Dst) {
			alerts = append(alerts, a)
		}
	}
	snap := Snapshot{Now: now.UTC(), Started: s.started.UTC(), Config: s.cfg.Source, Testbed: s.opts.Bed.Topology().Name,
		Down: map[string]hostDown{}, Alerts: alerts, Tests: map[string]int64{}, Late: s.late, Running: s.running,
		Archive: s.opts.Store.Health(), Events: slices.Clone(s.events), Owner: s.owner, Shares: slices.Clone(s.owned), Members: s.members}
	budgets := map[string]time.Duration{}
	for _, t := range s.cfg.Tests {
		budgets[t.Name] = t.Budget()
		snap.Configured = append(snap.Configured, t.Name)
	}
	alerting := map[core.PathKey]bool{}
	for _, a := range snap.Alerts {
		alerting[core.PathKey{Src: a.Src, Dst: a.Dst, Test: a.Test}] = true
	}
	for _, ps := range s.paths {
		v := PathView{Src: ps.Key.Src, Dst: ps.Key.Dst, Test: ps.Key.Test, Type: ps.Type, State: "no data", At: ps.At}
		switch {
		case !s.owns(ps.Key.Src, ps.Key.Dst):
			v.State, v.Reason = Elsewhere, "measured by another wanlab serve process sharing the archive"
		case ps.Fresh(now, budgets[ps.Key.Test]):
			v.State, v.Values, v.Hops, v.Age = "ok", ps.Values, ps.Hops, now.Sub(ps.At).Seconds()
			if alerting[ps.Key] {
				v.State = "alert"
			}
		case ps.Failed != "":
			v.Reason = ps.Failed
		case ps.At.IsZero():
			v.Reason = "not measured yet"
		default:
			v.Reason = fmt.Sprintf("last result %s ago", now.Sub(ps.At).Round(time.Second))
		}
		snap.Paths = append(snap.Paths, v)
	}
	slices.SortFunc(snap.Paths, func(a, b PathView) int {
		return strings.Compare(a.Test+"\x00"+a.Src+"\x00"+a.Dst, b.Test+"\x00"+b.Src+"\x00"+b.Dst)
	})
	for h, d := range s.down {
		snap.Down[h] = *d
	}
	for k, n := range s.counts {
		snap.Tests[k[0]+" "+k[1]] = n
	}
	snap.Queued = s.sched.Waiting(now)
	return snap
}
