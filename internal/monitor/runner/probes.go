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
	k := core.PathKey{Src: src, Dst: dst, Test: t.Name, Family: t.Family}
	ctx = withFamily(ctx, t.Family)
	interval := time.Duration(float64(time.Second) / t.Rate)
	spec := probe.Spec{Count: max(2, int(math.Round(t.Rate*t.Summary.Seconds()))), Interval: interval, Size: t.Size, Timeout: 2*time.Second + 4*interval}
	r.rounds(ctx, src, dst, t.Summary, crowdedHold, func(ctx context.Context, start time.Time) (func() time.Duration, error) {
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
			return nil, err
		}
		end := time.Now()
		disturbed, covered := r.disturbance(src, dst, start, end)
		return func() time.Duration {
			o := core.Observation{Key: k, Type: core.Probe, At: end}
			// The service follows each direction's one-way delay (issue 37).
			oneWay := r.oneWay(k, o.At, res, err)
			switch {
			case errors.Is(err, probe.ErrClockStep):
				// The round trips across the step are wrong: this summary
				// is dropped, and said so.
				r.opts.Service.Logf("%s->%s (%s): %v: summary dropped", src, dst, t.Name, err)
				return 0
			case res != nil && res.Sent > 0:
				o.Points, o.Loss = append(ProbePoints(o.At, t.Name, res), oneWay...), ProbeLoss(res)
				o.Family = res.Family
				o.Disturbed, o.Covered = disturbed, covered
				if res.OneWay.Clock != "" && !res.OneWay.Reliable && res.OneWay.ErrorBoundMS < 0 {
					o.ClockProblem = res.OneWay.Clock
				}
			case err != nil:
				o.Failed = err.Error()
			}
			r.opts.Service.Observe(o, nil)
			return 0
		}, err
	})
}

// maxRounds is the most rounds of a pair's probes in flight at once: one
// sending while the one before waits for its last replies.
const maxRounds = 2

// crowdedHold is how long a loop runs its rounds one at a time once an
// agent refused an overlapping one for its identity's tests at once
// (limits.tests) before it tries overlapping them again.
const crowdedHold = 10 * time.Minute

// roundFunc measures one round of a loop's probes, started at start. It
// returns what hands its result to the service (nil when ctx ended),
// which returns how long to wait from then before the next round starts
// (a refusal's backoff; 0: none beyond the period), and the round's
// error, if any.
type roundFunc func(ctx context.Context, start time.Time) (observe func() time.Duration, err error)

// flying is a round in flight: its end comes on end; overlapped says
// whether another of its loop's rounds was in flight when it started.
type flying struct {
	end        chan roundEnd
	overlapped bool
}

// roundEnd is what a round returned.
type roundEnd struct {
	observe func() time.Duration
	err     error
}

// rounds runs a pair's rounds of probes (a probe test's summaries, or
// rounds toward a target), one every period from its start, so that the
// wait for a round's last replies is no part of the period: the next
// round starts meanwhile, with at most maxRounds in flight. Their results
// are handed over in the rounds' order, never two at once.
//
// An agent may allow the loop's identity too few tests at once for that
// (limits.tests counts each round's calls): a round it refuses so while
// another was in flight is no failure. It is run again as soon as the
// rounds before it have ended, and the loop runs its rounds one at a time
// for hold (saying so once) before it tries overlapping them again. A
// round refused so with none other in flight is handed over as any
// failure. rounds returns once ctx has ended and the rounds in flight
// have.
func (r *Runners) rounds(ctx context.Context, src, dst string, period, hold time.Duration, round roundFunc) {
	var flight []flying
	defer func() {
		for _, f := range flight {
			<-f.end
		}
	}()
	next := time.Now()
	var notBefore, alone time.Time // a pause's end; until when rounds do not overlap
	warned := false
	for ctx.Err() == nil {
		most := maxRounds
		if time.Now().Before(alone) {
			most = 1
		}
		e, ok := awaitRound(ctx, flight, next, len(flight) < most)
		if ok {
			f := flight[0]
			flight = flight[1:]
			var crowded *measure.TooManyTestsError
			if f.overlapped && errors.As(e.err, &crowded) {
				if !warned {
					r.opts.Service.Logf("%s->%s: agent on %s allows too few tests for overlapping summaries: one at a time, overlap tried again every %s (%s)", src, dst, crowded.Host, hold, crowded.Words)
					warned = true
				}
				alone = time.Now().Add(hold)
				next = core.Later(time.Now(), notBefore)
				continue
			}
			if e.observe != nil {
				if pause := e.observe(); pause > 0 {
					notBefore = time.Now().Add(pause)
					next = core.Later(next, notBefore)
				}
			}
			continue
		}
		if ctx.Err() != nil {
			continue
		}
		if wait, ok := r.turn(src, dst, min(period, recheck)); !ok {
			next = time.Now().Add(wait)
			continue
		}
		start := time.Now()
		next = start.Add(period)
		f := flying{end: make(chan roundEnd, 1), overlapped: len(flight) > 0}
		flight = append(flight, f)
		go func() {
			observe, err := round(ctx, start)
			f.end <- roundEnd{observe, err}
		}()
	}
}

// awaitRound waits for the end of the oldest round in flight (ok), for
// next if another round may start, or for ctx's end, whichever comes
// first; a round's end that is already in comes before all.
func awaitRound(ctx context.Context, flight []flying, next time.Time, another bool) (e roundEnd, ok bool) {
	var oldest chan roundEnd
	if len(flight) > 0 {
		oldest = flight[0].end
		select {
		case e = <-oldest:
			return e, true
		default:
		}
	}
	var due <-chan time.Time
	if another {
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		due = t.C
	}
	select {
	case <-ctx.Done():
	case e = <-oldest:
		return e, true
	case <-due:
	}
	return roundEnd{}, false
}

// traceLoop traces a pair's path every t.Every.
func (r *Runners) traceLoop(ctx context.Context, t core.Test, src, dst string, delay time.Duration) {
	if !Sleep(ctx, delay) {
		return
	}
	k := core.PathKey{Src: src, Dst: dst, Test: t.Name, Family: t.Family}
	ctx = withFamily(ctx, t.Family)
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
		ep, err := r.dial(dctx, h)
		cancel()
		if err != nil {
			if ctx.Err() == nil && hostDown(err) {
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
