package monitor

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/topology"
)

// A path's view says which address family its fresh result used, as the
// result said it; a result that does not say shows none.
func TestPathViewFamily(t *testing.T) {
	s := testService(t, "")
	s.out = &recorder{}
	k := core.PathKey{Src: "cern", Dst: "cnaf", Test: "latency"}
	at := time.Now()
	for _, family := range []string{measure.IPv6, ""} {
		pt := core.Point{T: at, Src: k.Src, Dst: k.Dst, Test: k.Test, Metric: string(core.RTTMin), Value: 0.012}
		s.Observe(core.Observation{Key: k, Type: core.Probe, At: at, Points: []core.Point{pt}, Family: family}, nil)
		shown := false
		for _, p := range s.Snapshot().Paths {
			if p.Src == k.Src && p.Dst == k.Dst && p.Test == k.Test {
				shown = true
				if p.State == "no data" || p.Family != family {
					t.Errorf("after a result of family %q the path shows %+v", family, p)
				}
			}
		}
		if !shown {
			t.Fatalf("the path %v is not in the snapshot", k)
		}
		at = at.Add(time.Second)
	}
}

const familiesMore = `  - {name: lat6, type: probe, group: sites, rate: 10/s, summary: 30s, families: [ipv4, ipv6]}
  - {name: bulk6, type: throughput, group: sites, every: 10m, duration: 5s, families: [ipv4, ipv6]}
alerts: {loss_above: 1%, for: 1}
`

// A test of two families: each pair's runs are paths of their own, whose
// points, tests and alerts the archive keeps with their family; an alert
// of the IPv6 run while the IPv4 run is healthy says so.
func TestFamiliesObserved(t *testing.T) {
	s := testService(t, familiesMore)
	k4 := core.PathKey{Src: "cern", Dst: "cnaf", Test: "lat6", Family: measure.IPv4}
	k6 := core.PathKey{Src: "cern", Dst: "cnaf", Test: "lat6", Family: measure.IPv6}
	var views []string
	for _, p := range s.Snapshot().Paths {
		if p.Test == "lat6" && p.Src == "cern" && p.Dst == "cnaf" {
			views = append(views, p.Family)
		}
	}
	if !slices.Equal(views, []string{measure.IPv4, measure.IPv6}) {
		t.Fatalf("cern->cnaf (lat6) shows %v, want a path per family", views)
	}
	at := time.Now()
	clean := core.LossCount{Lost: 0, Of: 100, High: 0.037}
	lossy := core.LossCount{Lost: 50, Of: 100, Low: 0.40, High: 0.60}
	obs := func(k core.PathKey, loss core.LossCount) core.Observation {
		// The runner's points say no family: the service gives them the key's.
		pt := core.Point{T: at, Src: k.Src, Dst: k.Dst, Test: k.Test, Metric: string(core.LossRatio), Value: float64(loss.Lost) / 100}
		return core.Observation{Key: k, Type: core.Probe, At: at, Family: k.Family, Points: []core.Point{pt}, Loss: map[core.Name]core.LossCount{core.LossRatio: loss}}
	}
	s.Observe(obs(k4, clean), nil)
	s.Observe(obs(k6, lossy), nil)
	alerts := s.Snapshot().Alerts
	if len(alerts) != 1 || alerts[0].Family != measure.IPv6 || alerts[0].Scope != core.ScopeIPv6Only {
		t.Fatalf("alerts %+v; want one on the ipv6 run, ipv6-only", alerts)
	}
	ar := s.opts.Store.Archive()
	stored, err := ar.Alerts(t.Context(), at.Add(-time.Minute), true)
	if err != nil || len(stored) != 1 || stored[0].Scope != core.ScopeIPv6Only || stored[0].Family != measure.IPv6 {
		t.Errorf("stored alerts %+v, %v", stored, err)
	}
	for _, k := range []core.PathKey{k4, k6} {
		pts, err := ar.FamilyPoints(t.Context(), k.Src, k.Dst, k.Family, string(core.LossRatio), at.Add(-time.Minute), at.Add(time.Minute))
		if err != nil || len(pts) != 1 || pts[0].Family != k.Family {
			t.Errorf("%v's points: %+v, %v", k, pts, err)
		}
	}
	// A run on demand of a test of two families: of one, or of each.
	if err := s.RunNow("bulk6", measure.IPv6, "cern", "cnaf", "tester"); err != nil {
		t.Errorf("the ipv6 run on demand: %v", err)
	}
	if err := s.RunNow("bulk6", "", "cern", "cnaf", "tester"); err != nil {
		t.Errorf("each family's run, the ipv6 one queued already: %v", err)
	}
	if err := s.RunNow("bulk6", "", "cern", "cnaf", "tester"); err == nil || !strings.Contains(err.Error(), "bulk6 cern->cnaf over ipv4 is already queued") {
		t.Errorf("each family's run, both queued already: %v", err)
	}
	if err := s.RunNow("bulk", measure.IPv6, "cern", "cnaf", "tester"); !errors.Is(err, core.ErrNotConfigured) {
		t.Errorf("an ipv6 run of a test of one run: %v", err)
	}
}

