package kind

import (
	"math"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/sim"
)

// paramEnv is a ModelEnv of fitted params only.
type paramEnv map[string]float64

func (paramEnv) Seed() uint64                        { return 0 }
func (paramEnv) Hosts() []string                     { return nil }
func (paramEnv) Path(_, _ string) (PathFacts, error) { return PathFacts{}, nil }
func (paramEnv) Name(s string) string                { return s }
func (e paramEnv) Param(name string, declared float64) float64 {
	if v, ok := e[name]; ok {
		return v
	}
	return declared
}

func TestBuildReadWith(t *testing.T) {
	build := BuildWith("a toy model", func(s *toySpec, _ ModelEnv) ([]sim.Actor, error) {
		return make([]sim.Actor, s.n), nil
	})
	read := ReadWith("a toy model", func(s *toySpec, _ ModelEnv, out *sim.Output) (*Outcome, error) {
		return &Outcome{Metrics: map[string]float64{"n": float64(s.n), "end": out.End}}, nil
	})
	if actors, err := build(paramEnv{}, &toySpec{n: 2}); err != nil || len(actors) != 2 {
		t.Errorf("build: %v, %v", actors, err)
	}
	if o, err := read(paramEnv{}, &toySpec{n: 2}, &sim.Output{End: 3}); err != nil || o.Metrics["n"] != 2 || o.Metrics["end"] != 3 {
		t.Errorf("read: %v, %v", o, err)
	}
	if _, err := build(paramEnv{}, otherSpec{}); err == nil || err.Error() != "a toy model with a kind.otherSpec spec" {
		t.Errorf("build of another spec: %v", err)
	}
	if _, err := read(paramEnv{}, otherSpec{}, &sim.Output{}); err == nil || err.Error() != "a toy model with a kind.otherSpec spec" {
		t.Errorf("read of another spec: %v", err)
	}
}

