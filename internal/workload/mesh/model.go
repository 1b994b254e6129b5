package mesh

// The mesh's simulation model (issue 34): every node's loop as an actor of
// the simulator's model program (internal/sim), drawn as the node draws
// it (the same generator, seeded the same way from the step's seed), and
// the step's jobs and figures read back from the nodes' marks through
// outcome, as run makes them of the nodes' reports.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// The labels of a transfer's marks.
const (
	markStart = "start"
	markEnd   = "end"
)

// maxPlanned bounds the transfers planned for one node.
const maxPlanned = 1000

// model is the mesh kind's kind.Model.
var model = kind.Model{
	Build: kind.BuildWith("a mesh model", (*Spec).build),
	Read:  kind.ReadWith("a mesh model", (*Spec).read),
	Assumptions: slices.Concat(kind.TCPAssumptions, []string{
		"Each node draws its waits, peers, sizes and seeds as the real node does from the step's seed, so a prediction makes the same plan until the transfers' times differ.",
		"A peer's weight is its site access link's rate as the real node's is, when the platform says (else the bottleneck of the path to it).",
		"A stream back is the reply to a call, which the model program does not cap: only the links and SimGrid's window bound (network/TCP-gamma) limit it, not the window, the loss bound or the efficiency.",
		"With disk, a node's own reads (what it sends) and writes (what it gets back) are simulated; the peer's writes and reads are left out.",
		"Each stream carries its TCP/IP headers (MTU over MSS); connection set-up and the checksums' exchange add no time, every transfer's checksum matches, and the nodes' CPU is not simulated.",
		"A node's last wait is slept through before it sees that its time is up, where the real node stops at once: the simulation may end up to max_wait later.",
		"A job's TCP round trip is the paths' base round trip, without queueing, and its retransmissions its segments there times that path's loss.",
	}),
	Params: slices.Clone(kind.TCPParams),
	Fit:    kind.FitWith("a mesh model", (*Spec).fit),
	// The transfers under way when the duration ends run to their end, as
	// the real loop's do; the gates stop those that would start later.
	Horizon: func(kind.Spec) time.Duration { return 0 },
}

// planned is one transfer a node's loop may make.
type planned struct {
	wait time.Duration
	peer string
	size int64
}

// modelNode is one node as the model runs it.
type modelNode struct {
	host                     string
	index                    int
	node, sink, gate, closer string // actors
	plan                     []planned
	// capped says the plan stopped at maxPlanned, not at the duration.
	capped bool
}

// nodes draws every node's plan on env's platform: the loop's draws in
// the loop's order (wait, peer, size, seed), until the waits and the least
// time the transfers can take pass the duration.
func (m *Spec) nodes(env kind.ModelEnv) ([]modelNode, error) {
	nodes := make([]modelNode, len(m.Hosts))
	for i, host := range m.Hosts {
		peers, fastest, err := m.modelPeers(env, host)
		if err != nil {
			return nil, err
		}
		total := 0.0
		for _, p := range peers {
			total += p.Weight
		}
		n := modelNode{host: host, index: i, node: env.Name("mesh.node." + host), sink: env.Name("mesh.sink." + host),
			gate: env.Name("mesh.gate." + host), closer: env.Name("mesh.closer." + host)}
		rng := rand.New(rand.NewPCG(env.Seed()+uint64(i), 0x6d657368))
		elapsed := time.Duration(0)
		for {
			if len(n.plan) == maxPlanned {
				n.capped = true
				break
			}
			wait := time.Duration(rng.Float64() * float64(m.MaxWait))
			if elapsed += wait; elapsed > m.Duration {
				break
			}
			peer := pick(peers, rng.Float64()*total)
			size := m.Sizes[rng.IntN(len(m.Sizes))]
			rng.Uint64() // the transfer's seed
			n.plan = append(n.plan, planned{wait: wait, peer: peer.Name, size: size})
			if rate := fastest[peer.Name]; rate > 0 {
				elapsed += time.Duration(float64(size) * 8 / rate * float64(time.Second))
			}
		}
		nodes[i] = n
	}
	return nodes, nil
}

