package kindtest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// ModelEnv is what a kind's model builds and reads a step with
// (kind.ModelEnv), as the predictor would give it: the hosts, the facts of
// their paths, the step's seed and the params calibration fitted. Names are
// prefixed with "s0/", as a step's would be, so a model that names an
// actor without Name is seen. It records the params asked for.
type ModelEnv struct {
	HostNames []string
	// Paths are the facts of each path, by [from, to]; Default those of a
	// pair not listed (an error when Default has no RTT and no rate).
	Paths   map[[2]string]kind.PathFacts
	Default kind.PathFacts
	// Step is the step's seed.
	Step uint64
	// Fitted are the params calibration fitted: Param gives them instead
	// of the declared value.
	Fitted map[string]float64

	mu    sync.Mutex
	asked []string
}

var _ kind.ModelEnv = (*ModelEnv)(nil)

func (e *ModelEnv) Seed() uint64         { return e.Step }
func (e *ModelEnv) Hosts() []string      { return e.HostNames }
func (e *ModelEnv) Name(s string) string { return "s0/" + s }

// Path gives the facts of the path from one host to another.
func (e *ModelEnv) Path(from, to string) (kind.PathFacts, error) {
	if p, ok := e.Paths[[2]string{from, to}]; ok {
		return p, nil
	}
	if e.Default.RTT == 0 && e.Default.BottleneckBPS == 0 {
		return kind.PathFacts{}, fmt.Errorf("no path from %s to %s", from, to)
	}
	return e.Default, nil
}

// Param gives the fitted value of name, else declared, and records that
// it was asked for.
func (e *ModelEnv) Param(name string, declared float64) float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(e.asked, name) {
		e.asked = append(e.asked, name)
	}
	if v, ok := e.Fitted[name]; ok {
		return v
	}
	return declared
}

// Asked are the params asked for so far, in the order first asked.
func (e *ModelEnv) Asked() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked)
}

// Star is a platform of hosts around one switch, each joined to it by a
// link of bps bits/s each way, of one-way delay hop, with a route for
// every ordered pair of hosts, and a ModelEnv whose paths say the same
// (a round trip of 4 hops, MTU 1500, no loss).
func Star(hosts []sim.Host, bps float64, hop time.Duration) (sim.Platform, *ModelEnv) {
	p := sim.Platform{Hosts: hosts}
	env := &ModelEnv{Paths: map[[2]string]kind.PathFacts{}}
	for _, h := range hosts {
		env.HostNames = append(env.HostNames, h.Name)
		p.Links = append(p.Links,
			sim.Link{Name: h.Name + ".up", BPS: bps, Latency: hop.Seconds()},
			sim.Link{Name: h.Name + ".down", BPS: bps, Latency: hop.Seconds()})
	}
	for _, a := range hosts {
		for _, b := range hosts {
			if a.Name == b.Name {
				continue
			}
			p.Routes = append(p.Routes, sim.Route{From: a.Name, To: b.Name, Links: []string{a.Name + ".up", b.Name + ".down"}})
			env.Paths[[2]string{a.Name, b.Name}] = kind.PathFacts{RTT: 4 * hop, BottleneckBPS: bps, MTU: 1500}
		}
	}
	return p, env
}

// Simulate runs actors on plat with bin/wanlab-sim, with the network
// model's factors at 1 (a flow gets its links' rate and latency, as a
// closed form reckons), and returns what it gave back; the test is skipped
// when the simulator is not there.
func Simulate(t testing.TB, plat sim.Platform, actors []sim.Actor) *sim.Output {
	t.Helper()
	if err := sim.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prog := &sim.Program{Platform: plat, Config: sim.Config{BandwidthFactor: 1, LatencyFactor: 1}, Actors: actors}
	out, err := sim.Run(ctx, prog)
	if err != nil {
		t.Fatalf("simulating: %v", err)
	}
	return out
}

// CheckModel checks that a kind's model says what it assumes and which
// params it reads, each with a doc, and that the params env was asked for
// as it built a step are those it lists, in order.
func CheckModel(t testing.TB, m *kind.Model, env *ModelEnv) {
	t.Helper()
	if m == nil || len(m.Assumptions) == 0 {
		t.Fatalf("model %+v: want its assumptions", m)
	}
	var names []string
	for _, p := range m.Params {
		if p.Name == "" || p.Doc == "" {
			t.Errorf("param %+v: a name and a doc", p)
		}
		names = append(names, p.Name)
	}
	// A param read per host or path (NAME.HOST, NAME.FROM->TO) is its
	// listed NAME's.
	var asked []string
	for _, a := range env.Asked() {
		if name, _, ok := strings.Cut(a, "."); ok && slices.Contains(names, name) {
			a = name
		}
		if !slices.Contains(asked, a) {
			asked = append(asked, a)
		}
	}
	if !slices.Equal(asked, names) {
		t.Errorf("params asked %v, listed %v", asked, names)
	}
}

// CheckFit checks the estimates a model's Fit gave (got) against want:
// the same params, each within a billionth.
func CheckFit(t testing.TB, what string, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: fitted %v, want %v", what, got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9*max(1, math.Abs(v)) {
			t.Errorf("%s: %s = %g, want %g", what, k, g, v)
		}
	}
}
