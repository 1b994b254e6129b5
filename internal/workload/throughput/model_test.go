package throughput

import (
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
	for _, tc := range []struct {
		name    string
		step    Step
		env     *kindtest.ModelEnv
		wantCap float64
		chunk   int64
		chunks  int
	}{
		// 64 KiB over 100 ms: 5.24 Mbit/s per stream, under the 100 Mbit/s path.
		{"window", Step{From: "a", To: "b", Protocol: "tcp", Streams: 2, Window: 64 << 10, Duration: 10 * time.Second},
			modelEnv(100*time.Millisecond, 100e6, 0), 65536 * 8 / 0.1, 409600, 34},
		// 1% loss over 20 ms: Mathis gives 1448*8/0.02*sqrt(1.5)/0.1 = 7.09 Mbit/s.
		{"loss", Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Duration: 10 * time.Second},
			modelEnv(20*time.Millisecond, 100e6, 0.01), 1448 * 8 / 0.02 * math.Sqrt(1.5) / 0.1, 554197, 36},
		// Nothing caps a stream but the path: 4 MiB over 1 ms is far above.
		{"path", Step{From: "a", To: "b", Protocol: "tcp", Streams: 4, Duration: 10 * time.Second},
			modelEnv(time.Millisecond, 10e6, 0), 10e6, 195312, 36},
		// UDP: the target rate shared by the streams.
		{"udp", Step{From: "a", To: "b", Protocol: "udp", Streams: 2, Duration: 4 * time.Second, UDPRate: 8e6},
			modelEnv(10*time.Millisecond, 100e6, 0.5), 4e6, 125000, 34},
	} {
		t.Run(tc.name, func(t *testing.T) {
			actors, err := model.Build(tc.env, &tc.step)
			if err != nil {
				t.Fatal(err)
			}
			if len(actors) != 1+tc.step.Streams {
				t.Fatalf("%d actors, want a sink and %d streams", len(actors), tc.step.Streams)
			}
			sink := actors[0]
			if sink.Name != "s0/throughput.sink.b" || sink.Host != "b" || !sink.Daemon || sink.Ops[0].Do != sim.Serve {
				t.Errorf("sink %+v", sink)
			}
			for _, a := range actors[1:] {
				if a.Host != "a" || a.Daemon || len(a.Ops) != 4 {
					t.Fatalf("stream %+v", a)
				}
				ping, rep := a.Ops[1], a.Ops[3]
				if ping.Do != sim.Send || ping.Bytes != 1 || ping.To != sink.Name || !near(ping.RateBPS, tc.wantCap, 1e-9) {
					t.Errorf("ping %+v, want 1 byte capped at %.0f", ping, tc.wantCap)
				}
				if rep.Do != sim.Repeat || rep.Times != tc.chunks || len(rep.Body) != 2 || rep.Body[1].Label != markChunk {
					t.Fatalf("chunks %+v, want %d", rep, tc.chunks)
				}
				par := rep.Body[0]
				send, exec := par.Branches[0][0], par.Branches[1][0]
				if par.Do != sim.Par || send.Bytes != tc.chunk || !near(send.RateBPS, tc.wantCap, 1e-9) || !near(exec.Seconds, float64(tc.chunk)/1e9*defaultSenderCPU, 1e-9) {
					t.Errorf("chunk %+v, want %d bytes capped at %.0f beside its CPU", par, tc.chunk, tc.wantCap)
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
	if got, want := actors[1].Ops[1].RateBPS, 0.5*(1<<20)*8/0.1; !near(got, want, 1e-9) {
		t.Errorf("cap %.0f, want %.0f", got, want)
	}
	for _, p := range env.Asked() {
		if !strings.HasPrefix(p, kind.ParamTCPEfficiency) && !hasParam(p) {
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
	for _, tc := range []struct {
		name  string
		step  Step
		env   *kindtest.ModelEnv
		marks []sim.MarkAt
		want  results.Metrics
		err   string
	}{
		// Chunks of 409600 bytes in 0.625 s each: 5.24 Mbit/s a stream;
		// 14 end within 10 s.
		{name: "tcp", step: tcp, env: modelEnv(100*time.Millisecond, 100e6, 0),
			marks: append(streamMarks("s0/throughput.a.0", 0.05, 0.625, 20), streamMarks("s0/throughput.a.1", 0.05, 0.625, 20)...),
			want: results.Metrics{results.ThroughputMbps: 2 * 5.24288 * 9.95 / 10, results.Streams: 2, results.WindowBytes: 65536,
				results.Retransmits: 0, results.TestsAlongside: 0,
				results.SenderCPUPct: 100 * 2 * 5.24288e6 * 0.995 / 8e9 * defaultSenderCPU, results.ReceiverCPUPct: 100 * 2 * 5.24288e6 * 0.995 / 8e9 * defaultReceiverCPU}},
		// The path carries 6 of the 8 Mbit/s, and loses 1% of them.
		{name: "udp", step: udp, env: env,
			marks: streamMarks("s0/throughput.a.0", 0.01, 250000*8/6e6, 10),
			want: results.Metrics{results.ThroughputMbps: 6 * 0.99, results.Streams: 1, results.WindowBytes: 0, results.TestsAlongside: 0,
				results.LostPercent: 100 * (1 - 6*0.99/8), results.JitterMs: 0,
				results.SenderCPUPct: 100 * 6e6 * 0.99 / 8e9 * defaultSenderCPU, results.ReceiverCPUPct: 100 * 6e6 * 0.99 / 8e9 * defaultReceiverCPU}},
		{name: "too slow", step: tcp, env: modelEnv(100*time.Millisecond, 100e6, 0),
			marks: append(streamMarks("s0/throughput.a.0", 0.05, 20, 1), streamMarks("s0/throughput.a.1", 0.05, 0.625, 20)...),
			err:   "stream 1 of the throughput test: no chunk of 409600 bytes ended within the test's 10 s"},
		{name: "no marks", step: tcp, env: modelEnv(100*time.Millisecond, 100e6, 0),
			err: "stream 1 of the throughput test: the simulation has no start and ping marks of actor s0/throughput.a.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.step.Protocol == "udp" {
				// 8 Mbit/s over 4 s in 16 chunks.
				if actors, _ := model.Build(tc.env, &tc.step); actors[1].Ops[3].Body[0].Branches[0][0].Bytes != 250000 {
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
		{"path", 10e6, time.Millisecond, Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Duration: 10 * time.Second}, 10},
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
