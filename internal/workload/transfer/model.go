package transfer

// The transfer's simulation model (issue 34): a file read from the
// sender's disk, sent over parallel streams and written to the
// receiver's, and back for a round trip, as actors of the simulator's
// model program (internal/sim); the step's figures and jobs are read back
// from their marks, as runStep makes them of the agents' summary.

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// The model's own params, which calibration may fit (beside kind's
// TCPParams).
const (
	ParamSenderCPU     = "transfer_sender_cpu_s_per_gb"
	ParamReceiverCPU   = "transfer_receiver_cpu_s_per_gb"
	ParamRatio         = "compression_ratio"
	ParamCompressCPU   = "compress_cpu_s_per_gb"
	ParamDecompressCPU = "decompress_cpu_s_per_gb"
	// ParamEfficiency is read per path (transfer_efficiency.FROM->TO)
	// first, then for every path.
	ParamEfficiency = "transfer_efficiency"
)

// The params' declared values: what the model assumes uncalibrated.
const (
	defaultSenderCPU     = 1.0
	defaultReceiverCPU   = 1.0
	defaultRatio         = 2.0
	defaultCompressCPU   = 3.5
	defaultDecompressCPU = 2.0
)

// The labels of the legs' marks: a leg starts as its sender starts and
// ends as its receiver has every stream's bytes on its disk.
const (
	markThereStart = "there.start"
	markThereEnd   = "there.end"
	markBackEnd    = "back.end"
)

// model is the transfer kind's kind.Model.
var model = kind.Model{
	Build: kind.BuildWith("a transfer model", (*Step).build),
	Read:  kind.ReadWith("a transfer model", (*Step).read),
	Assumptions: slices.Concat(kind.TCPAssumptions, []string{
		"With read-ahead (the default) reading, sending, writing and the CPU work of a leg overlap fully, so the slowest sets its time; with read_ahead off each stream reads its whole share and then sends it, instead of alternating block by block.",
		"The disk is the host's disk rate for every byte (the file is read from disk, not the page cache, and written through), and the checksums' reads add nothing.",
		"Compression makes the bytes on the wire the file's over compression_ratio, and costs compress_cpu_s_per_gb at the sender and decompress_cpu_s_per_gb at the receiver in place of transfer_sender_cpu_s_per_gb and transfer_receiver_cpu_s_per_gb; the block size plays no part.",
		"Each stream's rate is that of a fresh connection sending its share of the file (slow start included); once calibrated from transfers (transfer_efficiency), a leg's streams get that share of the uncalibrated rate, which takes in what the model leaves out (many streams' slow starts overflowing the queue, the losses' recovery), in place of the tcp_efficiency and bottleneck_efficiency other kinds fit.",
		"Connection set-up takes a round trip before the streams send, which carry their TCP/IP headers (MTU over MSS); the checksums' exchange adds no time, and every copy's checksum matches.",
		"The transfer runs alone: tests_alongside is 0.",
	}),
	Fit: kind.FitWith("a transfer model", (*Step).fit),
	Params: slices.Concat([]kind.Param{
		{Name: ParamSenderCPU, Doc: "the sending host's CPU per gigabyte of file sent uncompressed (reading, hashing, sending), in core-seconds"},
		{Name: ParamReceiverCPU, Doc: "the receiving host's CPU per gigabyte of file received uncompressed (receiving, hashing, writing), in core-seconds"},
		{Name: ParamCompressCPU, Doc: "the sending host's CPU per gigabyte of file sent compressed (reading, compressing, hashing, sending), in core-seconds"},
		{Name: ParamDecompressCPU, Doc: "the receiving host's CPU per gigabyte of file received compressed (receiving, decompressing, hashing, writing), in core-seconds"},
		{Name: ParamEfficiency, Doc: "the share of the model's uncalibrated stream rate a transfer's streams reach, a fraction (unset: the calibrated tcp_efficiency and bottleneck_efficiency apply instead); read per path as transfer_efficiency.FROM->TO first"},
	}, kind.TCPParams, []kind.Param{
		{Name: ParamRatio, Doc: "the file's bytes over the bytes on the wire when compressed, a ratio"},
	}),
}

