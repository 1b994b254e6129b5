package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/delay"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
)

// The controller's side of probes: a round of probes between two hosts'
// agents (Measure), summarised (Summary), and a trace of the path between
// them (MeasureTrace).

// Summary summarises a round of probes from one host to another.
type Summary struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Count    int     `json:"count"`
	Interval float64 `json:"interval_ms"`
	Size     int     `json:"size"`
	// Family is the address family the probes used: "ipv4" or "ipv6",
	// that of the reflector's address.
	Family string `json:"family,omitempty"`
	// RTTms excludes the reflector's turnaround time.
	RTTms delay.Stats `json:"rtt_ms"`
	// JitterMS is the mean difference between consecutive round trips (IPDV).
	JitterMS float64 `json:"jitter_ms"`
	Sent     int     `json:"sent"`
	Received int     `json:"received"`
	Lost     int     `json:"lost"`
	// LostPercent is the round-trip loss, in iperf3's name.
	LostPercent float64 `json:"lost_percent"`
	Duplicates  int     `json:"duplicates"`
	// Loss is the loss on each way, where the reflector numbered what it
	// received, and round trip, with their 95% intervals (loss.go).
	Loss Loss `json:"loss"`
	// OneWay holds the delay in each direction: exact when the hosts share
	// a clock (one machine), within ErrorBoundMS when both clocks are
	// synchronised, and unreliable (offset by the clocks' difference)
	// otherwise. Round trips never depend on the clocks.
	OneWay struct {
		Forward  delay.Stats `json:"forward_ms"`
		Back     delay.Stats `json:"back_ms"`
		Clock    string      `json:"clock"`
		Reliable bool        `json:"reliable"`
		// ErrorBoundMS is the sum of both clocks' estimated errors (0 for a
		// shared clock, -1 when a clock is not synchronised).
		ErrorBoundMS float64 `json:"error_bound_ms"`
	} `json:"one_way"`
	Probes []Result `json:"-"`
	// Alongside counts the other tests the prober's agent ran meanwhile.
	Alongside int    `json:"tests_alongside"`
	Partial   bool   `json:"partial"`
	Error     string `json:"error,omitempty"`
}

// Measure runs spec from src to a reflector on dst.
func Measure(ctx context.Context, src, dst measure.Endpoint, spec Spec) (*Summary, error) {
	ctx = measure.AsTest(ctx)
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	refl, err := dst.Agent.Reflect(rctx, &agentpb.ReflectRequest{IdleNs: int64(spec.Timeout + 10*time.Second)})
	if err != nil {
		return nil, measure.AgentError(dst.Host, err)
	}
	addr, l, err := measure.Listening(dst, refl.Recv)
	if err != nil {
		return nil, err
	}
	sum, err := src.Agent.Probe(ctx, &agentpb.ProbeRequest{Spec: SpecToPB(spec), Address: addr, Token: l.GetToken()})
	stepped, clockStepped := agentapi.ClockStepOf(err)
	switch {
	case clockStepped:
		sum = stepped
	case err != nil:
		return nil, measure.AgentError(src.Host, err)
	}
	res := Summarise(src.Host, dst.Host, spec, ResultsFromPB(sum.Results), Clocks(src.Agent, dst.Agent))
	res.Family = measure.FamilyOf(addr)
	res.Alongside = int(max(sum.Alongside, l.GetAlongside()))
	if clockStepped || olderClockStep(sum) {
		res.Partial, res.Error = true, sum.Error
		return res, &reported{msg: sum.Error, err: ErrClockStep}
	}
	if sum.Partial {
		res.Partial, res.Error = true, sum.Error
		return res, errors.New(sum.Error)
	}
	if res.Sent < spec.Count {
		res.Partial, res.Error = true, fmt.Sprintf("only %d of %d probes were sent", res.Sent, spec.Count)
		return res, errors.New(res.Error)
	}
	return res, nil
}

// reported is an error an agent reported in its words, which is err of
// this build (errors.Is finds it).
type reported struct {
	msg string
	err error
}

func (e *reported) Error() string { return e.msg }
func (e *reported) Unwrap() error { return e.err }

// ClockAgreement is how far two hosts' clocks can be trusted for one-way
// delays between them.
type ClockAgreement struct {
	Shared bool
	// Synchronised says both clocks are; Bound is then the sum of their
	// estimated errors.
	Synchronised bool
	Bound        time.Duration
	// Unsynchronised names the hosts whose clock is not.
	Unsynchronised []string
}

// Clocks reads the agreement of two agents' clocks from their hellos.
func Clocks(a, b *agentapi.Client) ClockAgreement {
	if a.BootID != "" && a.BootID == b.BootID {
		return ClockAgreement{Shared: true}
	}
	var c ClockAgreement
	for _, x := range []*agentapi.Client{a, b} {
		clk := x.Info.GetClock()
		if !clk.GetSynchronised() {
			c.Unsynchronised = append(c.Unsynchronised, x.Host)
		}
		c.Bound += time.Duration(clk.GetEstimatedErrorNs())
	}
	c.Synchronised = len(c.Unsynchronised) == 0
	return c
}

