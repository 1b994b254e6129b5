package throughput

// The throughput test's simulation model (issue 34): the test's streams
// as actors of the simulator's model program (internal/sim), each sending
// chunks to a sink on the receiver and marking each one, and the step's
// figures read back from the marks, with the names runStep gives them.

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// The model's own params, which calibration may fit (beside kind's
// TCPParams).
const (
	ParamSenderCPU   = "sender_cpu_s_per_gb"
	ParamReceiverCPU = "receiver_cpu_s_per_gb"
)

// The params' declared values: what the model assumes uncalibrated.
const (
	defaultSenderCPU   = 0.3
	defaultReceiverCPU = 0.4
)

// The labels of a stream's marks: its start, the end of its 1-byte ping
// (the simulator's start-up latency of a send), the end of each chunk.
const (
	markStart = "start"
	markPing  = "ping"
	markChunk = "chunk"
)

// chunksPerTest is how many chunks a stream's expected bytes are cut into:
// few, as each pays the simulator's start-up latency, when the stream
// sends nothing (the rate read of the chunks takes it out, but the links'
// bytes would miss it); the rate is read of whole chunks, so a few are
// enough.
const chunksPerTest = 4

// Bounds of a chunk, in bytes.
const (
	minChunk = 64 << 10
	maxChunk = 1 << 30
)

// model is the throughput kind's kind.Model.
var model = kind.Model{
	Build: kind.BuildWith("a throughput model", (*Step).build),
	Read:  kind.ReadWith("a throughput model", (*Step).read),
	Assumptions: slices.Concat(kind.TCPAssumptions, []string{
		"Each stream sends chunks one after the other, its payload and its TCP/IP headers (MTU over MSS); the simulator's start-up latency, which it pays per chunk, is measured with a 1-byte send and counted once, as a real stream pays it once.",
		"UDP streams are flows paced at the target rate (and, like every flow, under SimGrid's window bound, network/TCP-gamma, over the round trip): what the path cannot carry is counted as lost, the path's loss is taken off what arrives, and jitter is 0 (no queues).",
		"Retransmits are the segments sent times the path's loss.",
		"The sender's CPU is simulated (sender_cpu_s_per_gb per chunk, beside its send, so a slow host slows the test); the receiver's is a figure of the bytes received (receiver_cpu_s_per_gb) and never slows the test.",
		"The test runs alone: tests_alongside is 0, and no per-second samples are made; its streams end the chunks under way at the duration, so the step's simulated seconds run a little past it.",
	}),
	Fit:     fit,
	Horizon: func(s kind.Spec) time.Duration { return 2 * s.Length() },
	Params: slices.Concat(kind.TCPParams, []kind.Param{
		{Name: ParamSenderCPU, Doc: "the sending host's CPU per gigabyte sent, in core-seconds"},
		{Name: ParamReceiverCPU, Doc: "the receiving host's CPU per gigabyte received, in core-seconds"},
	}),
}

// plan is how the model runs a step's streams.
type plan struct {
	sink    string
	streams []string // the streams' actors
	// capBPS caps each stream (0: nothing does); chunk is what it sends at
	// a time, chunks how many at most; cpu the sender's CPU per chunk.
	capBPS float64
	chunk  int64
	chunks int
	cpu    float64
	path   kind.PathFacts
	// wire is the bytes on the wire per byte of payload: 1 over the
	// path's WireShare for TCP (its headers), 1 for UDP.
	wire float64
}

// plan works out how the step's streams run on env's platform.
func (t *Step) plan(env kind.ModelEnv) (*plan, error) {
	path, err := env.Path(t.From, t.To)
	if err != nil {
		return nil, fmt.Errorf("the throughput test's path: %w", err)
	}
	p := &plan{sink: env.Name("throughput.sink." + t.To), path: path, wire: 1 / path.WireShare()}
	for i := range t.Streams {
		p.streams = append(p.streams, env.Name(fmt.Sprintf("throughput.%s.%d", t.From, i)))
	}
	if t.Protocol == "udp" {
		p.capBPS = float64(t.UDPRate) / float64(t.Streams)
		p.wire = 1
	} else {
		p.capBPS = kind.StreamRateBPS(env, path, t.From, t.To, t.flow())
	}
	// A stream's expected rate: its cap, or its share of the bottleneck.
	rate := p.capBPS
	if share := path.BottleneckBPS / float64(t.Streams); share > 0 && (rate == 0 || share < rate) {
		rate = share
	}
	if rate <= 0 {
		return nil, fmt.Errorf("the path from %s to %s has no rate and the test no cap", t.From, t.To)
	}
	expected := rate / 8 * t.Duration.Seconds()
	p.chunk = min(max(int64(expected/chunksPerTest), minChunk), maxChunk)
	// The chunks the expected rate moves, and a tail of 1/16 chunk: a
	// stream sends past the duration (up to the horizon, twice it) to end
	// the chunk under way, so that the links' bytes and the CPU over the
	// simulation's end are those of the stream at work.
	p.chunks = int(math.Ceil(expected / float64(p.chunk)))
	p.cpu = float64(p.chunk) / 1e9 * env.Param(ParamSenderCPU, defaultSenderCPU)
	return p, nil
}

