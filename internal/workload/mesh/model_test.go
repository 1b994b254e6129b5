package mesh

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// TestModelPlanIsTheLoops: the model draws a node's transfers as its loop
// does: a real loop's transfers (to two peers weighted 1:2, of two sizes)
// are the first of the model's plan for the node, in order.
func TestModelPlanIsTheLoops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Listen(0, bind.Local{Addr: "127.0.0.1"}, token.Token{}, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ctx)
	addr := fmt.Sprintf("127.0.0.1:%d", srv.Port())
	m := &Spec{Hosts: []string{"a", "b", "c"}, Sizes: []int64{64 << 10, 128<<10 + 3}, Streams: 2, MaxWait: 5 * time.Millisecond, Duration: 200 * time.Millisecond}
	env := &kindtest.ModelEnv{HostNames: m.Hosts, Step: 11, Default: kind.PathFacts{RTT: time.Millisecond, BottleneckBPS: 10e9, MTU: 1500},
		Paths: map[[2]string]kind.PathFacts{{"a", "c"}: {RTT: time.Millisecond, BottleneckBPS: 20e9, MTU: 1500}}}
	var mu sync.Mutex
	var recs []job.Record
	spec := NodeSpec{Host: "a", Peers: []Peer{{Name: "b", Address: addr, Weight: 10e3}, {Name: "c", Address: addr, Weight: 20e3}},
		Sizes: m.Sizes, Streams: m.Streams, MaxWait: m.MaxWait, Duration: m.Duration, Seed: env.Seed()}
	if _, err := Loop(ctx, spec, nil, func(r job.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }); err != nil {
		t.Fatal(err)
	}
	nodes, err := m.nodes(env)
	if err != nil {
		t.Fatal(err)
	}
	plan := nodes[0].plan
	if len(recs) == 0 || len(recs) > len(plan) {
		t.Fatalf("the loop made %d transfers, the model plans %d", len(recs), len(plan))
	}
	peers := map[string]int{}
	for k, r := range recs {
		if want := "a<->" + plan[k].peer; r.Subject != want || r.Bytes != 2*plan[k].size {
			t.Errorf("transfer %d: %s of %d bytes, the model plans %s of %d", k, r.Subject, r.Bytes, want, 2*plan[k].size)
		}
		peers[plan[k].peer]++
	}
	t.Logf("the loop made %d transfers (%v), the model plans %d", len(recs), peers, len(plan))
}

