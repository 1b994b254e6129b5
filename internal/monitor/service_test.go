package monitor

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/runner"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

func TestMain(m *testing.M) { testsupport.Main(m) }

const testConfig = `testbed: grid
groups:
  sites: [cern, cnaf, slac]
tests:
  - {name: latency, type: probe, group: sites, rate: 10/s, summary: 30s}
  - {name: bulk, type: throughput, group: sites, every: 5m, duration: 5s, streams: 2}
`

// testService is a viewer's service (it owns every path) of testConfig
// and more, over a new SQLite archive.
func testService(t testing.TB, more string) *Service {
	return serviceWith(t, more, Options{Viewer: true})
}

// serviceWith is a service of testConfig and more, over a new SQLite
// archive and an offline bed of its hosts, with opts.
func serviceWith(t testing.TB, more string, opts Options) *Service {
	cfg, err := Parse(filepath.Join(t.TempDir(), "monitor.yaml"), []byte(testConfig+more))
	if err != nil {
		t.Fatal(err)
	}
	topo := &topology.Topology{Name: "grid"}
	for _, h := range cfg.Hosts() {
		topo.Hosts = append(topo.Hosts, topology.Host{Name: h})
	}
	store, err := OpenStore(filepath.Join(t.TempDir(), "a.db"), t.TempDir(), core.DefaultBufferMax, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	opts.Bed, opts.Store = backend.Offline(topo), store
	s, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mon_audit is pruned after retention: audit (400 days by default).
func TestAuditRetention(t *testing.T) {
	for _, c := range []struct {
		name, more string
		kept       time.Duration
	}{
		{"default", "", 400 * 24 * time.Hour},
		{"a week", "retention: {audit: 7d}\n", 7 * 24 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testService(t, c.more)
			now := time.Now()
			for _, age := range []time.Duration{c.kept + time.Hour, c.kept - time.Hour} {
				if err := s.Archive().AddAudit(audit.Entry{Time: now.Add(-age), Remote: "192.0.2.8", Method: "login", Decision: "refused"}); err != nil {
					t.Fatal(err)
				}
			}
			s.housekeeping(t.Context(), now)
			left, err := s.Archive().Audit(t.Context(), time.Time{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 1 || now.Sub(left[0].Time) > c.kept {
				t.Errorf("after housekeeping: %+v; want the entry younger than %s alone", left, c.kept)
			}
		})
	}
}

// A running service whose hosts do not answer (an offline bed): its probe
// loops and a run asked on demand each fail and say so, the hosts are
// down, and the service stops when told.
func TestRunWithHostsAway(t *testing.T) {
	s := serviceWith(t, "", Options{Logf: t.Logf})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the service did not stop within a minute of being told")
		}
	}()
	// The shares are claimed at the start: the run is this process's to make.
	var queued error
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if queued = s.RunNow("bulk", "", "cern", "cnaf", "tester"); queued == nil {
			break
		}
	}
	if queued != nil {
		t.Fatalf("a run on demand: %v", queued)
	}
	var snap core.Snapshot
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		snap = s.Snapshot()
		if snap.Tests["probe failed"] > 0 && snap.Tests["throughput failed"] > 0 {
			break
		}
	}
	if snap.Tests["probe failed"] == 0 || snap.Tests["throughput failed"] == 0 {
		t.Fatalf("tests counted %v, want failed probes and a failed throughput test", snap.Tests)
	}
	if len(snap.Down) == 0 {
		t.Errorf("no host down: %+v", snap.Down)
	}
	i := slices.IndexFunc(snap.Paths, func(p core.PathView) bool {
		return p.Test == "latency" && p.Reason != "" && p.Reason != "not measured yet"
	})
	if i < 0 {
		t.Errorf("no probed path says why it has no data: %+v", snap.Paths)
	}
	// A round in flight when its host went down hands over a result after
	// that: the path has no data all the same, and says which host is down.
	var h string
	for h = range snap.Down {
		break
	}
	k := core.PathKey{Src: h, Dst: slices.DeleteFunc(slices.Clone(s.cfg.Hosts()), func(x string) bool { return x == h })[0], Test: "latency"}
	s.Observe(core.Observation{Key: k, Type: core.Probe, At: time.Now(),
		Points: []core.Point{{T: time.Now(), Src: k.Src, Dst: k.Dst, Test: k.Test, Metric: string(core.RTTMedian), Value: 0.01}}}, nil)
	for _, p := range s.Snapshot().Paths {
		if p.Src == k.Src && p.Dst == k.Dst && p.Test == k.Test && (p.State != "no data" || !strings.Contains(p.Reason, "host "+h+" is down")) {
			t.Errorf("%s after a result from a round in flight, with %s down: %s (%s), want no data naming %s", k, h, p.State, p.Reason, h)
		}
	}
}

