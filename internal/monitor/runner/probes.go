package runner

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/endpoints"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

// turn says whether the loop of a pair measures now: not if another
// process measures the pair (then it waits elsewhere), nor while one of
// its hosts is down (until it may be tried again).
func (r *Runners) turn(src, dst string, elsewhere time.Duration) (wait time.Duration, ok bool) {
	if !r.opts.Shares.Owns(src, dst) {
		return elsewhere, false
	}
	r.mu.Lock()
	until, down := r.down.blocked(time.Now(), src, dst)
	r.mu.Unlock()
	if down {
		return time.Until(until), false
	}
	return 0, true
}

func (r *Runners) probeLoop(ctx context.Context, t core.Test, src, dst string, delay time.Duration) {
	if !Sleep(ctx, delay) {
		return
	}
	k := core.PathKey{Src: src, Dst: dst, Test: t.Name}
	interval := time.Duration(float64(time.Second) / t.Rate)
	spec := probe.Spec{Count: max(2, int(math.Round(t.Rate*t.Summary.Seconds()))), Interval: interval, Size: t.Size, Timeout: 2*time.Second + 4*interval}
	for ctx.Err() == nil {
		if wait, ok := r.turn(src, dst, min(t.Summary, recheck)); !ok {
			if !Sleep(ctx, wait) {
				return
			}
			continue
		}
		start := time.Now()
		var res *probe.Summary
		// An agent that stops answering mid-session ends it, not the loop.
		sctx, cancel := context.WithTimeout(ctx, t.Summary+spec.Timeout+30*time.Second)
		err := r.session(sctx, src, dst, func(ctx context.Context, a, b measure.Endpoint) error {
			var err error
			res, err = probe.Measure(ctx, a, b, spec)
			return err
		})
		cancel()
		if ctx.Err() != nil {
			return
		}
		o := core.Observation{Key: k, Type: core.Probe, At: time.Now()}
		// The service follows each direction's one-way delay (issue 37).
		oneWay := r.oneWay(k, o.At, res, err)
		switch {
		case errors.Is(err, probe.ErrClockStep):
			// The round trips across the step are wrong: this summary is
			// dropped, and said so.
			r.opts.Service.Logf("%s->%s (%s): %v: summary dropped", src, dst, t.Name, err)
			continue
		case res != nil && res.Sent > 0:
			o.Points, o.Loss = append(ProbePoints(o.At, t.Name, res), oneWay...), ProbeLoss(res)
			o.Family = res.Family
			o.Disturbed, o.Covered = r.disturbance(src, dst, start, o.At)
			if res.OneWay.Clock != "" && !res.OneWay.Reliable && res.OneWay.ErrorBoundMS < 0 {
				o.ClockProblem = res.OneWay.Clock
			}
		case err != nil:
			o.Failed = err.Error()
		}
		r.opts.Service.Observe(o, nil)
		// A failed session waits before the next, not in a tight loop.
		if o.Failed != "" && time.Since(start) < t.Summary {
			if !Sleep(ctx, t.Summary-time.Since(start)) {
				return
			}
		}
	}
}

// traceLoop traces a pair's path every t.Every.
func (r *Runners) traceLoop(ctx context.Context, t core.Test, src, dst string, delay time.Duration) {
	if !Sleep(ctx, delay) {
		return
	}
	k := core.PathKey{Src: src, Dst: dst, Test: t.Name}
	for next := time.Now(); ctx.Err() == nil; {
		if !Sleep(ctx, time.Until(next)) {
			return
		}
		next = next.Add(t.Every)
		if _, ok := r.turn(src, dst, 0); !ok {
			continue
		}
		started := time.Now()
		var res *probe.TraceResult
		sctx, cancel := context.WithTimeout(ctx, t.Budget()+30*time.Second)
		err := r.session(sctx, src, dst, func(ctx context.Context, a, b measure.Endpoint) error {
			var err error
			res, err = probe.MeasureTrace(ctx, a, b, t.MaxHops, t.Wait)
			return err
		})
		cancel()
		if ctx.Err() != nil {
			return
		}
		o := core.Observation{Key: k, Type: core.Trace, At: time.Now()}
		rec := &archive.TestRecord{Test: t.Name, Kind: core.Trace, Src: src, Dst: dst, Started: started, Ended: o.At, Status: "ok"}
		if err != nil || res == nil || len(res.Hops) == 0 {
			if err == nil {
				err = errors.New("the trace found no hop")
			}
			o.Failed, rec.Status, rec.Reason = err.Error(), "failed", err.Error()
		} else {
			o.Hops, o.Family = res.Addrs(), res.Family
			if !res.Reached {
				o.Hops = append(o.Hops, core.Unreached)
			}
			o.Points = []core.Point{{T: o.At, Src: src, Dst: dst, Test: t.Name, Metric: string(core.HopCount), Value: float64(len(res.Hops))}}
			rec.Result, _ = json.Marshal(res)
		}
		r.opts.Service.Observe(o, rec)
	}
}

// session connects to both hosts' agents and runs fn; a host whose agent
// does not answer is marked down and retried with backoff.
func (r *Runners) session(ctx context.Context, src, dst string, fn func(ctx context.Context, a, b measure.Endpoint) error) error {
	eps := map[string]measure.Endpoint{}
	defer measure.CloseAll(eps)
	for _, h := range core.Ends(src, dst) {
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		ep, err := endpoints.Dial(dctx, r.opts.Bed, h)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.mu.Lock()
				first := r.down.failed(h, err, time.Now())
				r.mu.Unlock()
				if first {
					r.opts.Service.Logf("host %s does not answer: %v (retrying with backoff; its paths show no data)", h, err)
				}
			}
			return err
		}
		eps[h] = ep[h]
	}
	for _, h := range core.Ends(src, dst) {
		r.mu.Lock()
		d := r.down.answered(h, time.Now())
		r.mu.Unlock()
		if d > 0 {
			r.opts.Service.Logf("host %s answers again after %s", h, d.Round(time.Second))
		}
	}
	return fn(ctx, eps[src], eps[dst])
}

// disturbance names the throughput-class tests that shared a host or a
// link with the path (either way) between start and end ("" if none did),
// and the share of that time they covered.
func (r *Runners) disturbance(src, dst string, start, end time.Time) (string, float64) {
	links := r.opts.Via(src, dst)
	r.mu.Lock()
	defer r.mu.Unlock()
	var who []string
	var covered time.Duration
	for _, sp := range r.spans {
		spEnd := sp.end
		if spEnd.IsZero() {
			spEnd = end
		}
		from, to := core.Later(sp.start, start), spEnd
		if to.After(end) {
			to = end
		}
		if !to.After(from) {
			continue
		}
		shared := slices.Contains([]string{src, dst}, sp.src) || slices.Contains([]string{src, dst}, sp.dst)
		for _, d := range r.opts.Via(sp.src, sp.dst) {
			shared = shared || slices.Contains(links, d)
		}
		if shared {
			who = append(who, sp.src+"->"+sp.dst)
			covered += to.Sub(from)
		}
	}
	if len(who) == 0 {
		return "", 0
	}
	return "throughput-class tests ran meanwhile on a shared host or link: " + strings.Join(who, ", "), min(1, covered.Seconds()/end.Sub(start).Seconds())
}
