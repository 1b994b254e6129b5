package probe

// The probes' simulation model (issue 34): a round of probes as actors of
// the simulator's model program (internal/sim), a prober calling a
// reflector at the round's interval, and the step's figures and samples
// read back from the prober's marks through Summarise, as runStep makes
// them of the agents' probes.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// ParamOverhead is the model's param, which calibration may fit: what the
// hosts add to each round trip.
const ParamOverhead = "probe_overhead_ms"

// The labels of a probe's marks.
const (
	markSent = "sent"
	markBack = "back"
)

// lossStream seeds the draws of lost probes, beside the step's seed.
const lossStream = 0x70726f6265 // "probe"

// model is the probe kind's kind.Model.
var model = kind.Model{
	Build: kind.BuildWith("a probe model", (*Step).build),
	Read:  kind.ReadWith("a probe model", (*Step).read),
	Fit: func(env kind.ModelEnv, m kind.Measured) (map[string]float64, error) {
		p, ok := m.Spec.(*Step)
		if !ok {
			return nil, fmt.Errorf("a probe model with a %T spec", m.Spec)
		}
		return p.fit(env, m)
	},
	Assumptions: []string{
		"A probe is a call of the probe's size each way to a reflector that answers at once: its round trip is the paths' propagation and transmission (plus probe_overhead_ms), with no queueing delay.",
		"The prober keeps to its schedule unless a round trip is longer than the interval: then the next probe waits for the reply, where the real prober sends on time.",
		"Probes are lost at random, drawn from the step's seed, with the chance of the round trip through both paths' loss; a lost probe has no round trip.",
		"Each one-way delay is half the round trip: the reflector's instant is not marked.",
		"No probe is duplicated or reordered, and the probes run alone (tests_alongside is 0).",
	},
	Params: []kind.Param{
		{Name: ParamOverhead, Doc: "what the hosts' stacks add to each round trip beyond the paths' delays, in milliseconds (0 uncalibrated)"},
	},
	// The last probe's reply may come up to its timeout after the step's
	// length, as the real prober waits for it.
	Horizon: func(s kind.Spec) time.Duration {
		if p, ok := s.(*Step); ok {
			return p.Length() + p.round().Timeout
		}
		return s.Length()
	},
}

// actors are the names of the step's prober and reflector.
func (p *Step) actors(env kind.ModelEnv) (prober, reflector string) {
	return env.Name("probe." + p.From), env.Name("probe.reflector." + p.To)
}

// build makes the step's actors: a reflector on the target and a prober
// that, every interval, marks, calls the reflector and marks again.
func (p *Step) build(env kind.ModelEnv) ([]sim.Actor, error) {
	prober, reflector := p.actors(env)
	r := p.round()
	probe := []sim.Op{
		{Do: sim.Mark, Label: markSent},
		{Do: sim.Call, To: reflector, Bytes: int64(r.Size), Reply: int64(r.Size), Timeout: r.Timeout.Seconds()},
		{Do: sim.Mark, Label: markBack},
	}
	return []sim.Actor{
		{Name: reflector, Host: p.To, Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
		{Name: prober, Host: p.From, Ops: []sim.Op{{Do: sim.Repeat, Times: p.Count, Body: []sim.Op{
			{Do: sim.Par, Branches: [][]sim.Op{probe, {{Do: sim.Sleep, Seconds: p.Interval.Seconds()}}}},
		}}}},
	}, nil
}

// read makes the round's summary from the prober's marks: a probe sent
// and back without a timeout came back, unless drawn lost.
func (p *Step) read(env kind.ModelEnv, out *sim.Output) (*kind.Outcome, error) {
	prober, _ := p.actors(env)
	there, err := env.Path(p.From, p.To)
	if err != nil {
		return nil, fmt.Errorf("the probes' path: %w", err)
	}
	back, err := env.Path(p.To, p.From)
	if err != nil {
		return nil, fmt.Errorf("the probes' way back: %w", err)
	}
	lossRT := 1 - (1-there.Loss)*(1-back.Loss)
	overhead := env.Param(ParamOverhead, 0) / 1e3
	probes := make([]Result, p.Count)
	sent := make([]bool, p.Count)
	timedOut := make([]bool, p.Count)
	for _, m := range out.Marks {
		if m.Actor != prober || m.Iter < 0 || m.Iter >= p.Count {
			continue
		}
		switch m.Label {
		case markSent:
			probes[m.Iter].Sent, sent[m.Iter] = nanos(m.T), true
		case markBack:
			probes[m.Iter].Received = nanos(m.T + overhead)
		case sim.TimeoutLabel:
			timedOut[m.Iter] = true
		}
	}
	rng := rand.New(rand.NewPCG(env.Seed(), lossStream))
	n := 0
	for i := range probes {
		if !sent[i] {
			break
		}
		r := &probes[i]
		r.Seq = i
		lost := rng.Float64() < lossRT
		if timedOut[i] || lost || r.Received == 0 {
			r.Received = 0
		} else {
			r.ReflectRx = r.Sent + (r.Received-r.Sent)/2
			r.ReflectTx = r.ReflectRx
		}
		n++
	}
	sum := Summarise(p.From, p.To, p.round(), probes[:n], ClockAgreement{Shared: true})
	o := &kind.Outcome{Samples: sum.Samples(), Metrics: sum.figures()}
	if n < p.Count {
		return o, fmt.Errorf("only %d of %d probes were sent before the simulation ended at %.3f s", n, p.Count, out.End)
	}
	return o, nil
}

// nanos is simulated time t in nanoseconds from the Unix epoch, the step's
// start.
func nanos(t float64) int64 { return int64(math.Round(t * float64(time.Second))) }
