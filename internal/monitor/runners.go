package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// runners are the loops that measure: a probe or trace loop per test and
// pair, a poll loop per SNMP device and one of the hosts' interfaces, and
// the scheduler's loop of throughput-class tests (exclusive, runJob). Each
// hands what it finds to the service's observe, which writes it through
// the service's appender.
type runners struct{ s *Service }

// startProbes starts one loop per probe test and pair, and one per SNMP
// device; s.mu is held.
func (rs *runners) startProbes(ctx context.Context) {
	s := rs.s
	pctx, cancel := context.WithCancel(ctx)
	s.probes = cancel
	for _, t := range s.cfg.Tests {
		if t.Exclusive() {
			continue
		}
		pairs := s.cfg.Pairs(t)
		for i, p := range pairs {
			s.probesWG.Add(1)
			// Stagger the loops, so that a mesh's sessions do not start
			// together: over one period, but probes (light) over at most
			// 10 s, so that a new service's grid fills within a minute.
			spread := t.Period()
			if t.Type == core.Probe {
				spread = min(spread, probeStagger)
			}
			delay := time.Duration(i) * spread / time.Duration(len(pairs))
			go func() {
				defer s.probesWG.Done()
				if t.Type == core.Trace {
					rs.traceLoop(pctx, t, p[0], p[1], delay)
				} else {
					rs.probeLoop(pctx, t, p[0], p[1], delay)
				}
			}()
		}
	}
	if every := s.cfg.HostInterfaces; every > 0 {
		s.probesWG.Add(1)
		go func() {
			defer s.probesWG.Done()
			rs.hostPollLoop(pctx, every)
		}()
	}
	for _, t := range s.cfg.SNMP {
		s.probesWG.Add(1)
		go func() {
			defer s.probesWG.Done()
			rs.pollLoop(pctx, t)
		}()
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (rs *runners) probeLoop(ctx context.Context, t core.Test, src, dst string, delay time.Duration) {
	s := rs.s
	if !sleep(ctx, delay) {
		return
	}
	k := core.PathKey{Src: src, Dst: dst, Test: t.Name}
	interval := time.Duration(float64(time.Second) / t.Rate)
	spec := probe.Spec{Count: max(2, int(math.Round(t.Rate*t.Summary.Seconds()))), Interval: interval, Size: t.Size, Timeout: 2*time.Second + 4*interval}
	for ctx.Err() == nil {
		s.mu.Lock()
		mine := s.owns(src, dst)
		until, down := s.down.blocked(time.Now(), src, dst)
		s.mu.Unlock()
		if !mine {
			if !sleep(ctx, min(t.Summary, coordinateEvery)) {
				return
			}
			continue
		}
		if down {
			if !sleep(ctx, time.Until(until)) {
				return
			}
			continue
		}
		start := time.Now()
		var res *measure.ProbeResult
		// An agent that stops answering mid-session ends it, not the loop.
		sctx, cancel := context.WithTimeout(ctx, t.Summary+spec.Timeout+30*time.Second)
		err := rs.session(sctx, src, dst, func(ctx context.Context, a, b measure.Endpoint) error {
			var err error
			res, err = measure.Probe(ctx, a, b, spec)
			return err
		})
		cancel()
		if ctx.Err() != nil {
			return
		}
		o := core.Observation{Key: k, Type: core.Probe, At: time.Now()}
		switch {
		case errors.Is(err, probe.ErrClockStep):
			// The round trips across the step are wrong: this summary is
			// dropped, and said so.
			s.mu.Lock()
			s.logf("%s->%s (%s): %v: summary dropped", src, dst, t.Name, err)
			s.mu.Unlock()
			continue
		case res != nil && res.Sent > 0:
			o.Points = ProbePoints(o.At, t.Name, res)
			o.Disturbed, o.Covered = rs.disturbance(src, dst, start, o.At)
			if res.OneWay.Clock != "" && !res.OneWay.Reliable && res.OneWay.ErrorBoundMS < 0 {
				o.ClockProblem = res.OneWay.Clock
			}
		case err != nil:
			o.Failed = err.Error()
		}
		s.observe(o, nil)
		// A failed session waits before the next, not in a tight loop.
		if o.Failed != "" && time.Since(start) < t.Summary {
			if !sleep(ctx, t.Summary-time.Since(start)) {
				return
			}
		}
	}
}

// traceLoop traces a pair's path every t.Every.
func (rs *runners) traceLoop(ctx context.Context, t core.Test, src, dst string, delay time.Duration) {
	s := rs.s
	if !sleep(ctx, delay) {
		return
	}
	k := core.PathKey{Src: src, Dst: dst, Test: t.Name}
	for next := time.Now(); ctx.Err() == nil; {
		if !sleep(ctx, time.Until(next)) {
			return
		}
		next = next.Add(t.Every)
		s.mu.Lock()
		mine := s.owns(src, dst)
		_, down := rs.hold(core.Job{Test: &t, Src: src, Dst: dst})
		s.mu.Unlock()
		if !mine || down {
			continue
		}
		started := time.Now()
		var res *measure.TraceResult
		sctx, cancel := context.WithTimeout(ctx, t.Budget()+30*time.Second)
		err := rs.session(sctx, src, dst, func(ctx context.Context, a, b measure.Endpoint) error {
			var err error
			res, err = measure.Trace(ctx, a, b, t.MaxHops, t.Wait)
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
			o.Hops = res.Addrs()
			if !res.Reached {
				o.Hops = append(o.Hops, core.Unreached)
			}
			o.Points = []archive.Point{{T: o.At, Src: src, Dst: dst, Test: t.Name, Metric: string(core.HopCount), Value: float64(len(res.Hops))}}
			rec.Result, _ = json.Marshal(res)
		}
		s.observe(o, rec)
	}
}

// session connects to both hosts' agents and runs fn; a host whose agent
// does not answer is marked down and retried with backoff.
func (rs *runners) session(ctx context.Context, src, dst string, fn func(ctx context.Context, a, b measure.Endpoint) error) error {
	s := rs.s
	eps := map[string]measure.Endpoint{}
	defer measure.CloseAll(eps)
	for _, h := range core.Ends(src, dst) {
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		ep, err := measure.Connect(dctx, s.opts.Bed, h)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.mu.Lock()
				if s.down.failed(h, err, time.Now()) {
					s.logf("host %s does not answer: %v (retrying with backoff; its paths show no data)", h, err)
				}
				s.mu.Unlock()
			}
			return err
		}
		eps[h] = ep[h]
	}
	s.mu.Lock()
	for _, h := range core.Ends(src, dst) {
		if d := s.down.answered(h, time.Now()); d > 0 {
			s.logf("host %s answers again after %s", h, d.Round(time.Second))
		}
	}
	s.mu.Unlock()
	return fn(ctx, eps[src], eps[dst])
}

// disturbance names the throughput-class tests that shared a host or a
// link with the path (either way) between start and end ("" if none did),
// and the share of that time they covered.
func (rs *runners) disturbance(src, dst string, start, end time.Time) (string, float64) {
	s := rs.s
	s.mu.Lock()
	defer s.mu.Unlock()
	links := append(slices.Clone(s.via[[2]string{src, dst}]), s.via[[2]string{dst, src}]...)
	var who []string
	var covered time.Duration
	for _, sp := range s.spans {
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
		for _, d := range append(slices.Clone(s.via[[2]string{sp.src, sp.dst}]), s.via[[2]string{sp.dst, sp.src}]...) {
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

// hold says whether an exclusive job may not start now, and until when:
// a host is down, or another process measures the pair; s.mu is held.
func (rs *runners) hold(j core.Job) (time.Time, bool) {
	s := rs.s
	if !s.owns(j.Src, j.Dst) {
		return time.Now().Add(coordinateEvery), true
	}
	return s.down.blocked(time.Now(), j.Src, j.Dst)
}

// exclusive starts throughput-class tests as the scheduler allows.
func (rs *runners) exclusive(ctx context.Context) {
	s := rs.s
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		s.mu.Lock()
		now := time.Now()
		j, ok, wake := s.sched.Next(now, rs.hold)
		sched := s.sched
		s.mu.Unlock()
		if ok {
			if free, retry := s.lockHosts(ctx, j); !free {
				s.mu.Lock()
				sched.Defer(j, now, retry)
				s.mu.Unlock()
				continue
			}
			s.mu.Lock()
			if now.Sub(j.Due) > j.Test.Slip+10*time.Second {
				s.late++
			}
			s.last[[3]string{j.Test.Name, j.Src, j.Dst}] = now
			s.running++
			s.spans = append(s.spans, span{src: j.Src, dst: j.Dst, start: now})
			// Spans older than any probe summary no longer matter.
			s.spans = slices.DeleteFunc(s.spans, func(sp span) bool { return !sp.end.IsZero() && now.Sub(sp.end) > 25*time.Hour })
			s.mu.Unlock()
		}
		if !ok {
			t := time.NewTimer(min(time.Until(wake), time.Minute))
			select {
			case <-ctx.Done():
			case <-s.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs.runJob(ctx, j)
			s.unlockHosts(context.WithoutCancel(ctx), j)
			s.mu.Lock()
			s.running--
			for i := range s.spans {
				if sp := &s.spans[i]; sp.src == j.Src && sp.dst == j.Dst && sp.end.IsZero() {
					sp.end = time.Now()
				}
			}
			sched.Done(j, time.Now())
			s.mu.Unlock()
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}()
	}
}

func (rs *runners) runJob(ctx context.Context, j core.Job) {
	s := rs.s
	t := j.Test
	k := core.PathKey{Src: j.Src, Dst: j.Dst, Test: t.Name}
	started := time.Now()
	jctx, cancel := context.WithTimeout(ctx, t.Budget()+30*time.Second)
	defer cancel()
	var pts []archive.Point
	var result any
	var load InterfaceLoad
	err := rs.session(jctx, j.Src, j.Dst, func(ctx context.Context, a, b measure.Endpoint) error {
		ctx = measure.WithWait(ctx, 0)
		// The end hosts' interfaces during the test: a host busy with
		// other traffic, not the network, may be what held a test back.
		after := loadDuring(ctx, a, b)
		defer func() { load = after() }()
		switch t.Type {
		case core.Throughput:
			r, err := measure.Throughput(ctx, a, b, throughput.Spec{Protocol: throughput.TCP, Streams: t.Streams, Duration: t.Duration,
				Window: t.Window, Congestion: t.Congestion, Interval: time.Second})
			if r != nil && err == nil {
				r.Intervals = nil
				pts, result = ThroughputPoints(time.Now(), t.Name, r), r
			}
			return err
		case core.Disk:
			r, err := measure.Disk(ctx, a, &agentpb.DiskRequest{Size: uint64(t.Bytes), Block: 1 << 20, Fsync: true})
			if err == nil {
				pts, result = DiskPoints(time.Now(), t.Name, j.Src, r), r
			}
			return err
		default:
			r, err := measure.Transfer(ctx, a, b, measure.TransferSpec{Spec: transfer.Spec{Streams: t.Streams, Window: t.Window, Block: transfer.DefaultBlock, Uncached: true},
				Size: t.Bytes, CorruptAt: -1})
			if r != nil && err == nil {
				pts, result = TransferPoints(time.Now(), t.Name, r), r
			}
			return err
		}
	})
	if ctx.Err() != nil {
		return // the service stops: a cut test is no result
	}
	rec := &archive.TestRecord{Test: t.Name, Kind: t.Type, Src: j.Src, Dst: j.Dst, Started: started, Ended: time.Now(), Status: "ok"}
	o := core.Observation{Key: k, Type: t.Type, At: time.Now(), Points: pts}
	if err != nil {
		rec.Status, rec.Reason = "failed", err.Error()
		o.Failed, o.Points = err.Error(), nil
	} else {
		rec.Result, _ = json.Marshal(TestDetail{Result: result, InterfaceLoad: load})
	}
	s.observe(o, rec)
}

// TestDetail is what the archive keeps of a throughput-class test: its
// result (with both ends' CPU) and what the end hosts' interfaces carried
// meanwhile.
type TestDetail struct {
	Result        any           `json:"result"`
	InterfaceLoad InterfaceLoad `json:"interface_load,omitempty"`
}
