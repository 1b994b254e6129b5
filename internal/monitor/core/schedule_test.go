package core

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// mesh is a configuration of n hosts with a throughput test every period.
func mesh(t testing.TB, n int, every, duration string) *Config {
	t.Helper()
	var hosts []string
	for i := range n {
		hosts = append(hosts, fmt.Sprintf("h%d", i))
	}
	text := fmt.Sprintf(`testbed: lab
groups:
  all: [%s]
tests:
  - {name: lat, type: probe, group: all, rate: 1/s, summary: 1m}
  - {name: bulk, type: throughput, group: all, every: %s, duration: %s}
`, strings.Join(hosts, ", "), every, duration)
	cfg, err := Parse("mesh.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestDryRunNeverOverlapsOnAHost(t *testing.T) {
	cfg := mesh(t, 8, "10m", "10s")
	start := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	plan := DryRun(cfg, start, 2*time.Hour, nil, nil)
	// 56 pairs every 10 minutes over 2 hours.
	if len(plan.Runs) < 56*11 || len(plan.Runs) > 56*13 {
		t.Errorf("%d runs in 2 hours, want about %d", len(plan.Runs), 56*12)
	}
	busy := map[string][]Planned{}
	for _, r := range plan.Runs {
		for _, h := range []string{r.Src, r.Dst} {
			for _, o := range busy[h] {
				if r.Start.Before(o.End) && o.Start.Before(r.End) {
					t.Fatalf("%s->%s at %v overlaps %s->%s at %v on %s", r.Src, r.Dst, r.Start, o.Src, o.Dst, o.Start, h)
				}
			}
			busy[h] = append(busy[h], r)
		}
	}
	if plan.Late > len(plan.Runs)/20 {
		t.Errorf("%d runs late in a mesh that asks %.0f%% of each host", plan.Late, 100*plan.Hosts[0].Demand)
	}
	for _, h := range plan.Hosts {
		if h.ProbePackets != 14 {
			t.Errorf("%s: %g probe packets/s, want 14 (7 peers, 1/s each way)", h.Host, h.ProbePackets)
		}
	}
}

func TestDryRunLinkLoad(t *testing.T) {
	cfg := mesh(t, 2, "1h", "10s")
	paths := map[[2]string]Path{{"h0", "h1"}: {Via: []string{"h0->h1"}, Bottleneck: 8e6}, {"h1", "h0"}: {Via: []string{"h1->h0"}, Bottleneck: 8e6}}
	plan := DryRun(cfg, time.Unix(0, 0), 24*time.Hour, paths, map[string]float64{"h0->h1": 8e6})
	// 24 tests of 12 s budget at 1 MB/s, plus 1 probe/s each way of 92 bytes.
	want := 24*12*1e6 + 2*92*86400.0
	if len(plan.Links) != 2 || plan.Links[0].Direction != "h0->h1" || plan.Links[0].BytesPerDay < want*0.95 || plan.Links[0].BytesPerDay > want*1.05 {
		t.Fatalf("links %+v, want h0->h1 with about %.0f bytes a day", plan.Links, want)
	}
	if f := plan.Links[0].Fraction; f < 0.0033 || f > 0.0037 {
		t.Errorf("h0->h1 used %.4f of its capacity, want about 0.0035", f)
	}
}

func TestImpossibleSchedule(t *testing.T) {
	// 19 peers x 2 directions x 62 s each hour is 65% of a host: possible.
	if err := Impossible(mesh(t, 20, "1h", "1m")); err != nil {
		t.Errorf("a feasible mesh was refused: %v", err)
	}
	err := Impossible(mesh(t, 20, "20m", "1m"))
	if err == nil || !strings.Contains(err.Error(), "h0 needs 196% of its time") || !strings.Contains(err.Error(), "and 17 more") {
		t.Errorf("an impossible mesh: %v", err)
	}
}

func TestSchedulerResumesAndBacksOff(t *testing.T) {
	cfg := mesh(t, 2, "1h", "10s")
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	last := map[PathKey]time.Time{{Src: "h0", Dst: "h1", Test: "bulk"}: start.Add(-10 * time.Minute)}
	s := NewScheduler(cfg, start, last, 1)
	// h0->h1 resumes 50 minutes from now; h1->h0 never ran: its first run
	// is spread half a period on.
	j, ok, _ := s.Next(start.Add(40*time.Minute), nil)
	if !ok || j.Src != "h1" {
		t.Fatalf("first job %+v %v, want h1->h0", j, ok)
	}
	s.Done(j, start.Add(40*time.Minute+12*time.Second))
	if _, ok, wake := s.Next(start.Add(41*time.Minute), nil); ok || wake.Before(start.Add(50*time.Minute)) || wake.After(start.Add(57*time.Minute)) {
		t.Errorf("next wake %v, want about 50 minutes on (h0->h1 ran 10 minutes ago)", wake)
	}
	// A host that is down holds its pairs until it may be tried again.
	down := func(j Job) (time.Time, bool) { return start.Add(3 * time.Hour), j.Src == "h1" || j.Dst == "h1" }
	if j, ok, _ := s.Next(start.Add(2*time.Hour), down); ok {
		t.Errorf("%+v started while h1 is down", j)
	}
	if j, ok, _ := s.Next(start.Add(3*time.Hour), down); !ok {
		t.Errorf("no job once h1 may be tried again: %+v", j)
	}
}

func BenchmarkSchedule100Hosts(b *testing.B) {
	cfg := mesh(b, 100, "24h", "10s")
	start := time.Unix(0, 0)
	for b.Loop() {
		plan := DryRun(cfg, start, 30*time.Hour, nil, nil)
		if len(plan.Runs) < 9900 {
			b.Fatalf("%d runs, want 9900", len(plan.Runs))
		}
	}
}

// A test that runs past its budget keeps its hosts until it is done.
func TestSchedulerHoldsHostsUntilDone(t *testing.T) {
	cfg := mesh(t, 3, "30s", "1s")
	start := time.Unix(0, 0)
	s := NewScheduler(cfg, start, nil, 1)
	now := start.Add(time.Minute)
	j, ok, _ := s.Next(now, nil)
	if !ok {
		t.Fatal("no job")
	}
	// Well past the job's 3 s budget, it has not ended.
	later := now.Add(20 * time.Second)
	for {
		k, ok, _ := s.Next(later, nil)
		if !ok {
			break
		}
		if k.Src == j.Src || k.Dst == j.Src || k.Src == j.Dst || k.Dst == j.Dst {
			t.Fatalf("%s->%s started on a host of %s->%s, which still runs", k.Src, k.Dst, j.Src, j.Dst)
		}
		s.Done(k, later)
	}
	s.Done(j, later)
	if _, ok, _ := s.Next(later, nil); !ok {
		t.Error("nothing may start once the long test is done")
	}
}

// A run on demand goes first, once: the pair's schedule stays as it was.
func TestSchedulerOnDemand(t *testing.T) {
	cfg := mesh(t, 2, "1h", "10s")
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := NewScheduler(cfg, start, map[PathKey]time.Time{{Src: "h0", Dst: "h1", Test: "bulk"}: start, {Src: "h1", Dst: "h0", Test: "bulk"}: start}, 1)
	planned := s.Len()
	bulk := &cfg.Tests[0]
	now := start.Add(time.Minute)
	if err := s.Add(bulk, "h0", "h1", "ops", now, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(bulk, "h0", "h1", "ops", now, 10); err == nil || !strings.Contains(err.Error(), "already queued") {
		t.Errorf("the same run twice: %v", err)
	}
	if err := s.Add(bulk, "h1", "h0", "ops", now, 1); err == nil {
		t.Error("past the bound of runs on demand")
	}
	j, ok, _ := s.Next(now, nil)
	if !ok || j.By != "ops" || j.Src != "h0" {
		t.Fatalf("next %+v %v, want the run on demand", j, ok)
	}
	s.Done(j, now.Add(7*time.Second))
	if s.Len() != planned {
		t.Errorf("%d jobs planned after the run on demand, want %d as before", s.Len(), planned)
	}
	if _, ok, wake := s.Next(now.Add(time.Minute), nil); ok || wake.Before(start.Add(50*time.Minute)) {
		t.Errorf("the schedule moved: next at %v", wake)
	}
}
