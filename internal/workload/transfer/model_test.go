package transfer

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// modelEnv is two hosts a and b on a path of rtt and bps each way.
func modelEnv(rtt time.Duration, bps float64) *kindtest.ModelEnv {
	facts := kind.PathFacts{RTT: rtt, BottleneckBPS: bps, MTU: 1500}
	return &kindtest.ModelEnv{HostNames: []string{"a", "b"},
		Paths: map[[2]string]kind.PathFacts{{"a", "b"}: facts, {"b", "a"}: facts}}
}

// TestModelBuild: the sender's streams, reads and CPU side by side, the
// receiver's receives, writes and CPU, and back for a round trip.
func TestModelBuild(t *testing.T) {
	env := modelEnv(100*time.Millisecond, 100e6)
	// Each of two streams sends 5 MB (3453 segments) under a 64 KiB window
	// (45.26 segments) over 100 ms: 10, 20, 40 segments, then 45.26 a
	// round trip.
	segs := 65536.0 / 1448
	window := kind.StreamRateBPS(env, env.Paths[[2]string{"a", "b"}], "a", "b", kind.TCPFlow{Window: 64 << 10, Streams: 2, Bytes: 5e6})
	if want := 5e6 * 8 / (0.3 + (5e6/1448-70)/segs*0.1); math.Abs(window-want) > 1e-6*want {
		t.Fatalf("a stream's rate %.0f bit/s, want %.0f", window, want)
	}
	mss := 1448.0
	path := 100e6 * (mss / 1500) // the TCP payload of the path's IP packets
	handshake := sim.Op{Do: sim.Sleep, Seconds: 0.1}
	mark := func(l string) sim.Op { return sim.Op{Do: sim.Mark, Label: l} }
	wire := 1 / kind.PathFacts{MTU: 1500}.WireShare() // the TCP/IP headers
	send := func(to string, n int64, rate float64) sim.Op {
		return sim.Op{Do: sim.Send, To: to, Bytes: int64(math.Round(float64(n) * wire)), RateBPS: rate * wire}
	}
	exec := func(s float64) []sim.Op { return []sim.Op{{Do: sim.Exec, Seconds: s}} }
	recv := []sim.Op{{Do: sim.Recv}}
	for _, tc := range []struct {
		name string
		step Step
		want []sim.Actor
	}{
		{"two streams", Step{From: "a", To: "b", Size: 10e6, Streams: 2, Window: 64 << 10},
			[]sim.Actor{
				{Name: "s0/transfer.a", Host: "a", Ops: []sim.Op{mark(markThereStart), handshake, {Do: sim.Par, Branches: [][]sim.Op{
					{send("s0/transfer.b", 5e6, window)}, {send("s0/transfer.b", 5e6, window)}, {{Do: sim.Read, Bytes: 10e6}}, exec(0.01)}}}},
				{Name: "s0/transfer.b", Host: "b", Ops: []sim.Op{{Do: sim.Par, Branches: [][]sim.Op{
					recv, recv, {{Do: sim.Write, Bytes: 10e6}}, exec(0.01)}}, mark(markThereEnd)}},
			}},
		// Serial: each stream reads its share, then sends it; compressed
		// to half on the wire, at the CPU's cost; and back.
		{"serial compressed round trip", Step{From: "a", To: "b", Size: 1e9, Streams: 1, Serial: true, Compress: true, Roundtrip: true},
			[]sim.Actor{
				{Name: "s0/transfer.a", Host: "a", Ops: []sim.Op{mark(markThereStart), handshake,
					{Do: sim.Par, Branches: [][]sim.Op{{{Do: sim.Read, Bytes: 1e9}, send("s0/transfer.b", 5e8, path)}, exec(3.5)}},
					{Do: sim.Par, Branches: [][]sim.Op{recv, {{Do: sim.Write, Bytes: 1e9}}, exec(2)}}, mark(markBackEnd)}},
				{Name: "s0/transfer.b", Host: "b", Ops: []sim.Op{
					{Do: sim.Par, Branches: [][]sim.Op{recv, {{Do: sim.Write, Bytes: 1e9}}, exec(2)}}, mark(markThereEnd), handshake,
					{Do: sim.Par, Branches: [][]sim.Op{{{Do: sim.Read, Bytes: 1e9}, send("s0/transfer.a", 5e8, path)}, exec(3.5)}}}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := model.Build(env, &tc.step)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("actors\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestModelRead: each leg from its start to the end of its receiver's
// part, its figures as runStep names them, a job per leg.
func TestModelRead(t *testing.T) {
	env := modelEnv(100*time.Millisecond, 100e6)
	step := Step{From: "a", To: "b", Size: 1e9, Streams: 1, Compress: true, Roundtrip: true}
	out := &sim.Output{End: 30, Marks: []sim.MarkAt{
		{Actor: "s0/transfer.a", Label: markThereStart, T: 0, Iter: -1},
		{Actor: "s0/transfer.b", Label: markThereEnd, T: 10, Iter: -1},
		{Actor: "s0/transfer.a", Label: markBackEnd, T: 30, Iter: -1},
	}}
	o, err := model.Read(env, &step, out)
	if err != nil {
		t.Fatal(err)
	}
	want := results.Metrics{
		results.Streams: 1, results.Compress: 1, results.ChecksumOK: 1, results.TestsAlongside: 0,
		results.ThroughputMbps: 800,
		"there_mbps":           800, "there_seconds": 10, "there_compression_ratio": 2, "there_sender_cpu_pct": 35,
		"back_mbps": 400, "back_seconds": 20, "back_compression_ratio": 2, "back_sender_cpu_pct": 17.5,
	}
	if !reflect.DeepEqual(o.Metrics, want) {
		t.Errorf("figures %v\nwant %v", o.Metrics, want)
	}
	epoch := time.Unix(0, 0).UTC()
	wantJobs := []job.Record{
		{ID: 0, Host: "a", Subject: "a->b", Start: epoch, End: epoch.Add(10 * time.Second), Bytes: 1e9, Status: job.OK},
		{ID: 1, Host: "b", Subject: "b->a", Start: epoch.Add(10 * time.Second), End: epoch.Add(30 * time.Second), Bytes: 1e9, Status: job.OK},
	}
	if !reflect.DeepEqual(o.Jobs, wantJobs) {
		t.Errorf("jobs %+v\nwant %+v", o.Jobs, wantJobs)
	}

	out.Marks = out.Marks[:2]
	if _, err := model.Read(env, &step, out); err == nil || !strings.Contains(err.Error(), "no end of the transfer's leg from b to a") {
		t.Errorf("a leg without its end: error %v", err)
	}
}

// TestModelSimulated runs the model on the simulator, checked against the
// closed form: 10 MB over a 10 Mbit/s path take 8 s over the TCP payload's
// share of the IP packets (1448/1500), after the connections' round trip
// (4 ms) and before the last byte's one-way delay (2 ms); written to a disk
// of 0.5 MB/s they take 20 s; and back as long again.
func TestModelSimulated(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write float64 // b's disk, bytes/s
		step  Step
		there float64 // seconds
	}{
		{"path", 0, Step{From: "a", To: "b", Size: 10e6, Streams: 1}, 8*1500/1448.0 + 0.006},
		{"streams", 0, Step{From: "a", To: "b", Size: 10e6, Streams: 4, Roundtrip: true}, 8*1500/1448.0 + 0.006},
		{"disk", 0.5e6, Step{From: "a", To: "b", Size: 10e6, Streams: 2}, 20.004},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := []sim.Host{{Name: "a", Cores: 1, Speed: 1}, {Name: "b", Cores: 1, Speed: 1, DiskReadBPS: tc.write, DiskWriteBPS: tc.write}}
			plat, env := kindtest.Star(hosts, 10e6, time.Millisecond)
			actors, err := model.Build(env, &tc.step)
			if err != nil {
				t.Fatal(err)
			}
			out := kindtest.Simulate(t, plat, actors)
			o, err := model.Read(env, &tc.step, out)
			if err != nil {
				t.Fatal(err)
			}
			got := o.Metrics["there_seconds"]
			t.Logf("%s: there in %.3f s (closed form %.3f), %.3f Mbit/s; back in %.3f s", tc.name, got, tc.there, o.Metrics[results.ThroughputMbps], o.Metrics["back_seconds"])
			if math.Abs(got-tc.there) > 0.02*tc.there {
				t.Errorf("there in %.3f s, want about %.3f", got, tc.there)
			}
			if back, ok := o.Metrics["back_seconds"]; tc.step.Roundtrip && (!ok || math.Abs(back-tc.there) > 0.02*tc.there) {
				t.Errorf("back in %.3f s, want about %.3f", back, tc.there)
			}
			legs := 1
			if tc.step.Roundtrip {
				legs = 2
			}
			if len(o.Jobs) != legs {
				t.Errorf("jobs %+v", o.Jobs)
			}
		})
	}
}
