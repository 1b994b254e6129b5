package runner

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// exclusive starts throughput-class tests as the scheduler allows, until
// ctx ends, and waits for those running.
func (r *Runners) exclusive(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		r.mu.Lock()
		now := time.Now()
		j, ok, wake := r.sched.Next(now, r.hold)
		sched := r.sched
		r.mu.Unlock()
		if !ok {
			t := time.NewTimer(min(time.Until(wake), time.Minute))
			select {
			case <-ctx.Done():
			case <-r.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if free, retry := r.opts.Shares.Lock(ctx, j.Src, j.Dst, j.Test.Budget()+30*time.Second); !free {
			r.mu.Lock()
			sched.Defer(j, now, retry)
			r.mu.Unlock()
			continue
		}
		r.mu.Lock()
		if now.Sub(j.Due) > j.Test.Slip+10*time.Second {
			r.late++
		}
		r.last[j.Key()] = now
		r.running++
		r.spans = append(r.spans, span{src: j.Src, dst: j.Dst, start: now})
		// Spans older than any probe summary no longer matter.
		r.spans = slices.DeleteFunc(r.spans, func(sp span) bool { return !sp.end.IsZero() && now.Sub(sp.end) > 25*time.Hour })
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			retry := r.runJob(ctx, j)
			r.opts.Shares.Unlock(context.WithoutCancel(ctx), j.Src, j.Dst)
			r.mu.Lock()
			r.running--
			for i := range r.spans {
				if sp := &r.spans[i]; sp.src == j.Src && sp.dst == j.Dst && sp.end.IsZero() {
					sp.end = time.Now()
				}
			}
			if retry.IsZero() {
				sched.Done(j, time.Now())
			} else {
				sched.Retry(j, time.Now(), retry)
			}
			r.mu.Unlock()
			r.Wake()
		}()
	}
}

// runJob runs a job; retry is when to run it again, if its far end was
// busy (zero: the schedule goes on).
func (r *Runners) runJob(ctx context.Context, j core.Job) (retry time.Time) {
	if tg, ok := r.targetOf(j.Dst); ok {
		return r.runTargetJob(ctx, j, tg)
	}
	t := j.Test
	k := j.Key()
	started := time.Now()
	jctx, cancel := context.WithTimeout(withFamily(ctx, t.Family), t.Budget()+30*time.Second)
	defer cancel()
	var pts []core.Point
	var result any
	var family string
	var load InterfaceLoad
	err := r.session(jctx, j.Src, j.Dst, func(ctx context.Context, a, b measure.Endpoint) error {
		ctx = measure.WithWait(ctx, 0)
		// The end hosts' interfaces during the test: a host busy with
		// other traffic, not the network, may be what held a test back.
		after := loadDuring(ctx, a, b)
		defer func() { load = after() }()
		switch t.Type {
		case core.Throughput:
			res, err := throughput.Measure(ctx, a, b, throughput.Spec{Protocol: throughput.TCP, Streams: t.Streams, Duration: t.Duration,
				Window: t.Window, Congestion: t.Congestion, Interval: time.Second})
			if res != nil && err == nil {
				res.Intervals = nil
				pts, result, family = ThroughputPoints(time.Now(), t.Name, res), res, res.Start.Family
			}
			return err
		case core.Disk:
			res, err := measure.Disk(ctx, a, &agentpb.DiskRequest{Size: uint64(t.Bytes), Block: 1 << 20, Fsync: true})
			if err == nil {
				pts, result = DiskPoints(time.Now(), t.Name, j.Src, res), res
			}
			return err
		default:
			res, err := transfer.Measure(ctx, a, b, transfer.Options{Spec: transfer.Spec{Streams: t.Streams, Window: t.Window, Block: transfer.DefaultBlock, Uncached: true},
				Size: t.Bytes, CorruptAt: -1})
			if res != nil && err == nil {
				pts, result = TransferPoints(time.Now(), t.Name, res), res
				if res.There != nil {
					family = res.There.Family
				}
			}
			return err
		}
	})
	if ctx.Err() != nil {
		return time.Time{} // the service stops: a cut test is no result
	}
	rec := &archive.TestRecord{Test: t.Name, Kind: t.Type, Src: j.Src, Dst: j.Dst, Started: started, Ended: time.Now(), Status: "ok"}
	o := core.Observation{Key: k, Type: t.Type, At: time.Now(), Points: pts, Family: family}
	if err != nil {
		rec.Status, rec.Reason = "failed", err.Error()
		o.Failed, o.Points = err.Error(), nil
	} else {
		rec.Result, _ = json.Marshal(TestDetail{Result: result, InterfaceLoad: load})
	}
	r.opts.Service.Observe(o, rec)
	return time.Time{}
}

// TestDetail is what the archive keeps of a throughput-class test: its
// result (with both ends' CPU) and what the end hosts' interfaces carried
// meanwhile.
type TestDetail struct {
	Result        any           `json:"result"`
	InterfaceLoad InterfaceLoad `json:"interface_load,omitempty"`
}
