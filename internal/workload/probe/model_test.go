package probe

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// modelEnv is two hosts a and b on paths of rtt and loss each way.
func modelEnv(rtt time.Duration, loss float64) *kindtest.ModelEnv {
	facts := kind.PathFacts{RTT: rtt, BottleneckBPS: 10e6, Loss: loss, MTU: 1500}
	return &kindtest.ModelEnv{HostNames: []string{"a", "b"}, Step: 3,
		Paths: map[[2]string]kind.PathFacts{{"a", "b"}: facts, {"b", "a"}: facts}}
}

// TestModelBuild: a reflector, and a prober that calls it every interval.
func TestModelBuild(t *testing.T) {
	got, err := model.Build(modelEnv(20*time.Millisecond, 0), &Step{From: "a", To: "b", Count: 5, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.Actor{
		{Name: "s0/probe.reflector.b", Host: "b", Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
		{Name: "s0/probe.a", Host: "a", Ops: []sim.Op{{Do: sim.Repeat, Times: 5, Body: []sim.Op{{Do: sim.Par, Branches: [][]sim.Op{
			{{Do: sim.Mark, Label: markSent}, {Do: sim.Call, To: "s0/probe.reflector.b", Bytes: HeaderLen, Reply: HeaderLen, Timeout: 2}, {Do: sim.Mark, Label: markBack}},
			{{Do: sim.Sleep, Seconds: 0.1}},
		}}}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("actors\n%+v\nwant\n%+v", got, want)
	}
}

// probeMarks are the prober's marks of probes sent every interval from 0
// and back after rtt, but for those that timed out.
func probeMarks(n int, interval, rtt float64, timedOut ...int) []sim.MarkAt {
	var m []sim.MarkAt
	for i := range n {
		t := float64(i) * interval
		m = append(m, sim.MarkAt{Actor: "s0/probe.a", Label: markSent, T: t, Iter: i})
		back := t + rtt
		for _, k := range timedOut {
			if k == i {
				back = t + 2
				m = append(m, sim.MarkAt{Actor: "s0/probe.a", Label: sim.TimeoutLabel, T: back, Iter: i})
			}
		}
		m = append(m, sim.MarkAt{Actor: "s0/probe.a", Label: markBack, T: back, Iter: i})
	}
	return m
}

// TestModelRead: round trips from the marks, through Summarise; timeouts
// and drawn losses are lost probes; probes not sent make a partial step.
func TestModelRead(t *testing.T) {
	step := Step{From: "a", To: "b", Count: 4, Interval: 100 * time.Millisecond}
	for _, tc := range []struct {
		name  string
		env   *kindtest.ModelEnv
		marks []sim.MarkAt
		want  results.Metrics
		err   string
	}{
		{name: "all back", env: modelEnv(20*time.Millisecond, 0), marks: probeMarks(4, 0.1, 0.020),
			want: results.Metrics{results.RTTP50Ms: 20, results.RTTP99Ms: 20, results.RTTAvgMs: 20, results.JitterMs: 0, results.LostPercent: 0, results.TestsAlongside: 0}},
		{name: "a timeout", env: modelEnv(20*time.Millisecond, 0), marks: probeMarks(4, 0.1, 0.020, 2),
			want: results.Metrics{results.RTTP50Ms: 20, results.RTTP99Ms: 20, results.RTTAvgMs: 20, results.JitterMs: 0, results.LostPercent: 25, results.TestsAlongside: 0}},
		{name: "all lost", env: modelEnv(20*time.Millisecond, 1), marks: probeMarks(4, 0.1, 0.020),
			want: results.Metrics{results.RTTP50Ms: 0, results.RTTP99Ms: 0, results.RTTAvgMs: 0, results.JitterMs: 0, results.LostPercent: 100, results.TestsAlongside: 0}},
		{name: "cut short", env: modelEnv(20*time.Millisecond, 0), marks: probeMarks(3, 0.1, 0.020),
			want: results.Metrics{results.RTTP50Ms: 20, results.RTTP99Ms: 20, results.RTTAvgMs: 20, results.JitterMs: 0, results.LostPercent: 0, results.TestsAlongside: 0},
			err:  "only 3 of 4 probes were sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := model.Read(tc.env, &step, &sim.Output{Marks: tc.marks, End: 0.4})
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if len(o.Metrics) != len(tc.want) {
				t.Errorf("figures %v, want %v", o.Metrics, tc.want)
			}
			for k, v := range tc.want {
				if got, ok := o.Metrics[k]; !ok || math.Abs(got-v) > 1e-6 {
					t.Errorf("%s = %v, want %v", k, got, v)
				}
			}
			if len(o.Samples) == 0 || o.Samples[0].T != time.Unix(0, 0).UTC() {
				t.Errorf("samples %v, want the first at the epoch", o.Samples)
			}
		})
	}
}

// TestModelReadLoss: probes are lost as drawn from the step's seed, with
// the chance of a round trip through both paths' loss.
func TestModelReadLoss(t *testing.T) {
	step := Step{From: "a", To: "b", Count: 2000, Interval: 10 * time.Millisecond}
	env := modelEnv(20*time.Millisecond, 0.1) // 19% of round trips lost
	o, err := model.Read(env, &step, &sim.Output{Marks: probeMarks(2000, 0.01, 0.02)})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Metrics[results.LostPercent]; math.Abs(got-19) > 3 {
		t.Errorf("lost %.1f%%, want about 19%%", got)
	}
	again, _ := model.Read(env, &step, &sim.Output{Marks: probeMarks(2000, 0.01, 0.02)})
	if again.Metrics[results.LostPercent] != o.Metrics[results.LostPercent] {
		t.Errorf("the same step lost %v%% then %v%%", o.Metrics[results.LostPercent], again.Metrics[results.LostPercent])
	}
}

// TestModelSimulated runs the model on the simulator, checked against the
// closed form: a round trip is twice the one-way delays (two links of 5
// ms each way), and every probe is sent on time.
func TestModelSimulated(t *testing.T) {
	hosts := []sim.Host{{Name: "a", Cores: 1, Speed: 1}, {Name: "b", Cores: 1, Speed: 1}}
	plat, env := kindtest.Star(hosts, 100e6, 5*time.Millisecond)
	step := Step{From: "a", To: "b", Count: 20, Interval: 50 * time.Millisecond}
	actors, err := model.Build(env, &step)
	if err != nil {
		t.Fatal(err)
	}
	out := kindtest.Simulate(t, plat, actors)
	o, err := model.Read(env, &step, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("round trip %.4f ms (closed form 20 ms), lost %.0f%%, simulated to %.3f s", o.Metrics[results.RTTAvgMs], o.Metrics[results.LostPercent], out.End)
	if got := o.Metrics[results.RTTP50Ms]; math.Abs(got-20) > 0.1 {
		t.Errorf("round trip %.4f ms, want about 20", got)
	}
	if o.Metrics[results.LostPercent] != 0 || math.Abs(out.End-1.0) > 0.05 {
		t.Errorf("lost %v%%, ended at %.3f s: want none lost, 20 probes every 50 ms", o.Metrics[results.LostPercent], out.End)
	}
}
