// Package target is the controller's side of tests toward far ends that
// run no wanlab agent (issue 36): an iperf3 server, a STAMP reflector, a
// host that only answers ping. It asks one host's agent to test toward
// the far end (the agent's Target call: the agent resolves the far end's
// name and tests only toward an address its policy names) and summarises
// what came back in the terms of wanlab's own probes: round trips, jitter,
// and loss with its 95% interval.
package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/binomial"
	"github.com/wanlab/wanlab/internal/delay"
	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/iperf3"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

// The kinds of far end, as a TargetRequest names them (package farend's
// words).
const (
	Ping   = farend.Ping
	STAMP  = farend.STAMP
	Iperf3 = farend.Iperf3
)

var (
	// ErrUnsupported is a far end the host's agent cannot test toward: an
	// agent of an older version, or a kind it does not test yet.
	ErrUnsupported = errors.New("the agent cannot test toward this kind of far end")
	// ErrRefused is a far end the agent's policy does not let this
	// controller test toward (its rule names no such target, or does not
	// allow the kind of test), or a test over its limits.
	ErrRefused = errors.New("the agent's policy refuses the test")
	// ErrSilent is a far end that answered none of the probes.
	ErrSilent = errors.New("the far end did not answer")
	// ErrBusy is an iperf3 server busy running another test (the agent
	// answered Unavailable saying so: farend.ReasonBusy): try again later.
	// It is iperf3's own sentinel, so that errors.Is(err, iperf3.ErrBusy)
	// holds through the agent. The agent's words say why; an agent that
	// stopped answering is no ErrBusy.
	ErrBusy = iperf3.ErrBusy
	// ErrResolveTimeout is a far end whose name the agent could not
	// resolve in time (farend.ReasonResolveTimeout): try again later, or
	// give an address.
	ErrResolveTimeout = errors.New("the agent's resolver did not answer in time")
)

// reasonError is an agent's refusal that says which failure it is: its
// words, matched to the sentinel its reason names.
type reasonError struct {
	sentinel error
	words    string
}

func (e *reasonError) Error() string { return e.words }
func (e *reasonError) Unwrap() error { return e.sentinel }

// sentinels are the errors the reasons of an agent's refusals name.
var sentinels = map[string]error{farend.ReasonBusy: ErrBusy, farend.ReasonResolveTimeout: ErrResolveTimeout}

// reasonOf is the reason an agent's refusal gives (farend's), or "".
func reasonOf(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == farend.ErrorDomain {
			return info.GetReason()
		}
	}
	return ""
}

// Run asks from's agent for a test toward a far end and returns its
// result; onInterval, if set, gets each interval an iperf3 test reports.
// A refusal wraps ErrRefused or ErrUnsupported; the agent's words name
// the far end and the rule.
func Run(ctx context.Context, from measure.Endpoint, req *agentpb.TargetRequest, onInterval func(*agentpb.Interval)) (*agentpb.TargetResult, error) {
	ctx = measure.AsTest(ctx)
	stream, err := from.Agent.Target(ctx, req)
	for err == nil {
		var ev *agentpb.TargetEvent
		if ev, err = stream.Recv(); err != nil {
			break
		}
		if res := ev.GetResult(); res != nil {
			return res, nil
		}
		if iv := ev.GetInterval(); iv != nil && onInterval != nil {
			onInterval(iv)
		}
	}
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("the agent on %s ended the test toward %s without its result", from.Host, req.GetAddress())
	}
	switch status.Code(err) {
	case codes.Unimplemented:
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, measure.AgentError(from.Host, err))
	case codes.PermissionDenied, codes.ResourceExhausted:
		return nil, fmt.Errorf("%w: %w", ErrRefused, measure.AgentError(from.Host, err))
	case codes.Unavailable:
		if sentinel, ok := sentinels[reasonOf(err)]; ok {
			return nil, &reasonError{sentinel: sentinel, words: status.Convert(err).Message()} // the agent's words name it
		}
		// An agent that gives no reason (of issue 36's first version)
		// answers Unavailable for a busy iperf3 server, and for a slow
		// resolver too.
		if req.GetKind() == Iperf3 && answers(ctx, from) {
			return nil, &reasonError{sentinel: ErrBusy, words: status.Convert(err).Message()}
		}
	}
	return nil, measure.AgentError(from.Host, err)
}

// answers says whether the agent answers a hello: whether a call's
// Unavailable came from the agent (an iperf3 server busy) and not from
// the connection to it.
func answers(ctx context.Context, ep measure.Endpoint) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := ep.Agent.Hello(ctx, &agentpb.HelloRequest{})
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return false
	}
	return true
}

