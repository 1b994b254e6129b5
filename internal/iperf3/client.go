package iperf3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// Run measures throughput toward the iperf3 server at addr (HOST:PORT) as
// iperf3 -c would. A test that fails once its streams were connected
// returns what was measured (Partial, with Error) beside the error.
func Run(ctx context.Context, addr string, spec Spec, opt Options) (*Result, error) {
	if err := spec.Validate(limits.Unlimited); err != nil {
		return nil, fmt.Errorf("iperf3 test toward %s: %w", addr, err)
	}
	network, err := opt.network()
	if err != nil {
		return nil, err
	}
	cookie, err := newCookie()
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: opt.timeout()}
	if opt.LocalAddr != "" {
		ip := net.ParseIP(opt.LocalAddr)
		if ip == nil {
			return nil, fmt.Errorf("local address %q: give an IP address", opt.LocalAddr)
		}
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	conn, err := dial(ctx, d, network, addr, "connecting")
	if err != nil {
		return nil, err
	}
	t := &test{
		spec: spec, opt: opt, cookie: cookie, network: network,
		c:   &control{ctx: ctx, conn: conn, addr: addr, timeout: opt.timeout()},
		res: &Result{Server: addr, Local: conn.LocalAddr().String(), Remote: conn.RemoteAddr().String(), Reverse: spec.Reverse},
	}
	// The caller's end closes the control connection, which ends any
	// wait; a test under way is told CLIENT_TERMINATE first.
	stop := context.AfterFunc(ctx, func() { t.terminate(); conn.Close() })
	defer stop()
	defer conn.Close()
	// The streams connect to the address the control connection reached.
	sd := *d
	sd.Control = spec.socketControl
	err = t.run(ctx, &sd, conn.RemoteAddr().String())
	if err != nil {
		t.terminate()
		if t.started {
			t.res.Partial, t.res.Error = true, err.Error()
			return t.res, err
		}
		return nil, err
	}
	return t.res, nil
}

// test is one test under way.
type test struct {
	spec    Spec
	opt     Options
	cookie  [CookieSize]byte
	network string
	c       *control
	res     *Result
	// started: the streams connected (there is something to report).
	started bool
	// running: the server was told the parameters and has not been told
	// the end (CLIENT_TERMINATE means something to it).
	running    atomic.Bool
	terminated sync.Once
}

// terminate tells a server whose test is under way that the client gave
// it up (as iperf3 does when stopped), best effort.
func (t *test) terminate() {
	if !t.running.Load() {
		return
	}
	t.terminated.Do(func() {
		t.c.conn.SetWriteDeadline(time.Now().Add(time.Second))
		t.c.conn.Write([]byte{byte(ClientTerminate)})
	})
}

