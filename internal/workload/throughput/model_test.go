package throughput

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// modelEnv is two hosts a and b on a path of rtt, bps and loss.
func modelEnv(rtt time.Duration, bps, loss float64) *kindtest.ModelEnv {
	facts := kind.PathFacts{RTT: rtt, BottleneckBPS: bps, Loss: loss, MTU: 1500}
	return &kindtest.ModelEnv{HostNames: []string{"a", "b"}, Step: 7,
		Paths: map[[2]string]kind.PathFacts{{"a", "b"}: facts, {"b", "a"}: facts}}
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// TestModelBuild: a sink on the receiver, a stream actor per stream on
// the sender that pings, then sends capped chunks beside their CPU.
func TestModelBuild(t *testing.T) {
	segs := 65536.0 / 1448 // a 64 KiB window
	for _, tc := range []struct {
		name    string
		step    Step
		env     *kindtest.ModelEnv
		wantCap float64
		tol     float64
	}{
		// 64 KiB over 100 ms: 5.24 Mbit/s per stream, under the 100 Mbit/s
		// path, less what slow start (10, 20, 40 segments) leaves out.
		{"window", Step{From: "a", To: "b", Protocol: "tcp", Streams: 2, Window: 64 << 10, Duration: 10 * time.Second},
			modelEnv(100*time.Millisecond, 100e6, 0), (100*segs - (segs - 10) - (segs - 20) - (segs - 40)) * 1448 * 8 / 10, 1e-9},
		// 1% loss over 20 ms: Reno's sawtooth over 500 round trips, near
		// Mathis's 1448*8/0.02*sqrt(1.5)/0.1 = 7.09 Mbit/s.
		{"loss", Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Duration: 10 * time.Second},
			modelEnv(20*time.Millisecond, 100e6, 0.01), 1448 * 8 / 0.02 * math.Sqrt(1.5) / 0.1, 0.05},
		// Nothing caps a stream but the path: each gets its share of the
		// TCP payload the path carries (1448 bytes of each 1500).
		{"path", Step{From: "a", To: "b", Protocol: "tcp", Streams: 4, Duration: 10 * time.Second},
			modelEnv(time.Millisecond, 10e6, 0), 10e6 * 1448 / 1500 / 4, 1e-9},
		// UDP: the target rate shared by the streams.
		{"udp", Step{From: "a", To: "b", Protocol: "udp", Streams: 2, Duration: 4 * time.Second, UDPRate: 8e6},
			modelEnv(10*time.Millisecond, 100e6, 0.5), 4e6, 1e-9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			actors, err := model.Build(tc.env, &tc.step)
			if err != nil {
				t.Fatal(err)
			}
			if len(actors) != 1+tc.step.Streams {
				t.Fatalf("%d actors, want a sink and %d streams", len(actors), tc.step.Streams)
			}
			// A TCP stream sends its headers too: 1500 bytes a 1448.
			wire := 1 / kind.PathFacts{MTU: 1500}.WireShare()
			if tc.step.Protocol == "udp" {
				wire = 1
			}
			got := actors[1].Ops[1].RateBPS / wire
			if !near(got, tc.wantCap, tc.tol) {
				t.Errorf("cap %.0f bit/s, want %.0f", got, tc.wantCap)
			}
			// expected/4 a chunk, the chunks the expected rate moves.
			expected := min(got, tc.env.Paths[[2]string{"a", "b"}].BottleneckBPS/float64(tc.step.Streams)) / 8 * tc.step.Duration.Seconds()
			chunk := min(max(int64(expected/chunksPerTest), minChunk), maxChunk)
			chunks := int(math.Ceil(expected / float64(chunk)))
			sink := actors[0]
			if sink.Name != "s0/throughput.sink.b" || sink.Host != "b" || !sink.Daemon || sink.Ops[0].Do != sim.Serve {
				t.Errorf("sink %+v", sink)
			}
			for _, a := range actors[1:] {
				if a.Host != "a" || a.Daemon || len(a.Ops) != 5 {
					t.Fatalf("stream %+v", a)
				}
				ping, rep := a.Ops[1], a.Ops[3]
				if ping.Do != sim.Send || ping.Bytes != 1 || ping.To != sink.Name || !near(ping.RateBPS, got*wire, 1e-12) {
					t.Errorf("ping %+v, want 1 byte capped at %.0f", ping, got*wire)
				}
				if rep.Do != sim.Repeat || rep.Times != chunks || len(rep.Body) != 2 || rep.Body[1].Label != markChunk {
					t.Fatalf("chunks %+v, want %d", rep, chunks)
				}
				if tail := a.Ops[4]; tail.Do != sim.Send || tail.Bytes != max(1, int64(math.Round(float64(chunk)*wire))/16) || tail.RateBPS != rep.Body[0].Branches[0][0].RateBPS {
					t.Errorf("tail %+v, want 1/16 chunk", tail)
				}
				par := rep.Body[0]
				send, exec := par.Branches[0][0], par.Branches[1][0]
				if par.Do != sim.Par || send.Bytes != int64(math.Round(float64(chunk)*wire)) || !near(send.RateBPS, got*wire, 1e-12) || !near(exec.Seconds, float64(chunk)/1e9*defaultSenderCPU, 1e-9) {
					t.Errorf("chunk %+v, want %d bytes (%d on the wire) capped at %.0f beside its CPU", par, chunk, int64(math.Round(float64(chunk)*wire)), got*wire)
				}
			}
		})
	}
}

