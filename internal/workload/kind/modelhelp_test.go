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

func TestStreamCapBPS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		path   PathFacts
		window int64
		env    paramEnv
		want   float64
	}{
		{"window", PathFacts{RTT: 100 * time.Millisecond, BottleneckBPS: 100e6}, 64 << 10, nil, 65536 * 8 / 0.1},
		{"autotuned", PathFacts{RTT: 100 * time.Millisecond, BottleneckBPS: 1e9}, 0, nil, 4 << 20 * 8 / 0.1},
		{"bottleneck", PathFacts{RTT: time.Millisecond, BottleneckBPS: 10e6}, 0, nil, 10e6},
		{"loss", PathFacts{RTT: 20 * time.Millisecond, BottleneckBPS: 1e9, Loss: 0.01, MTU: 9000}, 0, nil, 8948 * 8 / 0.02 * math.Sqrt(1.5) / 0.1},
		{"nothing", PathFacts{}, 0, nil, 0},
		{"efficiency of the path", PathFacts{BottleneckBPS: 10e6}, 0, paramEnv{"tcp_efficiency.a->b": 0.5, "tcp_efficiency": 0.8}, 5e6},
		{"efficiency of all paths", PathFacts{BottleneckBPS: 10e6}, 0, paramEnv{"tcp_efficiency.b->a": 0.5, "tcp_efficiency": 0.8}, 8e6},
		{"fitted window", PathFacts{RTT: 100 * time.Millisecond, BottleneckBPS: 1e9}, 0, paramEnv{ParamAutoWindow: 1 << 20}, 1 << 20 * 8 / 0.1},
	} {
		if got := StreamCapBPS(tc.env, tc.path, "a", "b", tc.window); math.Abs(got-tc.want) > 1e-6*tc.want {
			t.Errorf("%s: %.0f bit/s, want %.0f", tc.name, got, tc.want)
		}
	}
}
