package throughput

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
)

// The controller's side of a throughput test: both ends run by their
// hosts' agents (Measure, MeasureBoth), assembled into one Result in
// iperf3's JSON shape where the concepts agree.

// Result is one throughput test, laid out as iperf3's JSON.
type Result struct {
	Start     StartInfo        `json:"start"`
	Intervals []IntervalResult `json:"intervals"`
	End       EndResult        `json:"end"`
	// Partial says the test ended early; Error says why. Whatever was
	// measured until then is kept.
	Partial bool   `json:"partial"`
	Error   string `json:"error,omitempty"`
	// Alongside is the most other tests either end's agent ran during this
	// one: 0 when the test had both hosts to itself.
	Alongside int `json:"tests_alongside"`
}

// StartInfo records what was asked.
type StartInfo struct {
	From       string  `json:"from"`
	To         string  `json:"to"`
	Protocol   string  `json:"protocol"`
	Streams    int     `json:"num_streams"`
	Duration   float64 `json:"duration"` // seconds; 0 when bytes end the test
	Bytes      int64   `json:"bytes"`    // per stream; 0 when the duration ends it
	Window     int     `json:"window,omitempty"`
	Congestion string  `json:"congestion,omitempty"`
	UDPRate    float64 `json:"target_bits_per_second,omitempty"`
	UDPLength  int     `json:"blksize,omitempty"`
	// Family is the address family the test's traffic used: "ipv4" or
	// "ipv6", that of the receiver's address the sender connected to.
	Family string `json:"family,omitempty"`
}

