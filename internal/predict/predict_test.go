package predict

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// platBed is a test-bed with routers, cross traffic, jitter, loss, CPU
// quotas, a disk cap and a link without a rate.
const platBed = `name: plat
routers:
  r1: {}
  r2: {}
links:
  - {between: [a, r1], rate: 100Mbit, delay: 1ms}
  - between: [r1, r2]
    rate: 10Mbit
    delay: 10ms
    forward: {cross: {rate: 4Mbit, pattern: constant}}
    reverse: {jitter: 1ms}
  - {between: [r2, b], rate: 100Mbit, delay: 1ms, loss: 1%}
  - {between: [c, a]}
hosts:
  a: {cpus: 0.5}
  b: {cpus: 2.5, disk: {read: 3MB/s, write: 5MB/s}}
  c: {}
`

func platTopology(t *testing.T, text string) (*scenario.File, *topology.Topology) {
	t.Helper()
	f, err := scenario.Parse("plat.yaml", []byte(text), false)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	return f, topo
}

// TestPlatform: the hosts' quotas become whole cores with a CFS quota, their disk caps
// disks; each direction crossed is a link with its rate less its cross
// traffic's mean and its delay; each pair that talks (a Call's reply too)
// routes through its path's directions in order, routers included; and
// what is left out of the directions crossed is named.
func TestPlatform(t *testing.T) {
	_, topo := platTopology(t, platBed)
	p := newPlatform(topo, 4)
	actors := []sim.Actor{
		{Name: "server", Host: "b", Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
		{Name: "client", Host: "a", Ops: []sim.Op{{Do: sim.Repeat, Times: 2, Body: []sim.Op{{Do: sim.Call, To: "server", Bytes: 100, Reply: 1000}}}}},
		{Name: "pusher", Host: "c", Ops: []sim.Op{{Do: sim.Par, Branches: [][]sim.Op{{{Do: sim.Send, To: "client", Bytes: 10}}}}}},
	}
	plat, leftOut, err := p.program(actors)
	if err != nil {
		t.Fatal(err)
	}
	want := sim.Platform{
		Hosts: []sim.Host{
			{Name: "a", Cores: 1, Speed: 1, Quota: 0.5},
			{Name: "b", Cores: 3, Speed: 1, Quota: 2.5, DiskReadBPS: 3e6, DiskWriteBPS: 5e6},
			{Name: "c", Cores: 4, Speed: 1},
		},
		Links: []sim.Link{
			{Name: "a->r1", BPS: 100e6, Latency: 0.001}, {Name: "r1->a", BPS: 100e6, Latency: 0.001},
			{Name: "r1->r2", BPS: 6e6, Latency: 0.01}, {Name: "r2->r1", BPS: 10e6, Latency: 0.01},
			{Name: "r2->b", BPS: 100e6, Latency: 0.001}, {Name: "b->r2", BPS: 100e6, Latency: 0.001},
			{Name: "c->a", BPS: UnlimitedBPS},
		},
		Routes: []sim.Route{
			{From: "a", To: "b", Links: []string{"a->r1", "r1->r2", "r2->b"}},
			{From: "b", To: "a", Links: []string{"b->r2", "r2->r1", "r1->a"}},
			{From: "c", To: "a", Links: []string{"c->a"}},
		},
	}
	if !reflect.DeepEqual(plat, want) {
		got, _ := json.MarshalIndent(plat, "", " ")
		t.Errorf("platform\n%s", got)
	}
	if len(leftOut) != 2 || !strings.Contains(leftOut[0], "jitter of r2->r1") || !strings.Contains(leftOut[1], "c->a has no rate") {
		t.Errorf("left out %q", leftOut)
	}

	for _, tc := range []struct {
		name   string
		actors []sim.Actor
		want   string
	}{
		{"two actors alike", []sim.Actor{{Name: "x", Host: "a"}, {Name: "x", Host: "b"}}, `two actors named "x"`},
		{"an unknown host", []sim.Actor{{Name: "x", Host: "z"}}, `host "z", which the test-bed does not have`},
		{"an unknown peer", []sim.Actor{{Name: "x", Host: "a", Ops: []sim.Op{{Do: sim.Send, To: "y"}}}}, `sends to "y", which no actor`},
	} {
		if _, _, err := p.program(tc.actors); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// A trace-driven direction cannot be simulated: a step that crosses
	// it is refused with the reason, and one that does not runs.
	topo.Dirs[0].Config.Trace = &scenario.Trace{}
	p = newPlatform(topo, 4)
	if _, _, err := p.program(actors); err == nil || !strings.Contains(err.Error(), "crosses a->r1 follows a trace") {
		t.Errorf("a route across a trace: %v", err)
	}
	apart := []sim.Actor{{Name: "x", Host: "c", Ops: []sim.Op{{Do: sim.Send, To: "y"}}}, {Name: "y", Host: "a", Daemon: true}}
	if _, _, err := p.program(apart); err != nil {
		t.Errorf("a step crossing nothing: %v", err)
	}
}

// TestPath: what the platform says of a path: the delays there and back,
// the lowest rate cross traffic leaves, the loss along it, its MTU.
func TestPath(t *testing.T) {
	_, topo := platTopology(t, platBed)
	env := &modelEnv{plat: newPlatform(topo, 4)}
	for _, tc := range []struct {
		from, to string
		want     kind.PathFacts
	}{
		{"a", "b", kind.PathFacts{RTT: 24 * time.Millisecond, BottleneckBPS: 6e6, Loss: 0.01, MTU: 1500}},
		{"b", "a", kind.PathFacts{RTT: 24 * time.Millisecond, BottleneckBPS: 10e6, Loss: 0.01, MTU: 1500}},
		{"c", "a", kind.PathFacts{BottleneckBPS: UnlimitedBPS, MTU: 1500}},
		{"a", "a", kind.PathFacts{BottleneckBPS: LoopbackBPS, MTU: 1500}},
	} {
		got, err := env.Path(tc.from, tc.to)
		if err != nil || got.RTT.Round(time.Microsecond) != tc.want.RTT || got.BottleneckBPS != tc.want.BottleneckBPS ||
			got.MTU != tc.want.MTU || got.Loss-tc.want.Loss > 1e-12 || tc.want.Loss-got.Loss > 1e-12 {
			t.Errorf("Path(%s, %s) = %+v, %v; want %+v", tc.from, tc.to, got, err, tc.want)
		}
	}
	if _, err := env.Path("a", "nowhere"); err == nil {
		t.Error("a path to no host")
	}
	if env.Param("x", 3) != 3 || (&modelEnv{params: map[string]float64{"x": 5}}).Param("x", 3) != 5 {
		t.Error("Param does not give the set value over the declared one")
	}
	if hosts := env.Hosts(); !slices.Equal(hosts, []string{"a", "b", "c"}) {
		t.Errorf("hosts %v", hosts)
	}
}

// TestPrediction runs a scenario of the toy kind through the controller
// with a Predictor on a fake simulator: the run is stored as simulated,
// with the models' and the platform's assumptions as its events, and each
// step's figures from the toy model's outcome and the totals (host CPU,
// a link's rate with its cross traffic); a kind without a model is
// refused, step by step.
func TestPrediction(t *testing.T) {
	defer kinds.Register(toyKind)()
	text := platBed + `workloads:
  - simtoy: {from: a, to: b, bytes: 6MB, cpu: 0.5}
    sweep: {bytes: [6MB, 12MB]}
  - name: mine
    command: {clients: [{host: a, run: ["true"]}]}
`
	ar, err := archive.Open(filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	fake := &fakeSim{}
	p := &Predictor{Run: fake.run, Cores: 4, Params: map[string]float64{"toy_cpu_s": 1}}
	res, err := controller.Run(context.Background(), controller.Options{Source: "plat.yaml", Text: []byte(text), Archive: ar, Simulate: p})
	if err != nil {
		t.Fatal(err)
	}
	progs := fake.programs()
	if res.Backend != controller.BackendSimulated || len(res.Steps) != 3 || len(progs) != 2 {
		t.Fatalf("result %+v, %d programs", res, len(progs))
	}
	s := res.Steps[0]
	end := 1 + 0.012 + 6e6*8/6e6
	want := map[string]float64{
		"throughput_mbps":             6e6 * 8 / (end - 1) / 1e6,
		"cpu_pct.a":                   100 / end,
		"cpu_quota_pct.a":             200 / end,
		"sender_cpu_pct":              100 / end,
		"link_mbps.r1->r2":            (6e6*8/end + 4e6) / 1e6,
		"link_mbps.r2->r1":            0,
		"link_mbps.a->r1":             6e6 * 8 / end / 1e6,
		"link_utilization_pct.r1->r2": 100 * (6e6*8/end + 4e6) / 10e6,
	}
	for k, v := range want {
		if got, ok := s.Metrics[k]; !ok || got-v > 1e-3 || v-got > 1e-3 {
			t.Errorf("%s = %v (%v), want %v", k, got, ok, v)
		}
	}
	if s.Status != archive.StatusDone || s.Seconds != end || s.TestbedLimited {
		t.Errorf("step %+v", s)
	}
	if c := res.Steps[2]; c.Status != archive.StatusFailed || !strings.Contains(c.Reason, "the command kind has no simulation model: wanlab predict cannot simulate its steps") {
		t.Errorf("command step %+v", c)
	}
	prog := progs[1]
	if prog.Actors[0].Name != "s1/sink.b" {
		t.Errorf("actor %q, want the step's prefix before the kind's name", prog.Actors[0].Name)
	}
	if prog.Config.Seed != progs[0].Config.Seed+1 || prog.Config.TCPWindow != TCPWindow || prog.Actors[1].Ops[0].Seconds != 1 || prog.Actors[1].Ops[2].Bytes != 12e6 {
		t.Errorf("program %+v", prog)
	}
	events, err := ar.Events(context.Background(), res.Run)
	if err != nil {
		t.Fatal(err)
	}
	var said string
	for _, e := range events {
		said += e.Message + "\n"
	}
	for _, w := range []string{"assumption: simtoy model: the flow starts at once", "assumption: the models' parameters set for this prediction: toy_cpu_s=1",
		"left out: the steps of workload mine are refused: the command kind has no simulation model", "assumption: queues add no delay"} {
		if !strings.Contains(said, w) {
			t.Errorf("events\n%s\nlack %q", said, w)
		}
	}
}

// TestSimulateRefuses: a step is refused before anything is simulated
// when its kind has no model or the predictor has no simulator.
func TestSimulateRefuses(t *testing.T) {
	f, _ := platTopology(t, platBed)
	p := &Predictor{}
	if _, err := p.Simulate(context.Background(), controller.SimStep{}); err == nil || !strings.Contains(err.Error(), "before the scenario's platform") {
		t.Errorf("before Begin: %v", err)
	}
	if _, err := p.Begin(f); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind results.Kind
		want string
	}{
		{results.Command, "the command kind has no simulation model: wanlab predict cannot simulate its steps (emulate them with wanlab run)"},
		{"nosuch", "the nosuch kind has no simulation model"},
	} {
		if _, err := p.Simulate(context.Background(), controller.SimStep{Workload: scenario.Workload{Kind: tc.kind}}); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.kind, err, tc.want)
		}
	}
}

// TestPerfectSwitch: two hosts of a site whose LAN changes nothing talk
// through a link of their own that changes nothing either (the simulator
// routes through links), beside the site's access directions.
func TestPerfectSwitch(t *testing.T) {
	_, topo := platTopology(t, "name: s\nsites:\n  x: {rate: 100Mbit, delay: 5ms}\nhosts:\n  a: {site: x}\n  b: {site: x}\n")
	plat, _, err := newPlatform(topo, 1).program([]sim.Actor{{Name: "s", Host: "b", Daemon: true}, {Name: "c", Host: "a", Ops: []sim.Op{{Do: sim.Call, To: "s"}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.Route{{From: "a", To: "b", Links: []string{"site x lan a->b"}}, {From: "b", To: "a", Links: []string{"site x lan b->a"}}}
	if !reflect.DeepEqual(plat.Routes, want) || len(plat.Links) != 2 || plat.Links[0] != (sim.Link{Name: "site x lan a->b", BPS: UnlimitedBPS}) {
		t.Errorf("routes %+v, links %+v", plat.Routes, plat.Links)
	}
}