// Summary is a round of probes from a host toward a far end.
type Summary struct {
	From string `json:"from"`
	Kind string `json:"kind"`
	// Target is the far end as asked; Address the address tested (the
	// agent's resolution of a name).
	Target   string  `json:"target"`
	Address  string  `json:"address"`
	Count    int     `json:"count"`
	Interval float64 `json:"interval_ms"`
	Size     int     `json:"size"`
	// RTTms are the round trips (a STAMP reflector's turnaround taken out).
	RTTms delay.Stats `json:"rtt_ms"`
	// JitterMS is the mean difference between consecutive round trips.
	JitterMS    float64 `json:"jitter_ms"`
	Sent        int     `json:"sent"`
	Received    int     `json:"received"`
	Lost        int     `json:"lost"`
	LostPercent float64 `json:"lost_percent"`
	// Loss is the round trip loss with its 95% interval (Wilson's).
	Loss       binomial.Ratio `json:"loss"`
	Duplicates int            `json:"duplicates"`
	// Late replies came after their probe's timeout (counted lost);
	// Reordered after a later probe's.
	Late      int `json:"late"`
	Reordered int `json:"reordered"`
	// Socket is ping's ICMP socket: datagram or raw.
	Socket string `json:"socket,omitempty"`
	// OneWay is a STAMP round's delay each way; Invalid counts the
	// datagrams that came back but were no reply to it.
	OneWay    *OneWay        `json:"one_way,omitempty"`
	Invalid   int            `json:"invalid,omitempty"`
	Bytes     uint64         `json:"bytes"`
	Alongside int            `json:"tests_alongside"`
	Silent    bool           `json:"silent"`
	Partial   bool           `json:"partial"`
	Error     string         `json:"error,omitempty"`
	Probes    []probe.Result `json:"-"`
}

// OneWay is the delay each way of a STAMP round, each end's time on its
// own clock: they mean something (Reliable) when both clocks claimed to be
// synchronised to UTC in every reply, and hold the clocks' offset
// otherwise.
type OneWay struct {
	Forward  delay.Stats `json:"forward_ms"`
	Back     delay.Stats `json:"back_ms"`
	Reliable bool        `json:"reliable"`
}

// Probes runs a round of probes toward a far end (req's kind Ping or
// STAMP) and summarises it. The summary comes with an error when the far
// end answered none (ErrSilent) or the round ended early.
func Probes(ctx context.Context, from measure.Endpoint, req *agentpb.TargetRequest) (*Summary, error) {
	res, err := Run(ctx, from, req, nil)
	if err != nil {
		return nil, err
	}
	sum := Summarise(from.Host, req, res)
	switch {
	case sum.Silent:
		return sum, fmt.Errorf("%w: %s", ErrSilent, sum.Error)
	case sum.Partial:
		return sum, fmt.Errorf("agent on %s: %s", from.Host, sum.Error)
	}
	return sum, nil
}

// Summarise summarises the probes of a result of req, from the host from.
func Summarise(from string, req *agentpb.TargetRequest, res *agentpb.TargetResult) *Summary {
	spec := probe.SpecFromPB(req.GetProbe())
	probes := probe.ResultsFromPB(res.GetProbes().GetResults())
	p := probe.Summarise(from, res.GetAddress(), spec, probes, probe.ClockAgreement{})
	s := &Summary{From: from, Kind: res.GetKind(), Target: req.GetAddress(), Address: res.GetAddress(),
		Count: len(probes), Interval: p.Interval, Size: spec.Size,
		RTTms: p.RTTms, JitterMS: p.JitterMS, Sent: p.Sent, Received: p.Received, Lost: p.Lost, LostPercent: p.LostPercent,
		Loss: p.Loss.Roundtrip, Duplicates: int(res.GetDuplicates()) + p.Duplicates, Late: int(res.GetLate()), Reordered: int(res.GetReordered()),
		Socket: res.GetSocket(), Bytes: res.GetBytes(), Alongside: int(res.GetAlongside()),
		Silent: res.GetSilent(), Partial: res.GetProbes().GetPartial(), Error: res.GetError(), Probes: probes, Invalid: int(res.GetInvalid())}
	if s.Kind == STAMP && s.Received > 0 {
		s.OneWay = &OneWay{Forward: p.OneWay.Forward, Back: p.OneWay.Back, Reliable: res.GetSynchronised()}
	}
	return s
}

// Samples turns a round of probes into a step's samples, as probe's do:
// delay.roundtrip of every probe that came back and loss.roundtrip of
// every one, on the path from the host to the far end as asked; and, for
// a STAMP round whose clocks were synchronised, delay.oneway each way.
func (s *Summary) Samples() []results.Sample {
	var out []results.Sample
	path, back := s.From+"->"+s.Target, s.Target+"->"+s.From
	oneWay := s.OneWay != nil && s.OneWay.Reliable
	for _, p := range s.Probes {
		t := time.Unix(0, p.Sent).UTC()
		lost := 0.0
		if p.Lost() {
			lost = 1
		} else {
			out = append(out, results.Sample{T: t, Metric: "delay.roundtrip", Subject: path, Value: p.RTT().Seconds(), Unit: "s"})
			if oneWay {
				out = append(out,
					results.Sample{T: t, Metric: "delay.oneway", Subject: path, Value: p.Forward().Seconds(), Unit: "s"},
					results.Sample{T: t, Metric: "delay.oneway", Subject: back, Value: p.Back().Seconds(), Unit: "s"})
			}
		}
		out = append(out, results.Sample{T: t, Metric: "loss.roundtrip", Subject: path, Value: lost, Unit: "ratio"})
	}
	return out
}