// StreamResult is one stream (or their sum) over an interval or the test.
type StreamResult struct {
	ID            int     `json:"socket,omitempty"`
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         uint64  `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	// TCP, sender side.
	Retransmits *uint32 `json:"retransmits,omitempty"`
	SndCwnd     uint32  `json:"snd_cwnd,omitempty"` // bytes, as iperf3
	RTT         uint32  `json:"rtt,omitempty"`      // us
	RTTVar      uint32  `json:"rttvar,omitempty"`   // us
	PacingRate  uint64  `json:"pacing_rate,omitempty"`
	// UDP, receiver side.
	Packets     uint64  `json:"packets,omitempty"`
	LostPackets uint64  `json:"lost_packets,omitempty"`
	LostPercent float64 `json:"lost_percent,omitempty"`
	OutOfOrder  uint64  `json:"out_of_order,omitempty"`
	JitterMS    float64 `json:"jitter_ms,omitempty"`
}

// IntervalResult is every stream over one interval: the sender's view for
// TCP (with TCP_INFO), the receiver's for UDP (with loss and jitter).
type IntervalResult struct {
	Streams []StreamResult `json:"streams"`
	Sum     StreamResult   `json:"sum"`
}

// EndResult is the whole test from both ends.
type EndResult struct {
	Streams     []StreamResult    `json:"streams"` // the receiver's view, per stream
	SumSent     StreamResult      `json:"sum_sent"`
	SumReceived StreamResult      `json:"sum_received"`
	CPU         measure.CPUResult `json:"cpu_utilization_percent"`
}

// receiverWait bounds how long the receiver may take to report after the sender finished.
const receiverWait = 15 * time.Second

// Measure runs one test from snd to rcv through their agents.
func Measure(ctx context.Context, snd, rcv measure.Endpoint, spec Spec) (*Result, error) {
	ctx = measure.AsTest(ctx)
	res := &Result{Start: StartInfo{
		From: snd.Host, To: rcv.Host, Protocol: spec.Protocol.String(), Streams: spec.Streams,
		Duration: spec.Duration.Seconds(), Bytes: spec.Bytes, Window: spec.Window, Congestion: spec.Congestion,
		UDPRate: spec.UDPRate, UDPLength: spec.UDPLength,
	}}
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	rstream, err := rcv.Agent.Receive(rctx, &agentpb.ReceiveRequest{Spec: SpecToPB(spec)})
	if err != nil {
		return nil, measure.AgentError(rcv.Host, err)
	}
	addr, l, err := measure.Listening(rcv, rstream.Recv)
	if err != nil {
		return nil, err
	}
	res.Start.Family = measure.FamilyOf(addr)
	type side struct {
		intervals []Interval
		totals    *Totals
		err       error
	}
	recvDone := make(chan side, 1)
	go func() {
		var s side
		s.intervals, s.totals, s.err = collect(rstream)
		recvDone <- s
	}()
	sstream, err := snd.Agent.Send(ctx, &agentpb.SendRequest{Spec: SpecToPB(spec), Address: addr, Token: l.GetToken()})
	var sent side
	if err != nil {
		sent.err = err
	} else {
		sent.intervals, sent.totals, sent.err = collect(sstream)
	}
	if sent.err != nil {
		rcancel() // the receiver would wait for streams that never come
	}
	var recv side
	select {
	case recv = <-recvDone:
	case <-time.After(receiverWait):
		rcancel()
		recv = <-recvDone
		recv.err = errors.Join(recv.err, fmt.Errorf("the receiver on %s did not finish within %v of the sender", rcv.Host, receiverWait))
	}
	res.assemble(spec, sent.intervals, recv.intervals, sent.totals, recv.totals)
	var errs []error
	if sent.err != nil {
		errs = append(errs, measure.AgentError(snd.Host, sent.err))
	}
	if recv.err != nil && sent.err == nil {
		errs = append(errs, measure.AgentError(rcv.Host, recv.err))
	}
	for _, t := range []*Totals{sent.totals, recv.totals} {
		if t != nil && t.Partial && t.Err != nil {
			errs = append(errs, t.Err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		res.Partial, res.Error = true, err.Error()
		return res, err
	}
	return res, nil
}

// collect reads a test's events until its summary.
func collect[S interface {
	Recv() (*agentpb.ThroughputEvent, error)
}](stream S) ([]Interval, *Totals, error) {
	var ivs []Interval
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return ivs, nil, errors.New("the agent ended the test without a summary")
		}
		if err != nil {
			return ivs, nil, err
		}
		switch e := ev.Event.(type) {
		case *agentpb.ThroughputEvent_Interval:
			ivs = append(ivs, IntervalFromPB(e.Interval))
		case *agentpb.ThroughputEvent_Summary:
			t := SummaryFromPB(e.Summary)
			return ivs, &t, nil
		}
	}
}

func (r *Result) assemble(spec Spec, sent, recv []Interval, sTot, rTot *Totals) {
	ivs := sent
	if spec.Protocol == UDP {
		ivs = recv
	}
	for _, iv := range ivs {
		ir := IntervalResult{Sum: StreamResult{Start: iv.Start.Seconds(), End: iv.End.Seconds()}}
		for _, s := range iv.Streams {
			sr := streamResult(s, iv.Start, iv.End, spec.Protocol == TCP)
			ir.Streams = append(ir.Streams, sr)
			addTo(&ir.Sum, sr)
		}
		finish(&ir.Sum)
		r.Intervals = append(r.Intervals, ir)
	}
	if sTot != nil {
		r.End.SumSent = StreamResult{End: sTot.Elapsed.Seconds()}
		for _, s := range sTot.Streams {
			addTo(&r.End.SumSent, streamResult(s, 0, sTot.Elapsed, spec.Protocol == TCP))
		}
		finish(&r.End.SumSent)
		r.End.CPU.SenderHost, r.End.CPU.SenderAgent = sTot.HostCPUPercent, sTot.AgentCPUPercent
		r.Alongside = max(r.Alongside, sTot.Alongside)
	}
	if rTot != nil {
		r.End.SumReceived = StreamResult{End: rTot.Elapsed.Seconds()}
		for _, s := range rTot.Streams {
			sr := streamResult(s, 0, rTot.Elapsed, false)
			r.End.Streams = append(r.End.Streams, sr)
			addTo(&r.End.SumReceived, sr)
		}
		finish(&r.End.SumReceived)
		r.End.CPU.ReceiverHost, r.End.CPU.ReceiverAgent = rTot.HostCPUPercent, rTot.AgentCPUPercent
		r.Alongside = max(r.Alongside, rTot.Alongside)
	}
}

func streamResult(s Sample, start, end time.Duration, sender bool) StreamResult {
	sr := StreamResult{
		ID: s.ID + 1, Start: start.Seconds(), End: end.Seconds(), Seconds: (end - start).Seconds(), Bytes: s.Bytes,
		Packets: s.Packets, LostPackets: s.Lost, OutOfOrder: s.OutOfOrder, JitterMS: s.JitterMS,
	}
	if sr.Seconds > 0 {
		sr.BitsPerSecond = float64(s.Bytes) * 8 / sr.Seconds
	}
	if sender {
		retrans := s.Retransmits
		sr.Retransmits = &retrans
		if t := s.TCP; t != nil {
			sr.SndCwnd, sr.RTT, sr.RTTVar, sr.PacingRate = t.SndCwnd*t.SndMSS, t.RTT, t.RTTVar, t.PacingRate
		}
	}
	if total := s.Packets + s.Lost; total > 0 {
		sr.LostPercent = 100 * float64(s.Lost) / float64(total)
	}
	return sr
}

// addTo adds a stream into a sum; finish computes the sum's rates.
func addTo(sum *StreamResult, s StreamResult) {
	sum.Bytes += s.Bytes
	sum.Packets += s.Packets
	sum.LostPackets += s.LostPackets
	sum.OutOfOrder += s.OutOfOrder
	sum.JitterMS = max(sum.JitterMS, s.JitterMS)
	if s.Retransmits != nil {
		if sum.Retransmits == nil {
			sum.Retransmits = new(uint32)
		}
		*sum.Retransmits += *s.Retransmits
	}
	if s.RTT > 0 && (sum.RTT == 0 || s.RTT < sum.RTT) {
		sum.RTT = s.RTT // the smallest smoothed RTT of the streams
	}
}

func finish(sum *StreamResult) {
	sum.Seconds = sum.End - sum.Start
	if sum.Seconds > 0 {
		sum.BitsPerSecond = float64(sum.Bytes) * 8 / sum.Seconds
	}
	if total := sum.Packets + sum.LostPackets; total > 0 {
		sum.LostPercent = 100 * float64(sum.LostPackets) / float64(total)
	}
}

// Recorder keeps one measurement as it ends (archive.Recording).
type Recorder interface {
	Finish(samples []results.Sample, result any, err error) error
}

// MeasureBoth runs the test from a to b and, with both, from b to a at the
// same time, each kept by the recorder that record returns for it, and
// returns the results (nil for a test that measured nothing) and every error.
func MeasureBoth(ctx context.Context, a, b measure.Endpoint, spec Spec, both bool, record func(from, to string) (Recorder, error)) ([]*Result, error) {
	ctx = measure.AsTest(ctx) // both directions are one test
	runs := [][2]measure.Endpoint{{a, b}}
	if both {
		runs = append(runs, [2]measure.Endpoint{b, a})
	}
	recs := make([]Recorder, len(runs))
	for i, r := range runs {
		rec, err := record(r[0].Host, r[1].Host)
		if err != nil {
			return nil, err
		}
		recs[i] = rec
	}
	out := make([]*Result, len(runs))
	errs := make([]error, len(runs))
	starts := make([]time.Time, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			starts[i] = time.Now()
			out[i], errs[i] = Measure(ctx, r[0], r[1], spec)
		})
	}
	wg.Wait()
	for i, res := range out {
		var samples []results.Sample
		var kept any
		if res != nil {
			samples, kept = res.Samples(starts[i]), res
		}
		errs = append(errs, recs[i].Finish(samples, kept, errs[i]))
	}
	return out, errors.Join(errs...)
}
