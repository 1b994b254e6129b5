package controller

import (
	"context"
	"math"
	"os/exec"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
)

// topoBed is a bed that has a topology and nothing else.
type topoBed struct{ topo *topology.Topology }

func (b topoBed) Topology() *topology.Topology                           { return b.topo }
func (b topoBed) Dial(context.Context, string) (*agentapi.Client, error) { return nil, nil }
func (b topoBed) Command(context.Context, string, ...string) *exec.Cmd   { return nil }
func (b topoBed) Counters() (backend.Counters, error)                    { return backend.Counters{}, nil }
func (b topoBed) Close() error                                           { return nil }

func quotaBed(t *testing.T) topoBed {
	t.Helper()
	f, err := scenario.Parse("q.yaml", []byte("name: q\nhosts:\n  s: {cpus: 0.3}\n  c: {}\nlinks:\n  - {between: [s, c]}\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	return topoBed{topo}
}

// TestQuotaFigures: a server with a 0.3-core quota was shown at 124-250% of
// it on steps under a second. A quota is enforced per 100 ms period, and a
// window that cuts periods can hold up to two periods' quota more than its
// length allows: under ten periods the share is left out (and the role's
// figures with it, so that no column shows one core's share in its place),
// and over, what the cut periods explain is no more than full.
func TestQuotaFigures(t *testing.T) {
	e := &eventdb.Spec{Server: "s", Clients: []string{"c"}}
	step := scenario.Step{Spec: e}
	for _, tc := range []struct {
		name      string
		seconds   float64
		serverPct float64 // of one core
		quota     float64 // -1: left out
	}{
		{"0.4 s at 250% of the quota", 0.4, 75, -1},
		{"0.9 s at 124% of the quota", 0.9, 37.2, -1},
		{"0.9 s at half the quota", 0.9, 15, -1},
		{"2 s at 110%: the cut periods", 2, 33, 100},
		{"2 s at 150%: no cut period explains it", 2, 45, -1},
		{"10 s at half the quota", 10, 15, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := results.Metrics{}
			tot := Totals{HostCPU: map[string]float64{"s": tc.serverPct, "c": 40}, Seconds: tc.seconds}
			figures(m, tot, quotaBed(t).topo, step)
			if m["cpu_pct.s"] != tc.serverPct || m["client_cpu_pct"] != 40 {
				t.Errorf("the shares of one core changed: %v", m)
			}
			q, ok := m["cpu_quota_pct.s"]
			if tc.quota < 0 {
				_, role := m["server_cpu_quota_pct"]
				_, core := m["server_cpu_pct"]
				if ok || role || core {
					t.Errorf("an unreliable share of the quota is kept: %v", m)
				}
				return
			}
			if !ok || math.Abs(q-tc.quota) > 1e-9 || m["server_cpu_quota_pct"] != q {
				t.Errorf("share of the quota %v (%v), want %v", q, m, tc.quota)
			}
		})
	}
}

// TestQuotaSamples: the 10 Hz samples of a host's share of its quota were
// taken over 100 ms, one CFS period: a host that spends its 30 ms at the
// start of each period showed 0% or 200% by the sampler's phase. They are
// taken over the last second, from the step's first second on, and never
// pass 100%.
func TestQuotaSamples(t *testing.T) {
	bed := quotaBed(t)
	s := &sampler{topo: bed.topo, diskQueued: map[string]*[2]float64{}}
	t0 := time.Unix(1_800_000_000, 0)
	// The host runs one core for the first 30 ms of every 100 ms period.
	used := func(d time.Duration) time.Duration {
		full := d / (100 * time.Millisecond)
		return full*30*time.Millisecond + min(d%(100*time.Millisecond), 30*time.Millisecond)
	}
	prev := backend.Counters{At: t0, HostCPU: map[string]time.Duration{"s": 0}}
	for i := 1; i <= 30; i++ {
		// The sampler ticks 15 ms into each period, 20 ms early or late.
		d := time.Duration(i)*100*time.Millisecond + 15*time.Millisecond + time.Duration(20*(2*(i%2)-1))*time.Millisecond
		cur := backend.Counters{At: t0.Add(d), HostCPU: map[string]time.Duration{"s": used(d)}}
		s.interval(prev, cur)
		prev = cur
	}
	var n int
	for _, smp := range s.samples {
		if smp.Metric != results.CPUQuotaUtilization {
			continue
		}
		n++
		if smp.T.Sub(t0) < time.Second || smp.Value > 100 || smp.Value < 80 {
			t.Errorf("sample at %v: %.1f%% of the quota", smp.T.Sub(t0), smp.Value)
		}
	}
	if n < 15 {
		t.Errorf("%d samples of the share of quota over 3 s, want one per 100 ms after the first second", n)
	}
}

// TestFullIntervals: a direction that bursts fill is full for the share of
// intervals it was at least 90% busy in, though its mean is lower, and the
// step's figures say so.
func TestFullIntervals(t *testing.T) {
	f, err := scenario.Parse("f.yaml", []byte("name: f\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b], rate: 10Mbit}\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	s := &sampler{topo: topo, diskQueued: map[string]*[2]float64{}}
	t0 := time.Unix(1_800_000_000, 0)
	counters := func(i int, bytes uint64) backend.Counters {
		return backend.Counters{At: t0.Add(time.Duration(i) * 100 * time.Millisecond), Links: []backend.LinkCounters{{Name: "a->b", Bytes: bytes}, {Name: "b->a"}}}
	}
	// Ten intervals: at 100%, 95%, 90%, 89%, then idle; the mean is 37.4%.
	var bytes uint64
	first := counters(0, 0)
	prev := first
	for i, pct := range []uint64{100, 95, 90, 89, 0, 0, 0, 0, 0, 0} {
		bytes += 10e6 / 8 / 10 * pct / 100
		cur := counters(i+1, bytes)
		s.interval(prev, cur)
		prev = cur
	}
	s.totals(first, prev)
	if got := s.DirFull["a->b"]; got != 30 {
		t.Errorf("a->b full in %.0f%% of the intervals, want 30", got)
	}
	if got := s.DirFull["b->a"]; got != 0 {
		t.Errorf("idle b->a full in %.0f%% of the intervals", got)
	}
	m := results.Metrics{}
	figures(m, s.Totals, topo, scenario.Step{})
	if m[results.LinkFullPct.Of("a->b")] != 30 || math.Abs(m[results.LinkUtilizationPct.Of("a->b")]-37.4) > 0.01 {
		t.Errorf("figures: full %v%%, utilisation %v%%", m[results.LinkFullPct.Of("a->b")], m[results.LinkUtilizationPct.Of("a->b")])
	}
}
