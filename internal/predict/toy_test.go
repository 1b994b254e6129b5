package predict

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// toyKind is kindtest.SimToy: a kind with a model, as a kind's package
// declares one: its sender Execs, then Sends to a sink that Serves,
// between two Marks.
var toyKind = kindtest.SimToy

// fakeSim answers a program as a simulator would for one flow alone on
// its path: the payload crosses at the route's lowest rate after its
// one-way delay; the sender's Exec takes its seconds first.
// It may run several programs at once (Predictor.Ahead).
type fakeSim struct {
	mu    sync.Mutex
	progs []*sim.Program
}

// programs are the programs run, by their seeds (their steps' order).
func (f *fakeSim) programs() []*sim.Program {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.SortedFunc(slices.Values(f.progs), func(a, b *sim.Program) int { return cmp.Compare(a.Config.Seed, b.Config.Seed) })
}

func (f *fakeSim) run(_ context.Context, p *sim.Program) (*sim.Output, error) {
	f.mu.Lock()
	f.progs = append(f.progs, p)
	f.mu.Unlock()
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
