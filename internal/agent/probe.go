package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Reflect returns probes until none has come for the requested idle time.
func (s *Server) Reflect(req *agentpb.ReflectRequest, stream agentpb.Agent_ReflectServer) error {
	idle, most := time.Duration(req.GetIdleNs()), s.limitsOf(stream.Context()).MaxDuration
	if idle <= 0 || idle > most {
		return status.Errorf(codes.InvalidArgument, "agent on %s refuses the reflector: idle time %v must be positive and within %v", s.Host, idle, most)
	}
	r, err := probe.NewReflector(s.Test)
	if err != nil {
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	if err := stream.Send(&agentpb.ProbeEvent{Event: &agentpb.ProbeEvent_Listening{Listening: s.listening(stream.Context(), r.Port, r.Token)}}); err != nil {
		return err
	}
	n, err := r.Run(stream.Context(), idle)
	sum := &agentpb.ProbeSummary{Reflected: uint32(n)}
	if err != nil {
		sum.Partial, sum.Error = true, err.Error()
	}
	return stream.Send(&agentpb.ProbeEvent{Event: &agentpb.ProbeEvent_Summary{Summary: sum}})
}

// Probe sends probes to a reflector and returns every one.
func (s *Server) Probe(ctx context.Context, req *agentpb.ProbeRequest) (*agentpb.ProbeSummary, error) {
	if req.GetTraceMaxHops() > 0 {
		return s.trace(ctx, req)
	}
	spec := ProbeSpecFromPB(req.GetSpec())
	if err := spec.Validate(s.limitsOf(ctx)); err != nil {
		return nil, s.refusal("the probes", err)
	}
	tok, err := token.Parse(req.GetToken())
	if err != nil {
		return nil, s.refusal("the probes", err)
	}
	res, err := probe.Run(ctx, spec, req.GetAddress(), tok)
	return probeReply(ctx, res, spec.Size, err)
}

// probeReply is the answer to probes that ended with err (nil: all went
// well). Probes the clock stepped during are refused (ClockStepped); the
// bytes they sent still count (countFailed), as the refusal is no result.
func probeReply(ctx context.Context, res []probe.Result, size int, err error) (*agentpb.ProbeSummary, error) {
	sum := &agentpb.ProbeSummary{}
	for _, r := range res {
		sum.Results = append(sum.Results, &agentpb.ProbeResult{
			Seq: uint32(r.Seq), SentNs: r.Sent, ReflectRxNs: r.ReflectRx, ReflectTxNs: r.ReflectTx,
			ReceivedNs: r.Received, Duplicates: uint32(r.Duplicates),
		})
	}
	if err != nil {
		sum.Partial, sum.Error = true, err.Error()
	}
	if errors.Is(err, probe.ErrClockStep) {
		countFailed(ctx, int64(len(res))*int64(max(size, 0)))
		return nil, ClockStepped(sum)
	}
	return sum, nil
}

// ClockStepped is the answer to probes the host's clock stepped during:
// codes.Aborted with the summary, partial and saying so, as its detail,
// which ClockStepOf finds again on the controller's side.
func ClockStepped(sum *agentpb.ProbeSummary) error {
	st, err := status.New(codes.Aborted, sum.Error).WithDetails(sum)
	if err != nil {
		return status.Error(codes.Aborted, sum.Error)
	}
	return st.Err()
}

// ClockStepOf is the summary of probes whose host's clock stepped during
// them, from the error of a Probe call; false if err is not one.
func ClockStepOf(err error) (*agentpb.ProbeSummary, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Aborted {
		return nil, false
	}
	for _, d := range st.Details() {
		if sum, ok := d.(*agentpb.ProbeSummary); ok {
			return sum, true
		}
	}
	return nil, false
}

// ProbeSpecToPB converts a probe spec to its wire form.
func ProbeSpecToPB(s probe.Spec) *agentpb.ProbeSpec {
	return &agentpb.ProbeSpec{Count: uint32(s.Count), IntervalNs: int64(s.Interval), Size: uint32(s.Size), TimeoutNs: int64(s.Timeout)}
}

// ProbeSpecFromPB converts a wire probe spec back.
func ProbeSpecFromPB(p *agentpb.ProbeSpec) probe.Spec {
	return probe.Spec{Count: int(p.GetCount()), Interval: time.Duration(p.GetIntervalNs()), Size: int(p.GetSize()), Timeout: time.Duration(p.GetTimeoutNs())}
}

// ProbeResultsFromPB converts wire probe results back.
func ProbeResultsFromPB(ps []*agentpb.ProbeResult) []probe.Result {
	out := make([]probe.Result, len(ps))
	for i, p := range ps {
		out[i] = probe.Result{Seq: int(p.Seq), Sent: p.SentNs, ReflectRx: p.ReflectRxNs, ReflectTx: p.ReflectTxNs, Received: p.ReceivedNs, Duplicates: int(p.Duplicates)}
	}
	return out
}

// bootID identifies this kernel boot, and so this machine's clock.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// Bounds of a trace's wait for each hop.
const (
	minTraceWait = 100 * time.Millisecond
	maxTraceWait = 5 * time.Second
)

// trace traces the path to a reflector.
func (s *Server) trace(ctx context.Context, req *agentpb.ProbeRequest) (*agentpb.ProbeSummary, error) {
	hops, wait := int(req.GetTraceMaxHops()), time.Duration(req.GetTraceWaitNs())
	if hops > probe.MaxHops || wait < minTraceWait || wait > maxTraceWait {
		return nil, s.refusal("the trace", fmt.Errorf("%d hops, %v each: give 1 to %d hops and %v to %v", hops, wait, probe.MaxHops, minTraceWait, maxTraceWait))
	}
	if err := s.limitsOf(ctx).Duration("a trace", TraceLasts(hops, wait)); err != nil {
		return nil, s.refusal("the trace", err)
	}
	tok, err := token.Parse(req.GetToken())
	if err != nil {
		return nil, s.refusal("the trace", err)
	}
	found, reached, err := probe.Trace(ctx, req.GetAddress(), tok, hops, wait)
	sum := &agentpb.ProbeSummary{Reached: reached}
	for _, h := range found {
		sum.Hops = append(sum.Hops, &agentpb.Hop{Ttl: uint32(h.TTL), Address: h.Addr, RttNs: int64(h.RTT)})
	}
	if err != nil {
		sum.Partial, sum.Error = true, err.Error()
	}
	return sum, nil
}

// TraceLasts bounds how long a trace may take.
func TraceLasts(hops int, wait time.Duration) time.Duration {
	return time.Duration(hops) * 2 * wait
}