// Summarise computes a round of probes' statistics.
func Summarise(from, to string, spec Spec, probes []Result, clocks ClockAgreement) *Summary {
	r := &Summary{From: from, To: to, Count: spec.Count, Interval: float64(spec.Interval) / 1e6, Size: spec.Size, Probes: probes, Sent: len(probes)}
	var rtts, fwd, back []time.Duration
	var ipdv float64
	var prev time.Duration
	for _, p := range probes {
		r.Duplicates += p.Duplicates
		if p.Lost() {
			r.Lost++
			continue
		}
		rtt := p.RTT()
		if len(rtts) > 0 {
			ipdv += math.Abs(float64(rtt - prev))
		}
		prev = rtt
		rtts = append(rtts, rtt)
		fwd, back = append(fwd, p.Forward()), append(back, p.Back())
	}
	r.Received = len(rtts)
	if r.Sent > 0 {
		r.LostPercent = 100 * float64(r.Lost) / float64(r.Sent)
	}
	if len(rtts) > 1 {
		r.JitterMS = ipdv / float64(len(rtts)-1) / 1e6
	}
	r.Loss = lossOf(probes, spec.Size)
	r.RTTms = delay.Summarize(rtts)
	r.OneWay.Forward, r.OneWay.Back = delay.Summarize(fwd), delay.Summarize(back)
	switch {
	case clocks.Shared:
		r.OneWay.Clock, r.OneWay.Reliable = "shared", true
	case clocks.Synchronised:
		r.OneWay.Reliable, r.OneWay.ErrorBoundMS = true, float64(clocks.Bound)/1e6
		r.OneWay.Clock = fmt.Sprintf("synchronised: one-way delays within ±%.3g ms (both clocks' estimated errors)", r.OneWay.ErrorBoundMS)
	default:
		r.OneWay.ErrorBoundMS = -1
		r.OneWay.Clock = fmt.Sprintf("unreliable: the clock of %s is not synchronised, so one-way delays include the clocks' offset (round trips do not)", strings.Join(clocks.Unsynchronised, " and "))
	}
	return r
}

// Samples turns a round of probes into a step's samples: delay.roundtrip
// and delay.oneway of every probe that came back, loss.roundtrip of every
// one.
func (r *Summary) Samples() []results.Sample {
	var out []results.Sample
	path := r.From + "->" + r.To
	back := r.To + "->" + r.From
	for _, p := range r.Probes {
		t := time.Unix(0, p.Sent).UTC()
		lost := 0.0
		if p.Lost() {
			lost = 1
		} else {
			out = append(out,
				results.Sample{T: t, Metric: "delay.roundtrip", Subject: path, Value: p.RTT().Seconds(), Unit: "s"},
				results.Sample{T: t, Metric: "delay.oneway", Subject: path, Value: p.Forward().Seconds(), Unit: "s"},
				results.Sample{T: t, Metric: "delay.oneway", Subject: back, Value: p.Back().Seconds(), Unit: "s"},
			)
		}
		out = append(out, results.Sample{T: t, Metric: "loss.roundtrip", Subject: path, Value: lost, Unit: "ratio"})
	}
	return out
}

// TraceResult is the path from one host to another, hop by hop.
type TraceResult struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Family is the address family traced: "ipv4" or "ipv6".
	Family  string `json:"family,omitempty"`
	Hops    []Hop  `json:"hops"`
	Reached bool   `json:"reached"`
	Partial bool   `json:"partial"`
	Error   string `json:"error,omitempty"`
}

// Addrs are the hops' addresses, "*" where none answered.
func (r *TraceResult) Addrs() []string {
	out := make([]string, len(r.Hops))
	for i, h := range r.Hops {
		out[i] = h.Addr
		if out[i] == "" {
			out[i] = "*"
		}
	}
	return out
}

// MeasureTrace finds the hops from src to a reflector on dst, at most
// maxHops, waiting up to wait for each.
func MeasureTrace(ctx context.Context, src, dst measure.Endpoint, maxHops int, wait time.Duration) (*TraceResult, error) {
	ctx = measure.AsTest(ctx)
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	refl, err := dst.Agent.Reflect(rctx, &agentpb.ReflectRequest{IdleNs: int64(agentapi.TraceLasts(maxHops, wait) + 10*time.Second)})
	if err != nil {
		return nil, measure.AgentError(dst.Host, err)
	}
	addr, l, err := measure.Listening(dst, refl.Recv)
	if err != nil {
		return nil, err
	}
	sum, err := src.Agent.Probe(ctx, &agentpb.ProbeRequest{Address: addr, Token: l.GetToken(), TraceMaxHops: uint32(maxHops), TraceWaitNs: int64(wait)})
	if err != nil {
		return nil, measure.AgentError(src.Host, err)
	}
	res := &TraceResult{From: src.Host, To: dst.Host, Family: measure.FamilyOf(addr), Reached: sum.Reached}
	if len(sum.Hops) > maxHops {
		return nil, fmt.Errorf("agent on %s: a trace of at most %d hops came back with %d", src.Host, maxHops, len(sum.Hops))
	}
	for _, h := range sum.Hops {
		res.Hops = append(res.Hops, Hop{TTL: int(h.Ttl), Addr: h.Address, RTT: time.Duration(h.RttNs)})
	}
	if sum.Partial {
		res.Partial, res.Error = true, sum.Error
		return res, errors.New(sum.Error)
	}
	return res, nil
}

// olderClockStep says whether a summary is an older agent's answer to
// probes its clock stepped during: before ClockStepped, an agent sent the
// summary, partial, with the error's text, which begins with
// ErrClockStep's. This reads a peer's message for compatibility (it is the
// only place the text is matched), so that errors.Is finds ErrClockStep
// whichever agent answered.
func olderClockStep(sum *agentpb.ProbeSummary) bool {
	return sum.GetPartial() && strings.HasPrefix(sum.GetError(), ErrClockStep.Error()+" ")
}
