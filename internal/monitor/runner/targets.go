package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/target"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// Tests toward targets, far ends that run no agent (issue 36): the
// source host's agent tests toward the target (measure/target), and the
// results are stored as an agent-to-agent test's, with the host as src
// and the target's name as dst, under the same metric names where the
// figure is the same, so that alerts and baselines judge them alike.

// Retries of a busy iperf3 server: a few, a while apart, before the run
// waits for its next period.
const (
	busyRetry    = 2 * time.Minute
	busyAttempts = 3
	// maxRefusedWait bounds the wait of a probe loop whose tests the
	// agent refuses (its policy names no such target), doubling from the
	// test's summary period.
	maxRefusedWait = 10 * time.Minute
)

// targetOf is the target a job's or loop's destination names, if any.
func (r *Runners) targetOf(name string) (core.Target, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg.Target(name)
}

// targetProbeLoop sends a round of probes from src toward a target (a
// STAMP reflector or a ping target) every summary period.
func (r *Runners) targetProbeLoop(ctx context.Context, t core.Test, src string, tg core.Target, delay time.Duration) {
	if !Sleep(ctx, delay) {
		return
	}
	k := core.PathKey{Src: src, Dst: tg.Name, Test: t.Name}
	req := TargetProbeRequest(t, tg)
	refused := 0
	r.rounds(ctx, src, tg.Name, t.Summary, crowdedHold, func(ctx context.Context, start time.Time) (func() time.Duration, error) {
		var sum *target.Summary
		sctx, cancel := context.WithTimeout(ctx, t.Summary+core.ProbeTimeout+30*time.Second)
		err := r.session(sctx, src, src, func(ctx context.Context, a, _ measure.Endpoint) error {
			var err error
			sum, err = target.Probes(ctx, a, req)
			return err
		})
		cancel()
		if ctx.Err() != nil {
			return nil, err
		}
		end := time.Now()
		disturbed, covered := r.disturbance(src, tg.Name, start, end)
		return func() time.Duration {
			o := core.Observation{Key: k, Type: core.Probe, At: end}
			switch {
			case errors.Is(err, target.ErrSilent):
				o.Failed = fmt.Sprintf("target %s (%s %s) answered none of %d probes from %s: %v", tg.Name, tg.Kind, tg.Address, sum.Sent, src, err)
			case sum != nil && sum.Sent > 0:
				o.Points, o.Loss = TargetProbePoints(o.At, t.Name, tg.Name, sum), TargetProbeLoss(sum)
				o.Family = measure.FamilyOf(sum.Address)
				o.Disturbed, o.Covered = disturbed, covered
			case err != nil:
				o.Failed = targetFailure(tg, src, err)
			default:
				o.Failed = fmt.Sprintf("target %s (%s %s): the agent on %s sent no probe", tg.Name, tg.Kind, tg.Address, src)
			}
			r.opts.Service.Observe(o, nil)
			if !errors.Is(err, target.ErrRefused) && !errors.Is(err, target.ErrUnsupported) {
				refused = 0
				return 0
			}
			// The policy or the agent's version will not change soon: no
			// retry storm, and a refusal audited each time.
			if refused == 0 {
				r.opts.Service.Logf("%s->%s (%s): %s (trying again with backoff)", src, tg.Name, t.Name, o.Failed)
			}
			refused++
			return min(t.Summary<<min(refused-1, 6), max(maxRefusedWait, t.Summary))
		}, err
	})
}

// TargetProbeRequest is the agent's Target call of one round of a probe
// test toward a target: rate x summary probes, 1/rate apart, of the
// test's size.
func TargetProbeRequest(t core.Test, tg core.Target) *agentpb.TargetRequest {
	interval := time.Duration(float64(time.Second) / t.Rate)
	count := max(2, int(math.Round(t.Rate*t.Summary.Seconds())))
	return &agentpb.TargetRequest{Kind: tg.Kind, Address: tg.Address, Probe: &agentpb.ProbeSpec{
		Count: uint32(count), IntervalNs: int64(interval), Size: uint32(t.Size), TimeoutNs: int64(core.ProbeTimeout)}}
}

// targetFailure says why a test toward a target gave nothing, naming it.
func targetFailure(tg core.Target, src string, err error) string {
	return fmt.Sprintf("target %s (%s %s) from %s: %v", tg.Name, tg.Kind, tg.Address, src, err)
}