// modelPeers are host's peers weighted as run weighs them (by their site
// access link, else the path's bottleneck), and for each the most a
// transfer there and back could get: twice the paths' bottlenecks, each
// way.
func (m *Spec) modelPeers(env kind.ModelEnv, host string) ([]Peer, map[string]float64, error) {
	var peers []Peer
	fastest := map[string]float64{}
	for _, p := range m.Hosts {
		if p == host {
			continue
		}
		there, err := env.Path(host, p)
		if err != nil {
			return nil, nil, fmt.Errorf("the mesh's path: %w", err)
		}
		back, err := env.Path(p, host)
		if err != nil {
			return nil, nil, fmt.Errorf("the mesh's path: %w", err)
		}
		rate := there.AccessBPS
		if rate <= 0 {
			rate = there.BottleneckBPS
		}
		if rate <= 0 {
			rate = unlimited
		}
		peers = append(peers, Peer{Name: p, Weight: rate / 1e6})
		if there.BottleneckBPS > 0 && back.BottleneckBPS > 0 {
			// size*8/(2 there) + size*8/(2 back) = size*8/fastest
			fastest[p] = 2 / (1/there.BottleneckBPS + 1/back.BottleneckBPS)
		}
	}
	return peers, fastest, nil
}

// build makes every node's actors: a sink its peers' transfers go to, and
// its loop, each transfer gated: a gate that a closer shuts at the
// duration's end refuses the transfers that would start after it.
func (m *Spec) build(env kind.ModelEnv) ([]sim.Actor, error) {
	nodes, err := m.nodes(env)
	if err != nil {
		return nil, err
	}
	sinks := map[string]string{}
	for _, n := range nodes {
		sinks[n.host] = n.sink
	}
	var actors []sim.Actor
	for _, n := range nodes {
		actors = append(actors, sim.Actor{Name: n.sink, Host: n.host, Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}})
		if len(n.plan) == 0 {
			continue
		}
		gate := sim.Op{Do: sim.Call, To: n.gate, Bytes: 1}
		var loop []sim.Op
		for _, p := range n.plan {
			put, get, err := m.transferOps(env, n.host, p, sinks[p.peer])
			if err != nil {
				return nil, err
			}
			loop = append(loop, sim.Op{Do: sim.Repeat, Times: 1, UntilRefused: true, Body: []sim.Op{
				gate, {Do: sim.Sleep, Seconds: p.wait.Seconds()}, gate,
				{Do: sim.Mark, Label: markStart}, put, get, {Do: sim.Mark, Label: markEnd},
			}})
		}
		actors = append(actors,
			sim.Actor{Name: n.gate, Host: n.host, Daemon: true, Ops: []sim.Op{{Do: sim.Serve, Stock: 2*len(n.plan) + 1}}},
			sim.Actor{Name: n.closer, Host: n.host, Daemon: true, Ops: []sim.Op{
				{Do: sim.Sleep, Seconds: m.Duration.Seconds()},
				{Do: sim.Repeat, UntilRefused: true, Body: []sim.Op{gate}},
			}},
			sim.Actor{Name: n.node, Host: n.host, Ops: loop})
	}
	return actors, nil
}

