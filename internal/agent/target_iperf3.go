package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/iperf3"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// An iperf3 call: a TCP throughput test against an iperf3 server that runs
// no agent, through package iperf3's client (its protocol spoken by the
// agent itself).

// iperf3Spec is an iperf3 call's spec (TCP only: its streams, duration or
// bytes per stream, window, congestion control and interval; one stream
// when it gives none), or why it is not one.
func (t *targetCall) iperf3Spec() (iperf3.Spec, error) {
	p := t.req.GetThroughput()
	s := iperf3.Spec{Streams: int(min(p.GetStreams(), 1<<20)), Duration: time.Duration(p.GetDurationNs()), Bytes: int64(min(p.GetBytes(), 1<<62)),
		Reverse: t.req.GetReverse(), Window: int(min(p.GetWindowBytes(), 1<<40)), Congestion: p.GetCongestion(), Interval: time.Duration(p.GetIntervalNs())}
	s.Streams = orDefault(s.Streams, 1)
	switch {
	case p.GetProtocol() == agentpb.Protocol_PROTOCOL_UDP || p.GetUdpRateBps() != 0 || p.GetUdpLength() != 0:
		return s, errors.New("an iperf3 target takes TCP tests only")
	case s.Duration < 0:
		return s, fmt.Errorf("duration %v: cannot be negative", s.Duration)
	}
	return s, s.Validate(limits.Unlimited)
}

// iperf3Request is what the guard holds an iperf3 call to: a throughput
// test's length and bytes (all its streams'), as a Send's.
func (t *targetCall) iperf3Request(s iperf3.Spec) (lasts time.Duration, bytes int64) {
	if s.Bytes > 0 {
		bytes = min(s.Bytes, 1<<40) * int64(min(s.Streams, 1<<16))
	}
	return s.Duration, bytes
}

// runIperf3 runs an iperf3 call's test, sending each interval as it ends,
// and reports it as the agent's Send reports its own (throughput, the
// agent's end) beside the server's count (server).
func (s targetCalls) runIperf3(ctx context.Context, t *targetCall, send func(*agentpb.TargetEvent) error) (*agentpb.TargetResult, error) {
	spec, err := t.iperf3Spec()
	if err != nil {
		return nil, s.refusal(t.what(), err)
	}
	release, err := s.streams.take(s.Host, spec.Streams)
	if err != nil {
		return nil, err
	}
	defer release()
	network := "tcp6"
	if t.addr.Is4() {
		network = "tcp4"
	}
	// Intervals go to the controller from a goroutine of their own: the
	// test's must not wait for the stream. One the stream cannot take at
	// once waits in the queue, or is dropped when the queue is full (the
	// result has them all).
	queue := make(chan *agentpb.TargetEvent, 64)
	var sending sync.WaitGroup
	sending.Add(1)
	go func() {
		defer sending.Done()
		for ev := range queue {
			send(ev)
		}
	}()
	// Each interval's bytes count toward the identity's day as the test
	// cuts it, from the agent's own sockets, whether or not the
	// controller reads the intervals.
	meter := meterOf(ctx)
	cpu := s.startCPU()
	got, err := iperf3.Run(ctx, t.dest(), spec, iperf3.Options{Network: network, OnInterval: func(iv iperf3.Interval) {
		pb := iperf3Interval(iv)
		meter.countInterval(pb, time.Now())
		select {
		case queue <- &agentpb.TargetEvent{Event: &agentpb.TargetEvent_Interval{Interval: pb}}:
		default:
		}
	}})
	close(queue)
	sending.Wait()
	if got == nil {
		if errors.Is(err, iperf3.ErrBusy) {
			return nil, unavailable(farend.ReasonBusy, "agent on %s: %s toward %s: %v", s.Host, t.what(), t.dest(), err)
		}
		return nil, status.Errorf(codes.FailedPrecondition, "agent on %s: %s toward %s: %v", s.Host, t.what(), t.dest(), err)
	}
	ours, theirs := &agentpb.Summary{Partial: got.Partial, Error: got.Error}, &agentpb.Summary{HostCpuPercent: got.ServerCPUPercent, AgentCpuPercent: -1}
	ours.AgentCpuPercent, ours.HostCpuPercent = s.cpuSince(cpu)
	for _, st := range got.Streams {
		sent := throughput.Sample{ID: st.ID, Bytes: st.Sent, TCP: st.TCP}
		if st.Retransmits != nil {
			sent.Retransmits = *st.Retransmits
		}
		received := throughput.Sample{ID: st.ID, Bytes: st.Received}
		mine, far := sent, received
		mineSec, farSec := st.SenderSeconds, st.ReceiverSeconds
		if spec.Reverse {
			mine, far, mineSec, farSec = received, sent, st.ReceiverSeconds, st.SenderSeconds
		}
		ours.Streams = append(ours.Streams, throughput.SampleToPB(mine))
		theirs.Streams = append(theirs.Streams, throughput.SampleToPB(far))
		ours.SecondsNs = max(ours.SecondsNs, int64(mineSec*1e9))
		theirs.SecondsNs = max(theirs.SecondsNs, int64(farSec*1e9))
	}
	// The bytes of the day are the agent's own sockets' count: what it
	// sent, or reversed received. The server's says nothing of them.
	moved := got.Sent.Bytes
	if spec.Reverse {
		moved = got.Received.Bytes
	}
	res := &agentpb.TargetResult{Kind: t.kind, Address: t.dest(), Throughput: ours, Server: theirs, Congestion: got.Congestion,
		Warnings: got.Warnings, Bytes: moved, Error: got.Error}
	return res, nil
}

// iperf3Interval is an interval of an iperf3 test as Send's are.
func iperf3Interval(iv iperf3.Interval) *agentpb.Interval {
	p := &agentpb.Interval{StartNs: int64(iv.Start), EndNs: int64(iv.End)}
	for _, st := range iv.Streams {
		p.Streams = append(p.Streams, throughput.SampleToPB(throughput.Sample{ID: st.ID, Bytes: st.Bytes, Retransmits: st.Retransmits, TCP: st.TCP}))
	}
	return p
}
