package controller

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/command"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
)

func TestRoleCPU(t *testing.T) {
	m := results.Metrics{"cpu_pct.s": 50, "cpu_quota_pct.s": 100, "cpu_pct.c1": 20, "cpu_pct.c2": 40}
	e := &eventdb.Spec{Server: "s", Clients: []string{"c1", "c2"}}
	roleCPU(m, scenario.Step{Spec: e}, nil)
	if m["server_cpu_pct"] != 50 || m["server_cpu_quota_pct"] != 100 || m["client_cpu_pct"] != 30 {
		t.Errorf("%v", m)
	}
	if _, ok := m["client_cpu_quota_pct"]; ok {
		t.Error("clients without a quota got a quota share")
	}
}

// TestBottleneck: a host in a site is reached at its access link's lower
// direction (0 when unlimited), another at its path's bottleneck.
func TestBottleneck(t *testing.T) {
	f, err := scenario.Parse("b.yaml", []byte(`name: b
sites:
  s: {rate: 100Mbit, delay: 1ms, up: {rate: 20Mbit}}
  free: {delay: 1ms}
hosts:
  a: {site: s}
  b: {site: free}
  c: {}
  d: {}
links:
  - {between: [c, d], rate: 30Mbit}
`), false)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	env := &stepEnv{topo: topo}
	for _, tc := range []struct {
		from, to string
		want     float64
	}{{"b", "a", 20e6}, {"a", "b", 0}, {"c", "d", 30e6}, {"d", "nowhere", 0}} {
		if got := env.Bottleneck(tc.from, tc.to); got != tc.want {
			t.Errorf("Bottleneck(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestLimits(t *testing.T) {
	s := Totals{Testbed: &TestbedLoad{Machine: 97, EngineCPU: 40}}
	if why := s.limits(); len(why) != 1 || !strings.Contains(why[0], "97% busy") {
		t.Errorf("busy machine: %v", why)
	}
	s = Totals{Testbed: &TestbedLoad{Machine: 50, EngineCPU: 170, Outside: 3}}
	if why := s.limits(); len(why) != 2 || !strings.Contains(why[1], "3 packets were dropped outside") {
		t.Errorf("saturated engine: %v", why)
	}
	if why := (Totals{Testbed: &TestbedLoad{Machine: 60, EngineCPU: 90}}).limits(); len(why) != 0 {
		t.Errorf("a comfortable step is flagged: %v", why)
	}
}

// TestDiskRatesUnderACap: cgroup v1 counts a 2.4 MB burst of reads when it is
// submitted; a 3 MB/s cap lets it through over the next 0.8 s, and that is
// what the samples say. v2 counts at dispatch, so its counts stand.
func TestDiskRatesUnderACap(t *testing.T) {
	h := topology.Host{Name: "a", DiskReadBps: 3e6}
	s := &sampler{diskQueued: map[string]*[2]float64{}}
	var got []float64
	for i := range 10 {
		submitted := 0.0
		if i == 0 {
			submitted = 2.4e6
		}
		read, write := s.diskRates(h, submitted, 1e5, 0.1, true)
		if write != 1e6 {
			t.Errorf("interval %d: uncapped writes %v B/s, want them as counted, 1e6", i, write)
		}
		got = append(got, read)
	}
	for i, r := range got {
		want := 3e6
		if i >= 8 {
			want = 0
		}
		if math.Abs(r-want) > 1 {
			t.Errorf("interval %d: read %v B/s, want %v (bursts leave at the cap)", i, r, want)
		}
	}
	v2 := &sampler{diskQueued: map[string]*[2]float64{}}
	if read, _ := v2.diskRates(h, 2.4e6, 0, 0.1, false); read != 24e6 {
		t.Errorf("v2 counts: read %v, want 24e6 as counted", read)
	}
}

// TestExecStepDispatch: a step runs through the registry, its kind's
// driver refuses another kind's spec, and a step of no kind, or with no
// workload, says so.
func TestExecStepDispatch(t *testing.T) {
	env := &stepEnv{bed: topoBed{}, expected: &counter{}, finished: &counter{}, failed: &counter{}}
	cmd := &command.Spec{Clients: []command.Program{{Host: "c", Run: []string{"true"}}}, Timeout: time.Second}
	for _, tc := range []struct {
		kind results.Kind
		step scenario.Step
		want string
	}{
		{results.Command, scenario.Step{Spec: cmd}, "a command workload runs in emulated hosts"},
		{results.EventDB, scenario.Step{Spec: cmd}, "an eventdb step with a *command.Spec spec"},
		{results.Throughput, scenario.Step{Spec: cmd}, "a throughput step with a *command.Spec spec"},
		{results.Probe, scenario.Step{}, "a step with no workload"},
		{"toy", scenario.Step{Spec: cmd}, `no driver for workload kind "toy"`},
	} {
		if _, err := execStep(context.Background(), env, tc.kind, tc.step); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.kind, err, tc.want)
		}
	}
}
