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

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Reflect returns probes until none has come for the requested idle time.
func (s probeCalls) Reflect(req *agentpb.ReflectRequest, stream agentpb.Agent_ReflectServer) error {
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
func (s probeCalls) Probe(ctx context.Context, req *agentpb.ProbeRequest) (*agentpb.ProbeSummary, error) {
	if req.GetTraceMaxHops() > 0 {
		return s.trace(ctx, req)
	}
	spec := probe.SpecFromPB(req.GetSpec())
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
// well). Probes the clock stepped during are refused
// (agentapi.ClockStepped); the bytes they sent still count (countFailed),
// as the refusal is no result.
func probeReply(ctx context.Context, res []probe.Result, size int, err error) (*agentpb.ProbeSummary, error) {
	sum := &agentpb.ProbeSummary{Results: probe.ResultsToPB(res)}
	if err != nil {
		sum.Partial, sum.Error = true, err.Error()
	}
	if errors.Is(err, probe.ErrClockStep) {
		countFailed(ctx, int64(len(res))*int64(max(size, 0)))
		return nil, agentapi.ClockStepped(sum)
	}
	return sum, nil
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
func (s probeCalls) trace(ctx context.Context, req *agentpb.ProbeRequest) (*agentpb.ProbeSummary, error) {
	hops, wait := int(req.GetTraceMaxHops()), time.Duration(req.GetTraceWaitNs())
	if hops > probe.MaxHops || wait < minTraceWait || wait > maxTraceWait {
		return nil, s.refusal("the trace", fmt.Errorf("%d hops, %v each: give 1 to %d hops and %v to %v", hops, wait, probe.MaxHops, minTraceWait, maxTraceWait))
	}
	if err := s.limitsOf(ctx).Duration("a trace", agentapi.TraceLasts(hops, wait)); err != nil {
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