// TestTCPEfficiency: a path's own efficiency first, then every path's,
// then 1.
func TestTCPEfficiency(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  paramEnv
		want float64
	}{
		{"efficiency of the path", paramEnv{"tcp_efficiency.a->b": 0.5, "tcp_efficiency": 0.8}, 0.5},
		{"efficiency of all paths", paramEnv{"tcp_efficiency.b->a": 0.5, "tcp_efficiency": 0.8}, 0.8},
		{"uncalibrated", nil, 1},
	} {
		if got := TCPEfficiency(tc.env, "a", "b"); got != tc.want {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
}

func TestStreamRateBPS(t *testing.T) {
	share := 1448.0 / 1500 // MSS over MTU
	// A 64 KiB window over 10 ms for 100 s: 45.26 segments a round trip,
	// less what slow start (10, 20, 40) leaves out of the first three.
	segs := 65536.0 / 1448
	windowed := (segs*1e4 - (segs - 10) - (segs - 20) - (segs - 40)) * 1448 * 8 / 100
	lossy := PathFacts{RTT: 100 * time.Millisecond, BottleneckBPS: 1e9, Loss: 1e-3}
	for _, tc := range []struct {
		name string
		path PathFacts
		flow TCPFlow
		env  paramEnv
		want float64
	}{
		{"no round trip: the bottleneck's share", PathFacts{BottleneckBPS: 10e6}, TCPFlow{Streams: 4, Seconds: 1}, nil, 10e6 * share / 4},
		{"window", PathFacts{RTT: 10 * time.Millisecond, BottleneckBPS: 1e9}, TCPFlow{Window: 64 << 10, Streams: 1, Seconds: 100}, nil, windowed},
		{"window, efficiency of the path", PathFacts{RTT: 10 * time.Millisecond, BottleneckBPS: 1e9}, TCPFlow{Window: 64 << 10, Streams: 1, Seconds: 100},
			paramEnv{"tcp_efficiency.a->b": 1.1, "tcp_efficiency": 0.5}, 1.1 * windowed},
		// The bottleneck holds it: no tcp_efficiency, its own share.
		{"bottleneck", PathFacts{RTT: time.Millisecond, BottleneckBPS: 10e6}, TCPFlow{Streams: 2, Seconds: 1000},
			paramEnv{"tcp_efficiency": 0.5}, 10e6 * share / 2},
		{"bottleneck efficiency of the path", PathFacts{RTT: time.Millisecond, BottleneckBPS: 10e6}, TCPFlow{Streams: 2, Seconds: 1000},
			paramEnv{"bottleneck_efficiency.a->b": 0.8, "bottleneck_efficiency": 0.9}, 10e6 * 0.8 / 2},
		{"bottleneck efficiency of all paths", PathFacts{RTT: time.Millisecond, BottleneckBPS: 10e6}, TCPFlow{Streams: 2, Seconds: 1000},
			paramEnv{"bottleneck_efficiency.b->a": 0.8, "bottleneck_efficiency": 0.9}, 10e6 * 0.9 / 2},
		{"loss, reno", lossy, TCPFlow{Streams: 1, Seconds: 1}, nil,
			sim.TCPStream{MSS: 1448, RTT: lossy.RTT, Loss: 1e-3, MaxSegments: float64(DefaultAutoWindow) / 1448}.MeanBPS(1, 0)},
		{"loss, the path's bbr", PathFacts{RTT: 100 * time.Millisecond, BottleneckBPS: 1e9, Loss: 0.01, Congestion: sim.BBR}, TCPFlow{Window: 1448 * 20, Streams: 1, Seconds: 2000},
			nil, 20 * 1448 * 8 / 0.1 * (1 - 10.0/4e5)},
		{"nothing", PathFacts{}, TCPFlow{Streams: 1, Seconds: 1}, nil, 0},
	} {
		got := StreamRateBPS(tc.env, tc.path, "a", "b", tc.flow)
		if math.Abs(got-tc.want) > 1e-6*tc.want || (tc.want == 0) != (got == 0) {
			t.Errorf("%s: %.0f bit/s, want %.0f", tc.name, got, tc.want)
		}
	}
	// A test's congestion control is its own over the path's: Reno's
	// bound under 1% loss is far below the window BBR keeps.
	path := PathFacts{RTT: 100 * time.Millisecond, BottleneckBPS: 1e9, Loss: 0.01, Congestion: sim.BBR}
	if reno, bbr := StreamRateBPS(paramEnv{}, path, "a", "b", TCPFlow{Congestion: sim.Reno, Streams: 1, Seconds: 100}),
		StreamRateBPS(paramEnv{}, path, "a", "b", TCPFlow{Streams: 1, Seconds: 100}); reno >= bbr/10 {
		t.Errorf("reno %.0f bit/s, bbr %.0f: want reno's loss bound far below", reno, bbr)
	}
}

func TestStreamLimited(t *testing.T) {
	path := PathFacts{RTT: 10 * time.Millisecond, BottleneckBPS: 100e6}
	// One 64 KiB stream gets 52 Mbit/s of 100: its window holds it.
	if own, rate := StreamLimited(paramEnv{}, path, "a", "b", TCPFlow{Window: 64 << 10, Streams: 1, Seconds: 10}); !own || rate < 50e6 || rate > 52.5e6 {
		t.Errorf("one stream: own %v at %.0f bit/s, want its window's 52 Mbit/s", own, rate)
	}
	// Four fill the path: it holds them, at their share.
	if own, rate := StreamLimited(paramEnv{}, path, "a", "b", TCPFlow{Window: 64 << 10, Streams: 4, Seconds: 10}); own || math.Abs(rate-100e6*1448/1500/4) > 1e-6 {
		t.Errorf("four streams: own %v at %.0f bit/s, want the bottleneck's share", own, rate)
	}
}

func TestFitWith(t *testing.T) {
	fit := FitWith("a toy model", func(s *toySpec, _ ModelEnv, m Measured) (map[string]float64, error) {
		return map[string]float64{"n": float64(s.n), "secs": m.Seconds}, nil
	})
	if est, err := fit(paramEnv{}, Measured{Spec: &toySpec{n: 2}, Seconds: 3}); err != nil || est["n"] != 2 || est["secs"] != 3 {
		t.Errorf("fit: %v, %v", est, err)
	}
	if _, err := fit(paramEnv{}, Measured{Spec: otherSpec{}}); err == nil || err.Error() != "a toy model with a kind.otherSpec spec" {
		t.Errorf("fit of another spec: %v", err)
	}
}