// TestModelParams: the efficiency is read per path, then for all paths,
// and the autotuned window is a param.
func TestModelParams(t *testing.T) {
	env := modelEnv(100*time.Millisecond, 1e9, 0)
	env.Fitted = map[string]float64{"tcp_efficiency.a->b": 0.5, kind.ParamAutoWindow: 1 << 20}
	actors, err := model.Build(env, &Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Slow start up to the 724 segments of 1 MiB in 1 s (10 round trips),
	// at half of it, 1500 bytes on the wire a segment.
	if got, want := actors[1].Ops[1].RateBPS, 0.5*(10+20+40+80+160+320+640+3*(1<<20)/1448.0)*1500*8; !near(got, want, 1e-9) {
		t.Errorf("cap %.0f, want %.0f", got, want)
	}
	for _, p := range env.Asked() {
		if name, _, _ := strings.Cut(p, "."); !hasParam(name) {
			t.Errorf("asked for %s, not among the model's params", p)
		}
	}
}

func hasParam(name string) bool {
	for _, p := range model.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

// streamMarks are a stream's marks: start at 0, a ping of latency, then
// chunks each of latency plus busy seconds.
func streamMarks(actor string, latency, busy float64, chunks int) []sim.MarkAt {
	m := []sim.MarkAt{{Actor: actor, Label: markStart, Iter: -1}, {Actor: actor, Label: markPing, T: latency, Iter: -1}}
	for i := range chunks {
		m = append(m, sim.MarkAt{Actor: actor, Label: markChunk, T: latency + float64(i+1)*(latency+busy), Iter: i})
	}
	return m
}

// TestModelRead: each stream's rate over the chunks that ended within the
// duration, less the start-up latency of each; the sum over the duration
// less one start-up.
func TestModelRead(t *testing.T) {
	tcp := Step{From: "a", To: "b", Protocol: "tcp", Streams: 2, Window: 64 << 10, Duration: 10 * time.Second}
	udp := Step{From: "a", To: "b", Protocol: "udp", Streams: 1, Duration: 4 * time.Second, UDPRate: 8e6}
	env := modelEnv(100*time.Millisecond, 100e6, 0.01)
	p, err := tcp.plan(modelEnv(100*time.Millisecond, 100e6, 0))
	if err != nil {
		t.Fatal(err)
	}
	busy := float64(p.chunk) * 8 / 5.24288e6 // a chunk at 5.24 Mbit/s
	for _, tc := range []struct {
		name  string
		step  Step
		env   *kindtest.ModelEnv
		marks []sim.MarkAt
		want  results.Metrics
		err   string
	}{
		// Chunks at 5.24 Mbit/s a stream, each after a latency of 0.05 s;
		// 14 end within 10 s.
		{name: "tcp", step: tcp, env: modelEnv(100*time.Millisecond, 100e6, 0),
			marks: append(streamMarks("s0/throughput.a.0", 0.05, busy, 20), streamMarks("s0/throughput.a.1", 0.05, busy, 20)...),
			want: results.Metrics{results.ThroughputMbps: 2 * 5.24288 * 9.95 / 10, results.Streams: 2, results.WindowBytes: 65536,
				results.Retransmits: 0, results.TestsAlongside: 0,
				results.SenderCPUPct: 100 * 2 * 5.24288e6 * 0.995 / 8e9 * defaultSenderCPU, results.ReceiverCPUPct: 100 * 2 * 5.24288e6 * 0.995 / 8e9 * defaultReceiverCPU}},
		// The path carries 6 of the 8 Mbit/s, and loses 1% of them.
		{name: "udp", step: udp, env: env,
			marks: streamMarks("s0/throughput.a.0", 0.01, 1e6*8/6e6, 5),
			want: results.Metrics{results.ThroughputMbps: 6 * 0.99, results.Streams: 1, results.WindowBytes: 0, results.TestsAlongside: 0,
				results.LostPercent: 100 * (1 - 6*0.99/8), results.JitterMs: 0,
				results.SenderCPUPct: 100 * 6e6 * 0.99 / 8e9 * defaultSenderCPU, results.ReceiverCPUPct: 100 * 6e6 * 0.99 / 8e9 * defaultReceiverCPU}},
		{name: "too slow", step: tcp, env: modelEnv(100*time.Millisecond, 100e6, 0),
			marks: append(streamMarks("s0/throughput.a.0", 0.05, 20, 1), streamMarks("s0/throughput.a.1", 0.05, busy, 20)...),
			err:   fmt.Sprintf("stream 1 of the throughput test: no chunk of %d bytes ended within the test's 10 s", p.chunk)},
		{name: "no marks", step: tcp, env: modelEnv(100*time.Millisecond, 100e6, 0),
			err: "stream 1 of the throughput test: the simulation has no start and ping marks of actor s0/throughput.a.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.step.Protocol == "udp" {
				// 8 Mbit/s over 4 s in 4 chunks.
				if actors, _ := model.Build(tc.env, &tc.step); actors[1].Ops[3].Body[0].Branches[0][0].Bytes != 1e6 {
					t.Fatalf("udp chunk %+v", actors[1].Ops[3].Body[0])
				}
			}
			o, err := model.Read(tc.env, &tc.step, &sim.Output{Marks: tc.marks, End: tc.step.Duration.Seconds()})
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Metrics) != len(tc.want) {
				t.Errorf("figures %v, want %v", o.Metrics, tc.want)
			}
			for k, v := range tc.want {
				if got, ok := o.Metrics[k]; !ok || !near(got, v, 1e-9) && math.Abs(got-v) > 1e-9 {
					t.Errorf("%s = %v, want %v", k, got, v)
				}
			}
		})
	}
}