// modelLeg is one leg of a transfer as the model runs it: from one actor
// to the other.
type modelLeg struct {
	from, to         string // hosts
	sender, receiver string // actors
	capBPS           float64
	// sendCPU and recvCPU are the CPU seconds of the leg at either end.
	sendCPU, recvCPU float64
	// rtt is the path's round trip in seconds: the connections' set-up.
	rtt float64
	// wire is the bytes on the wire per byte sent: 1 over the path's
	// WireShare (the TCP/IP headers).
	wire float64
}

// legs are the step's legs on env's platform: there, and back for a
// round trip.
func (t *Step) legs(env kind.ModelEnv) ([]modelLeg, error) {
	a, b := env.Name("transfer."+t.From), env.Name("transfer."+t.To)
	gb := float64(t.Size) / 1e9
	var send, recv float64
	if t.Compress {
		send = gb * env.Param(ParamCompressCPU, defaultCompressCPU)
		recv = gb * env.Param(ParamDecompressCPU, defaultDecompressCPU)
	} else {
		send = gb * env.Param(ParamSenderCPU, defaultSenderCPU)
		recv = gb * env.Param(ParamReceiverCPU, defaultReceiverCPU)
	}
	ratio := t.ratio(env)
	legs := []modelLeg{{from: t.From, to: t.To, sender: a, receiver: b}}
	if t.Roundtrip {
		legs = append(legs, modelLeg{from: t.To, to: t.From, sender: b, receiver: a})
	}
	for i := range legs {
		l := &legs[i]
		path, err := env.Path(l.from, l.to)
		if err != nil {
			return nil, fmt.Errorf("the transfer's path: %w", err)
		}
		l.capBPS = t.streamBPS(env, path, l.from, l.to, ratio)
		l.sendCPU, l.recvCPU, l.rtt, l.wire = send, recv, path.RTT.Seconds(), 1/path.WireShare()
	}
	return legs, nil
}

// flow is one of the step's streams, sending its share of the file's
// bytes on the wire (compressed by ratio), for kind.StreamRateBPS.
func (t *Step) flow(ratio float64) kind.TCPFlow {
	return kind.TCPFlow{Window: t.Window, Streams: t.Streams, Bytes: max(1, int64(math.Ceil(float64(t.Size)/ratio/float64(t.Streams))))}
}

// streamBPS is the rate of each stream of a leg from one host to another
// on path: the uncalibrated stream rate times the path's
// transfer_efficiency when calibration fitted one, else the stream rate
// with what calibration fitted of TCP's params.
func (t *Step) streamBPS(env kind.ModelEnv, path kind.PathFacts, from, to string, ratio float64) float64 {
	eff := env.Param(kind.PathParam(ParamEfficiency, from, to), env.Param(ParamEfficiency, -1))
	if eff < 0 {
		return kind.StreamRateBPS(env, path, from, to, t.flow(ratio))
	}
	return kind.StreamRateBPS(declaredTCP{env}, path, from, to, t.flow(ratio)) * eff
}

// declaredTCP is a ModelEnv whose TCP efficiencies are the declared ones,
// whatever calibration fitted: a transfer's own efficiency replaces them.
type declaredTCP struct{ kind.ModelEnv }

func (e declaredTCP) Param(name string, declared float64) float64 {
	v := e.ModelEnv.Param(name, declared)
	for _, p := range []string{kind.ParamTCPEfficiency, kind.ParamBottleneckEfficiency} {
		if name == p || strings.HasPrefix(name, p+".") {
			return declared
		}
	}
	return v
}

// ratio is the file's bytes over the bytes on the wire.
func (t *Step) ratio(env kind.ModelEnv) float64 {
	if !t.Compress {
		return 1
	}
	return max(env.Param(ParamRatio, defaultRatio), 1e-3)
}

// sendOps are a leg's sending side: every stream's share of the file on
// the wire, beside the disk's reads and the CPU.
func (t *Step) sendOps(l modelLeg, ratio float64) []sim.Op {
	var par [][]sim.Op
	for _, r := range ranges(t.Size, t.Streams) {
		send := sim.Op{Do: sim.Send, To: l.receiver, Bytes: max(1, int64(math.Round(float64(r[1])/ratio*l.wire))), RateBPS: l.capBPS * l.wire}
		if t.Serial {
			par = append(par, []sim.Op{{Do: sim.Read, Bytes: r[1]}, send})
		} else {
			par = append(par, []sim.Op{send})
		}
	}
	if !t.Serial {
		par = append(par, []sim.Op{{Do: sim.Read, Bytes: t.Size}})
	}
	if l.sendCPU > 0 {
		par = append(par, []sim.Op{{Do: sim.Exec, Seconds: l.sendCPU}})
	}
	ops := []sim.Op{{Do: sim.Par, Branches: par}}
	if l.rtt > 0 {
		ops = append([]sim.Op{{Do: sim.Sleep, Seconds: l.rtt}}, ops...)
	}
	return ops
}