// A family some host of a test's group has no address of is refused at
// load, naming the host and the family.
func TestFamiliesCheckedAtLoad(t *testing.T) {
	cfg, err := Parse(filepath.Join(t.TempDir(), "monitor.yaml"), []byte(testConfig+familiesMore))
	if err != nil {
		t.Fatal(err)
	}
	topo := &topology.Topology{Name: "grid", Hosts: []topology.Host{
		{Name: "cern", Addr: "10.0.0.1", Addr6: "fd00::1"}, {Name: "cnaf", Addr: "10.0.0.2", Addr6: "fd00::2"}, {Name: "slac", Addr: "10.0.0.3"}}}
	store, err := OpenStore(filepath.Join(t.TempDir(), "a.db"), t.TempDir(), core.DefaultBufferMax, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	_, err = New(cfg, Options{Bed: backend.Offline(topo), Store: store, Viewer: true})
	if err == nil || !strings.Contains(err.Error(), "test lat6 runs over ipv6, which host slac has no address of") {
		t.Errorf("got %v", err)
	}
	topo.Hosts[2].Addr6 = "fd00::3"
	if _, err := New(cfg, Options{Bed: backend.Offline(topo), Store: store, Viewer: true}); err != nil {
		t.Errorf("dual-stack hosts: %v", err)
	}
}

// TestFamiliesMeasured: agents on loopback, each host with an IPv4 and an
// IPv6 address: a probe test of both families measures each pair over
// each, and a throughput test of family ipv6 over IPv6 alone; each run's
// results are its own path's and the archive keeps them with its family.
func TestFamiliesMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a service for up to a minute")
	}
	bed := serveAgents(t, map[string]limits.Limits{"a": limits.Default, "b": limits.Default})
	for i := range bed.topo.Hosts {
		bed.topo.Hosts[i].Addr6 = "::1"
	}
	s, store, stop := runService(t, bed, `testbed: local
groups:
  ab: [a, b]
tests:
  - {name: lat, type: probe, group: ab, rate: 10/s, summary: 2s, families: [ipv4, ipv6]}
  - {name: bulk, type: throughput, group: ab, every: 20s, duration: 1s, family: ipv6}
interfaces: {every: 0}
`)
	defer stop()
	want := map[string]string{ // "test family" -> the metric to show
		"lat ipv4": string(core.RTTMedian), "lat ipv6": string(core.RTTMedian), "bulk ipv6": string(core.ThroughputRate)}
	done := func(snap core.Snapshot) bool {
		n := 0
		for _, p := range snap.Paths {
			if m, ok := want[p.Test+" "+p.Family]; ok && p.Src == "a" && p.Dst == "b" && p.State == "ok" && p.Values[m] > 0 {
				n++
			}
		}
		return n == len(want)
	}
	var snap core.Snapshot
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if snap = s.Snapshot(); done(snap) {
			break
		}
	}
	if !done(snap) {
		t.Fatalf("a->b: %+v; want results of lat over each family and of bulk over ipv6", snap.Paths)
	}
	stop()
	ar := store.Archive()
	for _, tc := range []struct{ test, family, metric string }{
		{"lat", measure.IPv4, string(core.RTTMedian)}, {"lat", measure.IPv6, string(core.RTTMedian)}, {"bulk", measure.IPv6, string(core.ThroughputRate)},
	} {
		pts, err := ar.FamilyPoints(t.Context(), "a", "b", tc.family, tc.metric, time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
		if err != nil || len(pts) == 0 || !slices.ContainsFunc(pts, func(p archive.Point) bool { return p.Test == tc.test }) {
			t.Errorf("%s over %s: points %+v, %v", tc.test, tc.family, pts, err)
		}
	}
	recs, err := ar.Tests(t.Context(), "a", "b", "bulk", 5)
	if err != nil || len(recs) == 0 || recs[0].Family != measure.IPv6 || !strings.Contains(string(recs[0].Result), `"family":"ipv6"`) {
		t.Errorf("bulk's test records: %+v, %v; want one over ipv6, its result saying so", recs, err)
	}
}

// A host whose addresses are known only once its agent answers (a real
// host) and that has none of a test's family: the path of that family
// fails, saying so, and the host is not down.
func TestFamilyMissingIsAPathFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a service for a few seconds")
	}
	bed := serveAgents(t, map[string]limits.Limits{"a": limits.Default, "b": limits.Default})
	bed.topo.Hosts[0].Addr6 = "::1"
	bed.topo.Hosts[1].Addr = "" // not known before its agent answers
	s, _, stop := runService(t, bed, `testbed: local
groups:
  ab: [a, b]
tests:
  - {name: lat, type: probe, group: ab, rate: 10/s, summary: 1s, family: ipv6}
interfaces: {every: 0}
`)
	defer stop()
	failed := func(snap core.Snapshot) bool {
		return slices.ContainsFunc(snap.Paths, func(p core.PathView) bool {
			return p.Src == "a" && p.Dst == "b" && p.Family == measure.IPv6 && strings.Contains(p.Reason, "has no IPv6 test address")
		})
	}
	var snap core.Snapshot
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if snap = s.Snapshot(); failed(snap) {
			break
		}
	}
	if !failed(snap) {
		t.Fatalf("paths %+v; want a->b over ipv6 failed for b's lack of an IPv6 address", snap.Paths)
	}
	if _, down := snap.Down["b"]; down {
		t.Errorf("b is down: %+v; a family it lacks is its paths' failure, not its agent's", snap.Down)
	}
}