// flow is one of the test's TCP streams, for kind.StreamRateBPS.
func (t *Step) flow() kind.TCPFlow {
	return kind.TCPFlow{Window: t.Window, Congestion: t.Congestion, Streams: t.Streams, Seconds: t.Duration.Seconds()}
}

// build makes the step's actors: a sink on the receiver, and an actor per
// stream on the sender that pings the sink with 1 byte, then sends chunk
// after chunk, marking each.
func (t *Step) build(env kind.ModelEnv) ([]sim.Actor, error) {
	p, err := t.plan(env)
	if err != nil {
		return nil, err
	}
	actors := []sim.Actor{{Name: p.sink, Host: t.To, Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}}}
	send := sim.Op{Do: sim.Send, To: p.sink, Bytes: int64(math.Round(float64(p.chunk) * p.wire)), RateBPS: p.capBPS * p.wire}
	chunk := []sim.Op{send, {Do: sim.Mark, Label: markChunk}}
	if p.cpu > 0 {
		chunk[0] = sim.Op{Do: sim.Par, Branches: [][]sim.Op{{send}, {{Do: sim.Exec, Seconds: p.cpu}}}}
	}
	for _, name := range p.streams {
		actors = append(actors, sim.Actor{Name: name, Host: t.From, Ops: []sim.Op{
			{Do: sim.Mark, Label: markStart},
			{Do: sim.Send, To: p.sink, Bytes: 1, RateBPS: p.capBPS * p.wire},
			{Do: sim.Mark, Label: markPing},
			{Do: sim.Repeat, Times: p.chunks, Body: chunk},
			{Do: sim.Send, To: p.sink, Bytes: max(1, send.Bytes/16), RateBPS: send.RateBPS},
		}})
	}
	return actors, nil
}

// read makes the step's figures from the streams' marks: each stream's
// rate over the chunks it ended within the duration, the start-up latency
// taken out of each; the test's throughput is their sum over the duration
// less one start-up.
func (t *Step) read(env kind.ModelEnv, out *sim.Output) (*kind.Outcome, error) {
	p, err := t.plan(env)
	if err != nil {
		return nil, err
	}
	d := t.Duration.Seconds()
	rate, startup := 0.0, 0.0
	for i, name := range p.streams {
		r, latency, err := streamRate(out.Marks, name, p.chunk, d)
		if err != nil {
			return nil, fmt.Errorf("stream %d of the throughput test: %w", i+1, err)
		}
		rate += r
		startup = max(startup, latency)
	}
	m := results.Metrics{
		results.Streams:        float64(t.Streams),
		results.WindowBytes:    float64(t.Window),
		results.TestsAlongside: 0,
	}
	got := rate
	if t.Protocol == "udp" {
		got = rate * (1 - p.path.Loss)
		m[results.LostPercent] = max(0, 100*(1-got/float64(t.UDPRate)))
		m[results.JitterMs] = 0
	} else {
		got = rate * max(0, d-startup) / d
		m[results.Retransmits] = math.Round(got / 8 * d / float64(p.path.MSS()) * p.path.Loss)
	}
	gbps := got / 8 / 1e9
	m[results.ThroughputMbps] = got / 1e6
	m[results.SenderCPUPct] = 100 * gbps * env.Param(ParamSenderCPU, defaultSenderCPU)
	m[results.ReceiverCPUPct] = 100 * gbps * env.Param(ParamReceiverCPU, defaultReceiverCPU)
	return &kind.Outcome{Metrics: m}, nil
}

// streamRate is the rate, in bit/s, of the stream of actor name over the
// chunks of chunk bytes it ended within d seconds of its start, each less
// the start-up latency its ping measured, and that latency.
func streamRate(marks []sim.MarkAt, name string, chunk int64, d float64) (rate, latency float64, err error) {
	start, ping, last := -1.0, -1.0, -1.0
	n := 0
	for _, mk := range marks {
		switch {
		case mk.Actor != name:
		case mk.Label == markStart:
			start = mk.T
		case mk.Label == markPing:
			ping = mk.T
		case mk.Label == markChunk && start >= 0 && mk.T-start <= d:
			n, last = n+1, mk.T
		}
	}
	if start < 0 || ping < 0 {
		return 0, 0, fmt.Errorf("the simulation has no start and ping marks of actor %s", name)
	}
	latency = ping - start
	busy := last - ping - float64(n)*latency
	if n == 0 || busy <= 0 {
		return 0, latency, fmt.Errorf("no chunk of %d bytes ended within the test's %.3g s: the simulated stream is slower than the model planned for", chunk, d)
	}
	return float64(int64(n)*chunk) * 8 / busy, latency, nil
}
