package agent

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/limits"
)

// TestEarlyRefusalsArePaced: each call refused before it was authorised
// (an unknown method, say) was one audit line, with no bound: a certified
// identity could fill the audit disk. Past a burst an identity's refusals
// are counted, and the count is written in its next line or, when the
// flood stops, in a summary line.
func TestEarlyRefusalsArePaced(t *testing.T) {
	dir := tlsLab(t, "ctl")
	addr, audit := serveTLS(t, &Server{auditFlush: 300 * time.Millisecond}, dir, "rules:\n  - {name: ops, identities: [cn:ctl]}\n")
	conn := rawConn(t, dir, "ctl", addr)
	const calls = 3 * auditBurst
	in, out := []byte{}, []byte{}
	for range calls {
		err := conn.Invoke(context.Background(), "/wanlab.agent.v1.Agent/Shell", &in, &out, grpc.ForceCodec(rawCodec{}))
		wantRefusal(t, "an unknown method", err, codes.Unimplemented, "no method")
	}
	held := regexp.MustCompile(`^(\d+) calls refused before they were authorised|and (\d+) calls of this identity refused before this one`)
	// accounted is how many refusals the lines account for, and lines
	// how many there are.
	accounted := func() (n, lines int) {
		audit.mu.Lock()
		defer audit.mu.Unlock()
		for _, e := range audit.entries {
			if e.Decision != "refuse" || e.Identity != "cn:ctl" {
				continue
			}
			lines++
			m := held.FindStringSubmatch(e.Reason)
			switch {
			case m == nil:
				n++
			case m[1] != "":
				k, _ := strconv.Atoi(m[1])
				n += k
			default:
				k, _ := strconv.Atoi(m[2])
				n += k + 1
			}
		}
		return n, lines
	}
	if !eventually(10*time.Second, func() bool { n, _ := accounted(); return n == calls }) {
		n, lines := accounted()
		t.Fatalf("%d lines account for %d of %d refusals", lines, n, calls)
	}
	if _, lines := accounted(); lines > calls/2 {
		t.Errorf("%d refusals written in %d lines", calls, lines)
	}
}

// TestAuditPacerFlushes: the count of lines held back was written only
// with the next line, so the end of a flood was never told. It is written
// within the flush time.
func TestAuditPacerFlushes(t *testing.T) {
	var mu sync.Mutex
	summaries := map[string]int64{}
	p := &auditPacer{flush: 50 * time.Millisecond, summary: func(key string, n int64) { mu.Lock(); summaries[key] += n; mu.Unlock() }}
	written := 0
	for range auditBurst + 7 {
		if ok, _, _ := p.allow("cn:x"); ok {
			written++
		}
	}
	if !eventually(5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return summaries["cn:x"] == int64(auditBurst+7-written) }) {
		t.Errorf("%d lines written, summaries %v, want the %d others", written, summaries, auditBurst+7-written)
	}
}

// TestFirstMessageWaitsForItsReader: after a first-message timeout the
// call returned while a goroutine was still in RecvMsg, which gRPC
// forbids. The stream is cancelled and the call returns once the read has
// ended.
func TestFirstMessageWaitsForItsReader(t *testing.T) {
	s := guard{auditor{&Server{Host: "h", firstWait: 50 * time.Millisecond}}}
	ctx, err := tapStream(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var reading atomic.Bool
	recv := func(any) error {
		reading.Store(true)
		defer reading.Store(false)
		<-ctx.Done() // a stream's read ends with its context
		return ctx.Err()
	}
	err = s.firstMessage(ctx, agentpb.Agent_Receive_FullMethodName, recv, &agentpb.ReceiveRequest{})
	wantRefusal(t, "a call whose request did not come", err, codes.DeadlineExceeded, "did not arrive")
	if reading.Load() {
		t.Error("the call returned while its request was still being read")
	}
}

// TestInterfacesTakesNoSlot: wanlab serve's polling of the interfaces'
// counters was refused as busy while the agent ran its most tests.
func TestInterfacesTakesNoSlot(t *testing.T) {
	lim := limits.Default
	lim.MaxTests = 1
	c, _ := serve(t, lim)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holdSlot(ctx, t, c)
	_, err := c.Disk(ctx, &agentpb.DiskRequest{Size: 1 << 20, Block: 1 << 16})
	wantRefusal(t, "a test while the agent runs its most", err, codes.ResourceExhausted, "busy")
	if _, err := c.Interfaces(ctx, &agentpb.InterfacesRequest{}); err != nil {
		t.Errorf("the interfaces' counters while the agent runs its most tests: %v", err)
	}
}

// TestAuditOverflowIsNotAnIdentitys: once every key held a count, a new
// identity's refusals were counted under one shared key, and its next line
// said the shared count was "calls of this identity". The line says whose
// they are.
func TestAuditOverflowIsNotAnIdentitys(t *testing.T) {
	var entries []auditEntry
	s := auditor{&Server{Audit: func(e auditEntry) { entries = append(entries, e) }}}
	s.early.keys = map[string]*pacedKey{}
	for i := range maxAuditKeys - 1 {
		k := &pacedKey{lim: rate.NewLimiter(0, 0), held: 1, timer: time.AfterFunc(time.Hour, func() {})}
		defer k.timer.Stop()
		s.early.keys["cn:flood"+strconv.Itoa(i)] = k
	}
	// The shared key holds 5 lines, of other identities, and may write.
	shared := &pacedKey{lim: rate.NewLimiter(auditLinesPerSecond, auditBurst), held: 5, timer: time.AfterFunc(time.Hour, func() {})}
	defer shared.timer.Stop()
	s.early.keys[overflowKey] = shared
	s.auditRefusal(&decision{who: caller{ids: []string{"cn:new"}}}, "/m", "refused")
	if len(entries) != 1 {
		t.Fatalf("%d lines, want 1", len(entries))
	}
	if r := entries[0].Reason; !strings.Contains(r, "5 calls of identities past the") || strings.Contains(r, "this identity") {
		t.Errorf("the new identity's line says %q", r)
	}
}