func (t *test) run(ctx context.Context, d *net.Dialer, streamAddr string) error {
	c := t.c
	c.conn.SetWriteDeadline(time.Now().Add(c.timeout))
	if _, err := c.conn.Write(t.cookie[:]); err != nil {
		return c.fail("sending the cookie", err)
	}
	if err := c.expect(ParamExchange); err != nil {
		return err
	}
	if err := c.sendFrame("parameters", t.spec.params()); err != nil {
		return err
	}
	t.running.Store(true)
	if err := c.expect(CreateStreams); err != nil {
		return err
	}
	s, err := connect(ctx, d, t.network, streamAddr, t.cookie, t.spec.Streams)
	if err != nil {
		return err
	}
	defer s.end()
	t.started = true
	ids := make([]int, len(s.conns))
	for i := range ids {
		ids[i] = streamID(i)
	}
	// Each end's count, filled as the test goes; the client's sockets'
	// TCP_INFO at the end when it sends.
	ours, theirs := newSide(len(ids)), newSide(len(ids))
	var tcp []*job.TCPInfo
	defer func() {
		if t.spec.Reverse {
			t.res.assemble(ids, theirs, ours, nil)
		} else {
			t.res.assemble(ids, ours, theirs, tcp)
		}
	}()

	if err := c.expect(TestStart); err != nil {
		return err
	}
	// The clock starts at TEST_START, as iperf3's does; data flows from
	// TEST_RUNNING.
	start := time.Now()
	if err := c.expect(TestRunning); err != nil {
		return err
	}
	elapsed, runErr := t.exchange(ctx, s, start)
	for i := range ids {
		ours.bytes[i] = s.bytes[i].Load()
		ours.seconds[i] = elapsed.Seconds()
	}
	if !t.spec.Reverse {
		tcp = s.tcpInfo()
		for i, info := range tcp {
			if info != nil {
				r := info.TotalRetrans
				ours.retransmits[i] = &r
			}
		}
		if len(s.conns) > 0 {
			t.res.Congestion = congestionOf(s.conns[0])
		}
	}
	if runErr != nil {
		return runErr
	}
	// TEST_END, then the results: the client's first, then the server's.
	if err := c.send(TestEnd); err != nil {
		return err
	}
	t.running.Store(false)
	if err := c.expect(ExchangeResults); err != nil {
		return err
	}
	if err := c.sendFrame("results", t.ourResults(ids, ours)); err != nil {
		return err
	}
	peer, err := c.readResults(len(ids))
	if err != nil {
		return err
	}
	if err := t.takePeer(ids, peer, &theirs); err != nil {
		return err
	}
	t.res.capPeer(ids, ours, &theirs, t.spec.Reverse, linkBytes(t.opt.linkRate(), elapsed))
	if err := c.expect(DisplayResults); err != nil {
		return err
	}
	return c.send(IperfDone)
}

// streamGrace is how long a broken stream waits for the server's word.
const streamGrace = 2 * time.Second

// exchange runs the test from TEST_RUNNING until its end (its duration,
// its bytes), cutting intervals, and returns how long it ran since start.
// The server's word, a stream's error, a stall or the caller's end stop
// it early with an error.
func (t *test) exchange(ctx context.Context, s *streams, start time.Time) (time.Duration, error) {
	var end time.Time
	if t.spec.Duration > 0 {
		end = start.Add(t.spec.Duration)
	}
	if t.spec.Reverse {
		s.receive(t.spec.blockSize(), uint64(t.spec.Bytes)*uint64(t.spec.Streams))
	} else {
		s.send(t.spec.blockSize(), uint64(t.spec.Bytes), end)
	}
	// The server says nothing while the test runs, unless it fails: one
	// read waits for that. Its deadline is set when the test ends.
	heard := make(chan error, 1)
	t.c.conn.SetReadDeadline(time.Time{})
	go func() {
		st, err := t.c.readNoDeadline("during the test")
		if err == nil {
			err = fmt.Errorf("iperf3 server %s: said %v during the test: %w", t.c.addr, st, ErrProtocol)
		}
		heard <- err
	}()
	var timer, giveUp <-chan time.Time
	if !end.IsZero() {
		tm := time.NewTimer(time.Until(end))
		defer tm.Stop()
		timer = tm.C
	} else {
		tm := time.NewTimer(time.Until(start.Add(t.opt.maxDuration())))
		defer tm.Stop()
		giveUp = tm.C
	}
	interval := t.spec.interval()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	m := newMeter(s, start, !t.spec.Reverse)
	var pending *Interval
	emit := func(iv Interval) {
		if len(t.res.Intervals) < MaxKeptIntervals {
			t.res.Intervals = append(t.res.Intervals, iv)
		} else {
			t.res.IntervalsDropped++
		}
		if t.opt.OnInterval != nil {
			t.opt.OnInterval(iv)
		}
	}
	var err error
	streamErr := false
loop:
	for {
		select {
		case now := <-tick.C:
			iv := m.cut(now)
			if pending != nil {
				emit(*pending)
			}
			pending = &iv
			if m.stalled(now, t.c.timeout) {
				err = fmt.Errorf("iperf3 test toward %s: %w for %v", t.c.addr, ErrStalled, t.c.timeout)
				break loop
			}
		case <-timer:
			break loop
		case <-giveUp:
			err = fmt.Errorf("iperf3 test toward %s: the test's bytes did not move within %v: %w", t.c.addr, t.opt.maxDuration(), ErrTimeout)
			break loop
		case <-s.reached:
			break loop
		case e := <-s.errs:
			err, streamErr = failure(ctx, t.c.addr, t.c.timeout, "during the test", e), true
			break loop
		case e := <-heard:
			err, heard = e, nil
			break loop
		case <-ctx.Done():
			err = fmt.Errorf("iperf3 test toward %s: %w", t.c.addr, context.Cause(ctx))
			break loop
		}
	}
	now := time.Now()
	s.stop(t.spec.Reverse)
	// A short tail is folded into the last interval rather than shown
	// as a rate over a sliver of time.
	tail := m.cut(now)
	switch {
	case pending != nil && tail.End-tail.Start < interval/2:
		emit(merge(*pending, tail))
	case pending != nil:
		emit(*pending)
		fallthrough
	default:
		if tail.End > tail.Start {
			emit(tail)
		}
	}
	elapsed := now.Sub(start)
	if heard != nil {
		// The read of the server's word ends now, unless a stream broke:
		// then the server may be saying why (SERVER_ERROR,
		// SERVER_TERMINATE), which says more than a broken pipe. After
		// a normal end it is read again below, after TEST_END.
		wait := time.Unix(1, 0)
		if streamErr {
			wait = time.Now().Add(min(t.c.timeout, streamGrace))
		}
		t.c.conn.SetReadDeadline(wait)
		if e := <-heard; !errors.Is(e, os.ErrDeadlineExceeded) && (err == nil || streamErr) {
			err = e
		}
	}
	return elapsed, err
}

