package predict

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// toySpec is a step of the toy kind: one flow of Bytes from a host to
// another, whose sender works CPU seconds first.
type toySpec struct {
	From, To string
	Bytes    int64
	CPU      float64
}

func (s *toySpec) Length() time.Duration { return 0 }
func (s *toySpec) RoleHosts() map[string][]string {
	return map[string][]string{"sender": {s.From}, "receiver": {s.To}}
}

// toyKind is a kind with a model, as a kind's package declares one: its
// sender Execs, then Sends to a sink that Serves, between two Marks.
var toyKind = kind.Kind{
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
		return &toySpec{From: r.From, To: r.To, Bytes: c.Size("bytes", r.Bytes, 1e6), CPU: r.CPU}
	},
	Run: func(context.Context, kind.Env, kind.Spec) (*kind.Outcome, error) {
		return nil, errors.New("the toy kind runs in simulations only")
	},
	Model: &kind.Model{
		Build: func(env kind.ModelEnv, s kind.Spec) ([]sim.Actor, error) {
			t := s.(*toySpec)
			sink := env.Name("sink." + t.To)
			return []sim.Actor{
				{Name: sink, Host: t.To, Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
				{Name: env.Name("sender." + t.From), Host: t.From, Ops: []sim.Op{
					{Do: sim.Exec, Seconds: env.Param("toy_cpu_s", t.CPU)},
					{Do: sim.Mark, Label: "start"},
					{Do: sim.Send, To: sink, Bytes: t.Bytes},
					{Do: sim.Mark, Label: "end"},
				}},
			}, nil
		},
		Read: func(env kind.ModelEnv, s kind.Spec, out *sim.Output) (*kind.Outcome, error) {
			t := s.(*toySpec)
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
				return nil, fmt.Errorf("the flow did not end")
			}
			return &kind.Outcome{Metrics: results.Metrics{results.ThroughputMbps: float64(t.Bytes) * 8 / (end - start) / 1e6}}, nil
		},
		Assumptions: []string{"the flow starts at once"},
		Params:      []kind.Param{{Name: "toy_cpu_s", Doc: "the sender's CPU seconds"}},
	},
}

// fakeSim answers a program as a simulator would for one flow alone on
// its path: the payload crosses at the route's lowest rate after its
// one-way delay; the sender's Exec takes its seconds first.
type fakeSim struct {
	progs []*sim.Program
}

func (f *fakeSim) run(_ context.Context, p *sim.Program) (*sim.Output, error) {
	f.progs = append(f.progs, p)
	out := &sim.Output{HostCPU: map[string]float64{}, LinkBytes: map[string]float64{}, Ended: true}
	links := map[string]sim.Link{}
	for _, l := range p.Platform.Links {
		links[l.Name] = l
	}
	for _, a := range p.Actors {
		if a.Daemon {
			continue
		}
		t := 0.0
		for _, op := range a.Ops {
			switch op.Do {
			case sim.Exec:
				out.HostCPU[a.Host] += op.Seconds
				t += op.Seconds
			case sim.Mark:
				out.Marks = append(out.Marks, sim.MarkAt{Actor: a.Name, Label: op.Label, T: t, Iter: -1})
			case sim.Send:
				var route sim.Route
				for _, r := range p.Platform.Routes {
					if r.From == a.Host {
						route = r
					}
				}
				bps, lat := LoopbackBPS, 0.0
				for _, name := range route.Links {
					bps = min(bps, links[name].BPS)
					lat += links[name].Latency
					out.LinkBytes[name] += float64(op.Bytes)
				}
				t += lat + float64(op.Bytes)*8/bps
			}
		}
		out.End = max(out.End, t)
	}
	return out, nil
}