// recvOps are a leg's receiving side: a receive per stream, beside the
// disk's writes and the CPU.
func (t *Step) recvOps(l modelLeg) []sim.Op {
	var par [][]sim.Op
	for range t.Streams {
		par = append(par, []sim.Op{{Do: sim.Recv}})
	}
	par = append(par, []sim.Op{{Do: sim.Write, Bytes: t.Size}})
	if l.recvCPU > 0 {
		par = append(par, []sim.Op{{Do: sim.Exec, Seconds: l.recvCPU}})
	}
	return []sim.Op{{Do: sim.Par, Branches: par}}
}

// build makes the step's two actors, one on each host: the sender sends
// the file there while the receiver receives and writes it; for a round
// trip the receiver then sends it back to the sender.
func (t *Step) build(env kind.ModelEnv) ([]sim.Actor, error) {
	legs, err := t.legs(env)
	if err != nil {
		return nil, err
	}
	ratio := t.ratio(env)
	there := legs[0]
	a := sim.Actor{Name: there.sender, Host: t.From, Ops: append([]sim.Op{{Do: sim.Mark, Label: markThereStart}}, t.sendOps(there, ratio)...)}
	b := sim.Actor{Name: there.receiver, Host: t.To, Ops: append(t.recvOps(there), sim.Op{Do: sim.Mark, Label: markThereEnd})}
	if t.Roundtrip {
		back := legs[1]
		b.Ops = append(b.Ops, t.sendOps(back, ratio)...)
		a.Ops = append(append(a.Ops, t.recvOps(back)...), sim.Op{Do: sim.Mark, Label: markBackEnd})
	}
	return []sim.Actor{a, b}, nil
}

// read makes the step's figures and a job per leg from the legs' marks,
// through outcome as runStep does.
func (t *Step) read(env kind.ModelEnv, out *sim.Output) (*kind.Outcome, error) {
	legs, err := t.legs(env)
	if err != nil {
		return nil, err
	}
	at := map[string]float64{}
	for _, m := range out.Marks {
		if m.Actor == legs[0].sender || m.Actor == legs[0].receiver {
			at[m.Label] = m.T
		}
	}
	bounds := [][2]string{{markThereStart, markThereEnd}, {markThereEnd, markBackEnd}}
	sum := &Summary{Streams: t.Streams, Compress: t.Compress, ChecksumOK: true}
	var times [][2]float64
	for i, l := range legs {
		start, ok1 := at[bounds[i][0]]
		end, ok2 := at[bounds[i][1]]
		if !ok1 || !ok2 || end <= start {
			return nil, fmt.Errorf("the simulation has no end of the transfer's leg from %s to %s (it ended at %.3f s)", l.from, l.to, out.End)
		}
		secs := end - start
		leg := &Leg{From: l.from, To: l.to, Bytes: uint64(t.Size), Seconds: secs, BitsPerSecond: float64(t.Size) * 8 / secs,
			CompressionRatio: t.ratio(env), ChecksumOK: true}
		leg.CPU.SenderHost = 100 * l.sendCPU / secs
		leg.CPU.ReceiverHost = 100 * l.recvCPU / secs
		if i == 0 {
			sum.There = leg
		} else {
			sum.Back = leg
		}
		times = append(times, [2]float64{start, end})
	}
	o := t.outcome(sum, simTime(times[len(times)-1][1]))
	for i := range o.Jobs {
		o.Jobs[i].Start, o.Jobs[i].End = simTime(times[i][0]), simTime(times[i][1])
	}
	return o, nil
}

// simTime is simulated time t as a job's time: seconds from the Unix
// epoch, the step's start.
func simTime(t float64) time.Time {
	return time.Unix(0, 0).UTC().Add(time.Duration(math.Round(t * 1e9)))
}
