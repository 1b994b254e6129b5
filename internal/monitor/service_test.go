package monitor

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/topology"
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
		if queued = s.RunNow("bulk", "cern", "cnaf", "tester"); queued == nil {
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
}