// transferOps are one transfer's two halves: its streams there, sends to
// the peer's sink (beside the node's disk reads), then its streams back,
// calls the sink answers with the stream's share (beside the node's disk
// writes).
func (m *Spec) transferOps(env kind.ModelEnv, host string, p planned, sink string) (put, get sim.Op, err error) {
	path, err := env.Path(host, p.peer)
	if err != nil {
		return put, get, fmt.Errorf("the mesh's path: %w", err)
	}
	put, get = sim.Op{Do: sim.Par}, sim.Op{Do: sim.Par}
	wire := 1 / path.WireShare() // the TCP/IP headers
	for i := range m.Streams {
		share := p.size*int64(i+1)/int64(m.Streams) - p.size*int64(i)/int64(m.Streams)
		bytes := int64(math.Round(float64(share) * wire))
		capBPS := kind.StreamRateBPS(env, path, host, p.peer, kind.TCPFlow{Streams: m.Streams, Bytes: share})
		put.Branches = append(put.Branches, []sim.Op{{Do: sim.Send, To: sink, Bytes: bytes, RateBPS: capBPS * wire}})
		get.Branches = append(get.Branches, []sim.Op{{Do: sim.Call, To: sink, Bytes: headerSz, Reply: bytes}})
	}
	if m.Disk {
		put.Branches = append(put.Branches, []sim.Op{{Do: sim.Read, Bytes: p.size}})
		get.Branches = append(get.Branches, []sim.Op{{Do: sim.Write, Bytes: p.size}})
	}
	return put, get, nil
}

// read makes the step's jobs from the nodes' marks, the k-th start of a
// node its plan's k-th transfer, and its figures through outcome.
func (m *Spec) read(env kind.ModelEnv, out *sim.Output) (*kind.Outcome, error) {
	nodes, err := m.nodes(env)
	if err != nil {
		return nil, err
	}
	byActor := map[string]*modelNode{}
	for i := range nodes {
		byActor[nodes[i].node] = &nodes[i]
	}
	started := map[string][]float64{}
	ended := map[string][]float64{}
	for _, mk := range out.Marks {
		if _, ok := byActor[mk.Actor]; !ok {
			continue
		}
		switch mk.Label {
		case markStart:
			started[mk.Actor] = append(started[mk.Actor], mk.T)
		case markEnd:
			ended[mk.Actor] = append(ended[mk.Actor], mk.T)
		}
	}
	var jobs []job.Record
	var events []string
	for _, n := range nodes {
		starts, ends := started[n.node], ended[n.node]
		if len(starts) > len(n.plan) {
			return nil, fmt.Errorf("node %s started %d transfers of the %d planned", n.host, len(starts), len(n.plan))
		}
		for k, t := range starts {
			p := n.plan[k]
			rec := job.Record{ID: n.index*1_000_000 + k, Host: n.host, Subject: n.host + "<->" + p.peer, Start: simTime(t)}
			if k < len(ends) {
				rec.End, rec.Bytes, rec.Status = simTime(ends[k]), 2*p.size, job.OK
				if err := m.addTCP(env, &rec, n.host, p); err != nil {
					return nil, err
				}
			} else {
				rec.End, rec.Status, rec.Reason = simTime(out.End), job.Cancelled, "the simulation ended before the transfer did"
			}
			jobs = append(jobs, rec)
		}
		if n.capped && len(starts) == len(n.plan) {
			events = append(events, fmt.Sprintf("node %s made all %d transfers the model plans at most: its loop may have been cut short", n.host, maxPlanned))
		}
	}
	o := outcome(jobs)
	o.Events = events
	return o, nil
}

// addTCP gives a transfer's job the TCP figures its node reads of its
// connections: the mean of the base round trips of those there and back,
// and the segments it sent there times that path's loss.
func (m *Spec) addTCP(env kind.ModelEnv, rec *job.Record, host string, p planned) error {
	there, err := env.Path(host, p.peer)
	if err != nil {
		return fmt.Errorf("the mesh's path: %w", err)
	}
	back, err := env.Path(p.peer, host)
	if err != nil {
		return fmt.Errorf("the mesh's path: %w", err)
	}
	rec.TCPRTTms = float64(there.RTT+back.RTT) / 2 / float64(time.Millisecond)
	rec.TCPRetransmits = uint32(math.Round(math.Ceil(float64(p.size)/float64(there.MSS())) * there.Loss))
	return nil
}

// simTime is simulated time t as a job's time: seconds from the Unix
// epoch, the step's start.
func simTime(t float64) time.Time {
	return time.Unix(0, 0).UTC().Add(time.Duration(math.Round(t * 1e9)))
}
