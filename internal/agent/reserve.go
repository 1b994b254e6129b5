package agent

import (
	"context"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/policy"
)

// tcpReserveRate is the rate, in bit/s, at which a TCP test that declares
// only its duration reserves its bytes when its rule gives no rate: a
// modest figure, so that a legitimate test is not refused for what the
// host could move at most. A test that moves more takes more of its
// identity's day as it goes (see extend), and is stopped when there is no
// more.
const tcpReserveRate = 1e9

// extendStep is the least a running test's reservation grows by.
const extendStep = 64 << 20

// counted are the kinds whose bytes count toward bytes_per_day (their
// results say what they moved): the others (watch, which moves nothing,
// and the application workloads, whose traffic is bounded by their own
// limits) reserve nothing.
var counted = map[string]bool{policy.Throughput: true, policy.Probe: true, policy.Transfer: true, policy.Disk: true, policy.Bandwidth: true}

// reservation is what a test counts for in its identity's bytes of the
// day while it runs: nothing for a kind that is not counted; else the
// bytes it declares; else, for a test that declares only its length, what
// it can move in that time at its rate (a UDP test's own; a TCP test's:
// its rule's rate, or tcpReserveRate), within its rule's bytes per test;
// else nothing.
func reservation(req request, l limits.Limits, ruleRate float64) int64 {
	if !counted[req.kind] {
		return 0
	}
	if req.bytes > 0 {
		return min(req.bytes, 1<<62)
	}
	if req.lasts <= 0 {
		return 0
	}
	bps := req.rate
	if bps <= 0 {
		bps = ruleRate
	}
	if bps <= 0 {
		bps = tcpReserveRate
	}
	b := min(bps, l.MaxRate) / 8 * req.lasts.Seconds()
	if !(b < float64(l.MaxBytes)) { // also NaN
		return l.MaxBytes
	}
	return int64(b)
}

// reservationBasis says what a test's reservation was drawn from.
func reservationBasis(req request, ruleRate float64) string {
	switch {
	case req.bytes > 0:
		return "the bytes it declares"
	case req.lasts > 0 && req.rate > 0:
		return "its rate for its duration"
	case req.lasts > 0 && ruleRate > 0:
		return "the rule's rate for its duration"
	case req.lasts > 0:
		return "1 Gbit/s for its duration, as the rule gives no rate"
	}
	return "it declares neither bytes nor a duration"
}

// addBytes adds byte counts, saturating at 1<<62.
func addBytes(a, b int64) int64 {
	const most = 1 << 62
	a, b = min(max(a, 0), most), min(max(b, 0), most)
	return a + min(b, most-a)
}

// extend grows a running test's reservation to cover moved bytes, taking
// at least extendStep more of its identity's day where the day has it; it
// says false when the day has not enough left for moved, and the test
// must stop.
func (s guard) extend(d *decision, moved int64) bool {
	if d == nil || d.rule == nil || moved <= d.reserved {
		return true
	}
	h := &s.host
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.usage[d.who.key()]
	if u == nil {
		return false
	}
	u.roll(time.Now()) // a test running across midnight takes of the new day
	left := d.rule.BytesPerDay - addBytes(u.bytes, u.reserved)
	more := min(max(moved-d.reserved, extendStep), max(left, 0))
	u.reserved += more
	d.reserved += more
	return moved <= d.reserved
}

// meterEvery is how often a running throughput test that declares only
// its duration is held to its identity's bytes of the day, whatever
// interval its caller asked for reports at.
const meterEvery = time.Second

// meter holds a throughput test that declares only its duration to its
// identity's bytes of the day every meterEvery from start: its intervals
// say what it moved up to when they end, and since then it may have moved
// its limits' rate; that much is reserved, and the test is stopped when
// the day has not as much left. A test thus goes at most about meterEvery
// of that rate past the day, however rarely its intervals come (a TCP
// test faster than the rate is caught by its next interval). The channel
// is closed when metering ends, after the stream's context is done.
//
// The stream's context carries the stream (meterOf), so that a handler
// whose bytes flow apart from its intervals to the controller (an iperf3
// target's) counts them as they flow (countInterval), whether or not the
// controller reads them.
func (g *guardedStream) meter(start time.Time, every time.Duration) <-chan struct{} {
	g.ctx = context.WithValue(g.ctx, meterKey{}, g)
	done := make(chan struct{})
	d := g.d
	if d == nil || d.rule == nil || d.req.kind != policy.Throughput || d.req.bytes > 0 || d.req.lasts <= 0 {
		close(done)
		return done
	}
	g.mu.Lock()
	g.known = start
	if d.limits.MaxRate < 1e15 { // else unlimited: intervals alone count
		g.rate = d.limits.MaxRate / 8
	}
	g.mu.Unlock()
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-g.ctx.Done():
				return
			case now := <-t.C:
				g.mu.Lock()
				g.check(now)
				g.mu.Unlock()
			}
		}
	}()
	return done
}

// check stops the test, with g.mu held, when its identity's day has not
// enough left for what it may have moved by now.
func (g *guardedStream) check(now time.Time) {
	if g.spent {
		return
	}
	most := g.live
	if g.rate > 0 {
		most = addBytes(most, int64(min(g.rate*max(now.Sub(g.known).Seconds(), 0), 1<<62)))
	}
	if !g.s.extend(g.d, most) {
		g.spent = true
		g.cancel()
	}
}

type meterKey struct{}

// meterOf is the guarded stream of the call of ctx, which counts its
// bytes of the day; nil outside one.
func meterOf(ctx context.Context) *guardedStream {
	g, _ := ctx.Value(meterKey{}).(*guardedStream)
	return g
}

// countInterval counts the bytes of an interval a test moved, reported at
// now, one interval after it ended: past its reservation the test takes
// more of its identity's day, and it is stopped when the day has no more.
// A nil stream counts nothing.
func (g *guardedStream) countInterval(iv *agentpb.Interval, now time.Time) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, st := range iv.GetStreams() {
		g.live = addBytes(g.live, int64(min(st.GetBytes(), 1<<62)))
	}
	// An interval is reported one interval after it ends (the throughput
	// package, and iperf3's client, hold each back to fold a short tail
	// in).
	if at := now.Add(-time.Duration(max(iv.GetEndNs()-iv.GetStartNs(), 0))); at.After(g.known) {
		g.known = at
	}
	g.check(now)
}
