package kindtest

import (
	"context"
	"errors"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// SimToySpec is a step of SimToy: one flow of Bytes from host From to host
// To, whose sender works CPU seconds first.
type SimToySpec struct {
	From, To string
	Bytes    int64
	CPU      float64
}

// Length is 0: a step lasts as long as its flow.
func (s *SimToySpec) Length() time.Duration { return 0 }

// RoleHosts are the sender and the receiver.
func (s *SimToySpec) RoleHosts() map[string][]string {
	return map[string][]string{"sender": {s.From}, "receiver": {s.To}}
}

// SimToyScenario is a scenario of the given name with one SimToy
// workload, push, from host a (one core) to host b over a 10 Mbit/s, 10 ms
// link, swept over 1 MB and 2 MB (--quick: 1 MB): the predictor's and the
// CLI's tests share it (register SimToy first).
func SimToyScenario(name string) string {
	return "name: " + name + `
hosts:
  a: {cpus: 1}
  b: {}
links:
  - {between: [a, b], rate: 10Mbit, delay: 10ms}
workloads:
  - name: push
    simtoy: {from: a, to: b}
    sweep: {bytes: [1MB, 2MB]}
    quick:
      sweep: {bytes: [1MB]}
`
}

// SimToyCPU is SimToy's one param: the sender's CPU seconds before it
// sends (the step's cpu: by default).
const SimToyCPU = "toy_cpu_s"

// SimToy is a kind with a simulation model only, for the predictor's
// tests (register it with kinds.Register; it refuses to run on a
// test-bed). A step, `simtoy: {from: A, to: B, bytes: SIZE, cpu: SECONDS}`
// (bytes 1 MB by default), is two actors named as the step's (env.Name):
// a sink on B that Serves, and a sender on A that Execs SimToyCPU, Marks
// "start", Sends the bytes to the sink and Marks "end". Its one figure is
// the flow's throughput, from the marks: bytes over the time between them.
var SimToy = kind.Kind{
	Name: "simtoy",
	Decode: func(decode kind.Decoder, c kind.Check) kind.Spec {
		var r struct {
			From  string  `yaml:"from"`
			To    string  `yaml:"to"`
			Bytes string  `yaml:"bytes"`
			CPU   float64 `yaml:"cpu"`
		}
		if !decode(&r) {
			return nil
		}
		c.Host("from", r.From)
		c.Host("to", r.To)
		return &SimToySpec{From: r.From, To: r.To, Bytes: c.Size("bytes", r.Bytes, 1e6), CPU: r.CPU}
	},
	Run: func(context.Context, kind.Env, kind.Spec) (*kind.Outcome, error) {
		return nil, errors.New("the simtoy kind runs in simulations only")
	},
	Model: &kind.Model{
		Build: func(env kind.ModelEnv, s kind.Spec) ([]sim.Actor, error) {
			t := s.(*SimToySpec)
			sink := env.Name("sink." + t.To)
			return []sim.Actor{
				{Name: sink, Host: t.To, Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
				{Name: env.Name("sender." + t.From), Host: t.From, Ops: []sim.Op{
					{Do: sim.Exec, Seconds: env.Param(SimToyCPU, t.CPU)},
					{Do: sim.Mark, Label: "start"},
					{Do: sim.Send, To: sink, Bytes: t.Bytes},
					{Do: sim.Mark, Label: "end"},
				}},
			}, nil
		},
		Read: func(env kind.ModelEnv, s kind.Spec, out *sim.Output) (*kind.Outcome, error) {
			var start, end float64
			for _, m := range out.Marks {
				switch m.Label {
				case "start":
					start = m.T
				case "end":
					end = m.T
				}
			}
			if end <= start {
				return nil, errors.New("the flow did not end")
			}
			mbps := float64(s.(*SimToySpec).Bytes) * 8 / (end - start) / 1e6
			return &kind.Outcome{Metrics: results.Metrics{results.ThroughputMbps: mbps}}, nil
		},
		Assumptions: []string{"the flow starts at once"},
		Params:      []kind.Param{{Name: SimToyCPU, Doc: "the sender's CPU seconds before it sends"}},
	},
}