// TestModelSimulated runs the model on the simulator, checked against the
// closed form: two streams of a 64 KiB window over a 100 ms round trip get
// 2*64KiB*8/0.1 bit/s of a 100 Mbit/s path; one stream without a window
// gets the whole of a 10 Mbit/s path.
func TestModelSimulated(t *testing.T) {
	hosts := []sim.Host{{Name: "a", Cores: 1, Speed: 1}, {Name: "b", Cores: 1, Speed: 1}}
	for _, tc := range []struct {
		name string
		bps  float64
		hop  time.Duration
		step Step
		want float64 // Mbit/s
	}{
		{"window", 100e6, 25 * time.Millisecond, Step{From: "a", To: "b", Protocol: "tcp", Streams: 2, Window: 64 << 10, Duration: 10 * time.Second},
			2 * 65536 * 8 / 0.1 / 1e6},
		// The TCP payload of the IP packets the path carries: 1448 of 1500.
		{"path", 10e6, time.Millisecond, Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Duration: 10 * time.Second}, 10 * 1448.0 / 1500},
		{"udp over the path", 10e6, time.Millisecond, Step{From: "a", To: "b", Protocol: "udp", Streams: 1, Duration: 5 * time.Second, UDPRate: 20e6}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plat, env := kindtest.Star(hosts, tc.bps, tc.hop)
			actors, err := model.Build(env, &tc.step)
			if err != nil {
				t.Fatal(err)
			}
			out := kindtest.Simulate(t, plat, actors)
			o, err := model.Read(env, &tc.step, out)
			if err != nil {
				t.Fatal(err)
			}
			got := o.Metrics[results.ThroughputMbps]
			t.Logf("%s: %.3f Mbit/s (closed form %.3f), simulated to %.2f s", tc.name, got, tc.want, out.End)
			if !near(got, tc.want, 0.05) {
				t.Errorf("throughput %.3f Mbit/s, want about %.3f", got, tc.want)
			}
			if lost := o.Metrics[results.LostPercent]; tc.step.Protocol == "udp" && !near(lost, 50, 0.05) {
				t.Errorf("lost %.1f%%, want half of the 20 Mbit/s", lost)
			}
		})
	}
}