// TestModelBuild: a sink per host, and per node a gate, its closer and
// its loop of gated transfers, streams there as capped sends and back as
// calls.
func TestModelBuild(t *testing.T) {
	m := &Spec{Hosts: []string{"a", "b"}, Sizes: []int64{2000}, Streams: 2, MaxWait: 0, Duration: time.Second, Disk: true}
	// 2000 bytes at 8 Mbit/s each way: the least a transfer takes is 2 ms.
	env := &kindtest.ModelEnv{HostNames: m.Hosts, Default: kind.PathFacts{RTT: 10 * time.Millisecond, BottleneckBPS: 8e6, MTU: 1500}}
	actors, err := model.Build(env, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(actors) != 8 {
		t.Fatalf("%d actors, want 4 on each host", len(actors))
	}
	sink, gate, closer, node := actors[0], actors[1], actors[2], actors[3]
	if sink.Name != "s0/mesh.sink.a" || !sink.Daemon || sink.Ops[0].Do != sim.Serve {
		t.Errorf("sink %+v", sink)
	}
	if len(node.Ops) != 501 {
		t.Fatalf("node a plans %d transfers, want 501 (2 ms each for 1 s)", len(node.Ops))
	}
	if gate.Name != "s0/mesh.gate.a" || !gate.Daemon || gate.Ops[0].Stock != 2*501+1 {
		t.Errorf("gate %+v", gate)
	}
	call := sim.Op{Do: sim.Call, To: gate.Name, Bytes: 1}
	if want := []sim.Op{{Do: sim.Sleep, Seconds: 1}, {Do: sim.Repeat, UntilRefused: true, Body: []sim.Op{call}}}; !closer.Daemon || !reflect.DeepEqual(closer.Ops, want) {
		t.Errorf("closer %+v", closer)
	}
	// The path's TCP payload shared by the streams, each sending its
	// headers too: 1000 bytes are 1036 on the wire, at 4 Mbit/s.
	wire := 1 / kind.PathFacts{MTU: 1500}.WireShare()
	capBPS := kind.StreamRateBPS(env, env.Default, "a", "b", kind.TCPFlow{Streams: 2, Bytes: 1000}) * wire
	if math.Abs(capBPS-4e6) > 1e-6 {
		t.Errorf("a stream's cap %.0f bit/s on the wire, want 4 Mbit/s", capBPS)
	}
	want := sim.Op{Do: sim.Repeat, Times: 1, UntilRefused: true, Body: []sim.Op{
		call, {Do: sim.Sleep}, call, {Do: sim.Mark, Label: markStart},
		{Do: sim.Par, Branches: [][]sim.Op{
			{{Do: sim.Send, To: "s0/mesh.sink.b", Bytes: 1036, RateBPS: capBPS}}, {{Do: sim.Send, To: "s0/mesh.sink.b", Bytes: 1036, RateBPS: capBPS}},
			{{Do: sim.Read, Bytes: 2000}}}},
		{Do: sim.Par, Branches: [][]sim.Op{
			{{Do: sim.Call, To: "s0/mesh.sink.b", Bytes: headerSz, Reply: 1036}}, {{Do: sim.Call, To: "s0/mesh.sink.b", Bytes: headerSz, Reply: 1036}},
			{{Do: sim.Write, Bytes: 2000}}}},
		{Do: sim.Mark, Label: markEnd},
	}}
	if node.Name != "s0/mesh.node.a" || node.Daemon || !reflect.DeepEqual(node.Ops[0], want) {
		t.Errorf("node's first transfer %+v\nwant %+v", node.Ops[0], want)
	}
}

// TestModelRead: the k-th start and end of a node are its plan's k-th
// transfer; one the simulation ended during is cancelled; the figures are
// run's.
func TestModelRead(t *testing.T) {
	m := &Spec{Hosts: []string{"a", "b"}, Sizes: []int64{1e6}, Streams: 1, MaxWait: 0, Duration: 10 * time.Second}
	env := &kindtest.ModelEnv{HostNames: m.Hosts, Default: kind.PathFacts{RTT: 20 * time.Millisecond, BottleneckBPS: 1e6, Loss: 0.01, MTU: 1500}}
	out := &sim.Output{End: 7, Marks: []sim.MarkAt{
		{Actor: "s0/mesh.node.a", Label: markStart, T: 0, Iter: 0},
		{Actor: "s0/mesh.node.b", Label: markStart, T: 0, Iter: 0},
		{Actor: "s0/mesh.node.a", Label: markEnd, T: 4, Iter: 0},
		{Actor: "s0/mesh.node.a", Label: markStart, T: 4, Iter: 0},
		{Actor: "s0/mesh.node.b", Label: markEnd, T: 6, Iter: 0},
	}}
	o, err := model.Read(env, m, out)
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(0, 0).UTC()
	at := func(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }
	want := []job.Record{
		{ID: 0, Host: "a", Subject: "a<->b", Start: at(0), End: at(4), Bytes: 2e6, Status: job.OK, TCPRTTms: 20, TCPRetransmits: 7},
		{ID: 1, Host: "a", Subject: "a<->b", Start: at(4), End: at(7), Status: job.Cancelled, Reason: "the simulation ended before the transfer did"},
		{ID: 1_000_000, Host: "b", Subject: "b<->a", Start: at(0), End: at(6), Bytes: 2e6, Status: job.OK, TCPRTTms: 20, TCPRetransmits: 7},
	}
	if !reflect.DeepEqual(o.Jobs, want) {
		t.Errorf("jobs %+v\nwant %+v", o.Jobs, want)
	}
	for k, v := range map[string]float64{results.Transfers: 3, results.Bytes: 4e6, results.AggregateMbps: 4e6 * 8 / 7 / 1e6, results.MeanWallclockS: 5} {
		if got := o.Metrics[k]; math.Abs(got-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}

	out.Marks = append(out.Marks, sim.MarkAt{Actor: "s0/mesh.node.b", Label: markStart, T: 6}, sim.MarkAt{Actor: "s0/mesh.node.b", Label: markStart, T: 6.5})
	if _, err := model.Read(env, m, out); err == nil || !strings.Contains(err.Error(), "node b started 3 transfers of the 2 planned") {
		t.Errorf("more transfers than planned: error %v", err)
	}
}

// TestModelSimulated runs the model on the simulator, checked against the
// closed form: on links of 10 Mbit/s, 10 MB there and back take 16 s, 1500/1448
// more with the TCP/IP headers, and 5% more as the two nodes' transfers
// cross in opposite directions (SimGrid loads a flow's way back with its
// ACKs, 5% of its rate: 17.4 s); transfers of 1 MB take 1.74 s, and those
// that would start after 5.5 s are not made.
func TestModelSimulated(t *testing.T) {
	hosts := []sim.Host{{Name: "a", Cores: 1, Speed: 1}, {Name: "b", Cores: 1, Speed: 1}}
	for _, tc := range []struct {
		name      string
		size      int64
		duration  time.Duration
		transfers int
		wallclock float64
	}{
		{"one each", 10e6, time.Second, 2, 16 * 1.05 * 1500 / 1448},
		{"until the duration", 1e6, 5500 * time.Millisecond, 8, 1.6 * 1.05 * 1500 / 1448},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plat, env := kindtest.Star(hosts, 10e6, time.Millisecond)
			m := &Spec{Hosts: []string{"a", "b"}, Sizes: []int64{tc.size}, Streams: 2, Duration: tc.duration}
			actors, err := model.Build(env, m)
			if err != nil {
				t.Fatal(err)
			}
			out := kindtest.Simulate(t, plat, actors)
			o, err := model.Read(env, m, out)
			if err != nil {
				t.Fatal(err)
			}
			got := o.Metrics[results.MeanWallclockS]
			t.Logf("%s: %v transfers of %.3f s on average (closed form %d of %.3f s), %.3f Mbit/s, simulated to %.3f s",
				tc.name, o.Metrics[results.Transfers], got, tc.transfers, tc.wallclock, o.Metrics[results.AggregateMbps], out.End)
			if o.Metrics[results.Transfers] != float64(tc.transfers) || math.Abs(got-tc.wallclock) > 0.02*tc.wallclock {
				t.Errorf("%v transfers of %.3f s, want %d of about %.3f", o.Metrics[results.Transfers], got, tc.transfers, tc.wallclock)
			}
		})
	}
}

// TestModelPeers: a peer weighs its site access link's rate when the
// platform gives it, as the real node's does, else the path's bottleneck.
func TestModelPeers(t *testing.T) {
	m := &Spec{Hosts: []string{"a", "b", "c"}, Streams: 1}
	env := &kindtest.ModelEnv{HostNames: m.Hosts, Default: kind.PathFacts{RTT: time.Millisecond, BottleneckBPS: 20e6, MTU: 1500},
		Paths: map[[2]string]kind.PathFacts{{"a", "c"}: {RTT: time.Millisecond, BottleneckBPS: 20e6, AccessBPS: 1e9, MTU: 1500}}}
	peers, _, err := m.modelPeers(env, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Peer{{Name: "b", Weight: 20}, {Name: "c", Weight: 1000}}; !reflect.DeepEqual(peers, want) {
		t.Errorf("peers %+v, want %+v", peers, want)
	}
}