// starService is a viewer's service of a four-site star whose expected
// paths cross the source's way out ("x.out") and the destination's way in
// ("x.in"), probed every 10 s and alerting on 2% loss at once (and
// one-way delay steps of 2 ms).
func starService(t *testing.T) *Service { return starServiceWith(t, Options{Viewer: true}) }

// starServiceWith is starService with opts (its bed and store set).
func starServiceWith(t *testing.T, opts Options) *Service {
	t.Helper()
	cfg, err := Parse(filepath.Join(t.TempDir(), "monitor.yaml"), []byte(`testbed: star
groups: {sites: [a, b, c, d]}
tests:
  - {name: lat, type: probe, group: sites, rate: 10/s, summary: 10s}
alerts: {loss_above: 2%, rtt_step: 2ms, for: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	topo := &topology.Topology{Name: "star"}
	for _, h := range cfg.Hosts() {
		topo.Hosts = append(topo.Hosts, topology.Host{Name: h})
		for _, d := range cfg.Hosts() {
			if d != h {
				topo.Paths = append(topo.Paths, topology.Path{From: h, To: d, Via: []string{h + ".out", d + ".in"}})
			}
		}
	}
	store, err := OpenStore(filepath.Join(t.TempDir(), "a.db"), t.TempDir(), core.DefaultBufferMax, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	opts.Bed, opts.Store = backend.Offline(topo), store
	s, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A site cut off takes its agent with it (on real hosts): its paths have
// no evidence either way, and an open incident they cross stays open
// until they speak again.
func TestIncidentLingersWhileHostDown(t *testing.T) {
	s := starServiceWith(t, Options{Logf: t.Logf})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// The offline bed's agents never answer: every host goes down.
	for end := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, ok := s.Snapshot().Down["d"]; ok {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("d never down: %+v", s.Snapshot().Down)
		}
	}
	at := time.Now()
	s.mu.Lock()
	s.incidents.Resume([]core.Alert{{Ref: "incident/d.in/1", Rule: core.RuleIncident, Src: "d.in", Dst: "d.in", Started: at.Add(-time.Minute),
		Evidence: []byte(`{"segment":["d.in"],"figures":["loss"],"paths":[],"confidence":1,"reason":"loss: 3 affected paths"}`)}})
	for i := range 4 {
		s.infer(at.Add(time.Duration(i) * 10 * time.Second))
	}
	s.mu.Unlock()
	if got := s.Incidents(); len(got) != 1 || got[0].Key != "d.in" {
		t.Errorf("incidents %+v four summary periods on with d down: want d.in's still open", got)
	}
}

// Loss into one site of the star raises loss alerts on its three paths in
// and one incident naming its way in, stored, which ends once the loss
// has been gone a summary period.
func TestIncidentOfLossIntoOneSite(t *testing.T) {
	s := starService(t)
	sites := []string{"a", "b", "c", "d"}
	lossy := core.LossCount{Lost: 10, Of: 100, Low: 0.055, High: 0.174}
	clean := core.LossCount{Lost: 0, Of: 100, Low: 0, High: 0.037}
	round := func(at time.Time, lossIntoD bool) {
		for _, src := range sites {
			for _, dst := range sites {
				if src == dst {
					continue
				}
				fwd := clean
				if lossIntoD && dst == "d" {
					fwd = lossy
				}
				rt, back := fwd, clean
				if lossIntoD && src == "d" {
					rt, back = lossy, lossy // the replies into d are lost
				}
				s.Observe(core.Observation{Key: core.PathKey{Src: src, Dst: dst, Test: "lat"}, Type: core.Probe, At: at,
					Points: []core.Point{{T: at, Src: src, Dst: dst, Test: "lat", Metric: string(core.LossForward), Value: float64(fwd.Lost) / 100}},
					Loss:   map[core.Name]core.LossCount{core.LossRatio: rt, core.LossForward: fwd, core.LossBack: back}}, nil)
			}
		}
	}
	t0 := time.Now()
	round(t0, true)
	if got := s.Incidents(); len(got) != 0 {
		t.Fatalf("an incident opened within a summary period: %+v", got)
	}
	var alerting []string
	for _, a := range s.Snapshot().Alerts {
		alerting = append(alerting, a.Src+"->"+a.Dst+" "+a.Rule)
	}
	slices.Sort(alerting)
	if want := []string{"a->d loss_above", "b->d loss_above", "c->d loss_above"}; !slices.Equal(alerting, want) {
		t.Errorf("alerts %v, want %v", alerting, want)
	}
	round(t0.Add(10*time.Second), true)
	got := s.Incidents()
	if len(got) != 1 || got[0].Key != "d.in" || !slices.Equal(got[0].Figures, []string{core.FigureLoss}) || len(got[0].Paths) != 3 {
		t.Fatalf("incidents %+v, want one on d.in of the loss of three paths", got)
	}
	if !slices.Equal(got[0].Columns, []string{"d"}) || len(got[0].Rows) != 0 {
		t.Errorf("the grid marks rows %v and columns %v, want d's column", got[0].Rows, got[0].Columns)
	}
	round(t0.Add(20*time.Second), false)
	round(t0.Add(30*time.Second), false)
	if got := s.Incidents(); len(got) != 0 {
		t.Fatalf("incidents %+v after the loss ended", got)
	}
	s.opts.Store.Flush()
	stored, err := s.Archive().Alerts(t.Context(), time.Time{}, false)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(stored, func(a archive.Alert) bool { return a.Rule == core.RuleIncident })
	if i < 0 || stored[i].Src != "d.in" || stored[i].Ended.IsZero() {
		t.Errorf("stored alerts %+v: want the incident on d.in, ended", stored)
	}
}

// The probe runner finds the service's one-way tracking by this method.
var _ runner.OneWayService = (*Service)(nil)

// A 5 ms step on the way into one site of the star, with every pair of
// clocks offset and drifting at 50 ppm, raises owd_step alerts on the
// directions into it alone and one incident naming its way in, from the
// one-way delays.
func TestIncidentOfDelayIntoOneSite(t *testing.T) {
	s := starService(t)
	sites := []string{"a", "b", "c", "d"}
	t0 := time.Now()
	const stepAt = 8
	var got []core.ActiveIncident
	for i := 0; i < stepAt+6 && len(got) == 0; i++ {
		at := t0.Add(time.Duration(i+1) * 10 * time.Second)
		for _, src := range sites {
			for _, dst := range sites {
				if src != dst {
					k := core.PathKey{Src: src, Dst: dst, Test: "lat"}
					s.OneWay(k, at, runner.OneWaySamples(delaySummary(t0, stepAt, i, src, dst), nil))
					s.Observe(core.Observation{Key: k, Type: core.Probe, At: at}, nil)
				}
			}
		}
		got = s.Incidents()
	}
	if len(got) != 1 || got[0].Key != "d.in" || !slices.Equal(got[0].Figures, []string{core.FigureOWD}) {
		t.Fatalf("incidents %+v, want one on d.in of one-way delay", got)
	}
	var alerting []string
	for _, a := range s.Snapshot().Alerts {
		alerting = append(alerting, a.Src+"->"+a.Dst+" "+a.Rule)
	}
	slices.Sort(alerting)
	if want := []string{"a->d owd_step", "a->d owd_step", "b->d owd_step", "b->d owd_step", "c->d owd_step", "c->d owd_step"}; !slices.Equal(alerting, want) {
		t.Errorf("alerts %v, want the directions into d, each from both of its paths' probes", alerting)
	}
}

// delaySummary is summary i of 100 probes from src to dst, with the
// reflector's clock 300 ms ahead and gaining 50 ppm, and 5 ms more on the
// way into d from summary stepAt on.
func delaySummary(t0 time.Time, stepAt, i int, src, dst string) *probe.Summary {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(src[0])<<8|uint64(dst[0])))
	res := &probe.Summary{Sent: 100}
	for k := range 100 {
		sent := t0.Add(time.Duration(i*100+k) * 100 * time.Millisecond).UnixNano()
		theta := 0.3e9 + 50e-6*float64(sent-t0.UnixNano()) // ns
		f, b := 12e6+3e5*rng.ExpFloat64(), 17e6+3e5*rng.ExpFloat64()
		if i >= stepAt && dst == "d" {
			f += 5e6
		}
		if i >= stepAt && src == "d" {
			b += 5e6 // the replies into d
		}
		rx := sent + int64(f+theta)
		tx := rx + 50_000
		res.Probes = append(res.Probes, probe.Result{Seq: k, Sent: sent, ReflectRx: rx, ReflectTx: tx, Received: tx - int64(theta) + int64(b)})
	}
	return res
}