// TargetProbePoints are a round of probes toward a target as a probe
// summary's figures: src the host, dst the target's name; one-way delays
// only where the STAMP reflector's clock and ours said they were
// synchronised.
func TargetProbePoints(at time.Time, test, name string, s *target.Summary) []core.Point {
	p := func(metric core.Name, v float64) core.Point {
		return core.Point{T: at, Src: s.From, Dst: name, Test: test, Metric: string(metric), Value: v}
	}
	var out []core.Point
	if s.Sent > 0 {
		out = append(out, p(core.LossRatio, float64(s.Lost)/float64(s.Sent)), p(core.DuplicatesRatio, float64(s.Duplicates)/float64(s.Sent)))
	}
	if s.Received > 0 {
		out = append(out, p(core.RTTMin, s.RTTms.Min/1e3), p(core.RTTMedian, s.RTTms.P50/1e3), p(core.RTTMax, s.RTTms.Max/1e3),
			p(core.Jitter, s.JitterMS/1e3), p(core.ReorderedRatio, float64(s.Reordered)/float64(s.Received)))
		if ow := s.OneWay; ow != nil && ow.Reliable {
			out = append(out, p(core.OWDForward, ow.Forward.P50/1e3), p(core.OWDBack, ow.Back.P50/1e3))
		}
	}
	return out
}

// TargetProbeLoss is a round's round-trip loss count, which the loss rule
// judges (a far end numbers nothing it receives: no loss each way).
func TargetProbeLoss(s *target.Summary) map[core.Name]core.LossCount {
	return map[core.Name]core.LossCount{core.LossRatio: {Lost: s.Loss.Lost, Of: s.Loss.Of, Low: s.Loss.Low, High: s.Loss.High}}
}

// runTargetJob runs a throughput test from a host toward an iperf3
// target; retry is when to run it again if the server was busy (zero:
// the schedule goes on).
func (r *Runners) runTargetJob(ctx context.Context, j core.Job, tg core.Target) (retry time.Time) {
	t := j.Test
	k := core.PathKey{Src: j.Src, Dst: j.Dst, Test: t.Name}
	started := time.Now()
	jctx, cancel := context.WithTimeout(ctx, t.Budget()+30*time.Second)
	defer cancel()
	spec := throughput.Spec{Protocol: throughput.TCP, Streams: t.Streams, Duration: t.Duration, Window: t.Window, Congestion: t.Congestion, Interval: time.Second}
	req := &agentpb.TargetRequest{Kind: core.TargetIperf3, Address: tg.Address, Throughput: throughput.SpecToPB(spec)}
	var res *agentpb.TargetResult
	var load InterfaceLoad
	err := r.session(jctx, j.Src, j.Src, func(ctx context.Context, a, _ measure.Endpoint) error {
		ctx = measure.WithWait(ctx, 0)
		after := loadDuring(ctx, a)
		defer func() { load = after() }()
		var err error
		res, err = target.Run(ctx, a, req, nil)
		return err
	})
	if ctx.Err() != nil {
		return time.Time{} // the service stops: a cut test is no result
	}
	now := time.Now()
	rec := &archive.TestRecord{Test: t.Name, Kind: t.Type, Src: j.Src, Dst: j.Dst, Started: started, Ended: now, Status: "ok"}
	o := core.Observation{Key: k, Type: t.Type, At: now}
	switch {
	case errors.Is(err, target.ErrBusy):
		rec.Status, rec.Reason = "busy", targetFailure(tg, j.Src, err)
		o.Busy = rec.Reason
		key := [3]string{t.Name, j.Src, j.Dst}
		r.mu.Lock()
		r.busy[key]++
		if r.busy[key] < busyAttempts {
			retry = now.Add(busyRetry)
		} else {
			delete(r.busy, key)
		}
		r.mu.Unlock()
	case err == nil && (res.GetThroughput().GetPartial() || res.GetError() != ""):
		err = fmt.Errorf("the test was cut short: %s", res.GetError())
		fallthrough
	case err != nil:
		rec.Status, rec.Reason = "failed", targetFailure(tg, j.Src, err)
		o.Failed = rec.Reason
	default:
		result := target.Throughput(j.Src, tg.Name, spec, res)
		o.Points, o.Family = TargetThroughputPoints(now, t.Name, result), result.Start.Family
		rec.Result, _ = json.Marshal(TestDetail{Result: result, InterfaceLoad: load})
	}
	if o.Busy == "" {
		r.mu.Lock()
		delete(r.busy, [3]string{t.Name, j.Src, j.Dst})
		r.mu.Unlock()
	}
	r.opts.Service.Observe(o, rec)
	return retry
}

// TargetThroughputPoints are a test toward an iperf3 server's figures,
// as ThroughputPoints, without the server's CPU where it did not say it.
func TargetThroughputPoints(at time.Time, test string, r *throughput.Result) []core.Point {
	out := ThroughputPoints(at, test, r)
	if r.End.CPU.ReceiverHost < 0 {
		out = slices.DeleteFunc(out, func(p core.Point) bool { return p.Metric == string(core.DstCPU) })
	}
	return out
}