// ourResults are the client's results as the server takes them.
func (t *test) ourResults(ids []int, ours side) wireResults {
	w := wireResults{SenderHasRetransmits: -1, Streams: make([]wireStream, len(ids))}
	if !t.spec.Reverse {
		w.SenderHasRetransmits, w.CongestionUsed = 1, t.res.Congestion
	}
	for i, id := range ids {
		ws := wireStream{ID: id, Bytes: float64(ours.bytes[i]), Retransmits: -1, EndTime: ours.seconds[i]}
		if r := ours.retransmits[i]; r != nil {
			ws.Retransmits = int64(*r)
		} else if !t.spec.Reverse {
			w.SenderHasRetransmits = 0
		}
		w.Streams[i] = ws
	}
	return w
}

// takePeer keeps the server's results: its count of each stream, its
// retransmits when it sent, and its congestion control.
func (t *test) takePeer(ids []int, peer *peerResults, theirs *side) error {
	t.res.ServerCPUPercent = peer.CPUPercent
	for _, ps := range peer.Streams {
		i := slices.Index(ids, ps.ID)
		if i < 0 {
			return fmt.Errorf("iperf3 server %s: its results name stream %d, which the test does not have: %w", t.c.addr, ps.ID, ErrProtocol)
		}
		theirs.bytes[i], theirs.seconds[i] = ps.Bytes, ps.Seconds
		if t.spec.Reverse && peer.HasRetransmits && ps.Retransmits >= 0 {
			r := uint32(ps.Retransmits)
			theirs.retransmits[i] = &r
		}
	}
	if len(peer.Streams) < len(ids) {
		t.res.Warnings = append(t.res.Warnings, fmt.Sprintf("the server's results have %d of the %d streams", len(peer.Streams), len(ids)))
	}
	if t.spec.Reverse {
		t.res.Congestion = peer.Congestion
	}
	if want := t.spec.Congestion; want != "" && t.res.Congestion != "" && t.res.Congestion != want {
		t.res.Warnings = append(t.res.Warnings, fmt.Sprintf("the sender used congestion control %s, not %s (the server does not have it)", t.res.Congestion, want))
	}
	return nil
}
