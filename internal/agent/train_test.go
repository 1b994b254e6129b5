package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/token"
	"github.com/wanlab/wanlab/internal/workload/train"
)

// serveAudited runs an agent on a socket of the test's, listening for
// tests on loopback, and returns a client and the audit entries so far.
func serveAudited(t *testing.T) (*agentapi.Client, func() []auditEntry) {
	t.Helper()
	var mu sync.Mutex
	var entries []auditEntry
	srv := &Server{Host: "h", Version: "test", Limits: limits.Default, Test: bind.Local{Addr: "127.0.0.1"},
		Audit: func(e auditEntry) { mu.Lock(); entries = append(entries, e); mu.Unlock() }}
	c := serveOn(t, srv)
	return c, func() []auditEntry { mu.Lock(); defer mu.Unlock(); return append([]auditEntry(nil), entries...) }
}

// role starts a workload role and returns its event stream.
func role(t *testing.T, c *agentapi.Client, name string, spec any) agentpb.Agent_WorkloadClient {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Workload(context.Background(), &agentpb.WorkloadRequest{Id: "trains", Role: name, SpecJson: b})
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// summary reads a role's events up to its summary.
func summary(t *testing.T, stream agentpb.Agent_WorkloadClient, v any) {
	t.Helper()
	for {
		e, err := stream.Recv()
		if err != nil {
			t.Fatalf("before the summary: %v", err)
		}
		if sum := e.GetSummaryJson(); sum != nil {
			if err := json.Unmarshal(sum, v); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestTrainBytesAreAudited: the end of a train sender's and receiver's
// calls is audited with the bytes each moved (it had none: packet trains
// never counted toward an identity's bytes per day).
func TestTrainBytesAreAudited(t *testing.T) {
	c, audit := serveAudited(t)
	tok := token.New()
	streams := []train.Stream{{Count: 20, Size: 1000}, {Count: 10, Size: 500, Gap: time.Millisecond}}
	recv := role(t, c, agentapi.RoleTrainReceiver, train.ReceiverSpec{Token: tok, Expect: 30, Timeout: 10 * time.Second})
	e, err := recv.Recv()
	if err != nil || e.GetListening() == nil {
		t.Fatalf("the receiver did not say where it listens: %v, %v", e, err)
	}
	send := role(t, c, agentapi.RoleTrainSender, train.SenderSpec{Token: tok, Address: fmt.Sprintf("127.0.0.1:%d", e.GetListening().Port), Streams: streams})
	var sent train.Sent
	summary(t, send, &sent)
	var got train.Received
	summary(t, recv, &got)
	const want = 20*1000 + 10*500
	if sent.Bytes != want || got.Bytes != want {
		t.Fatalf("sent %d bytes and received %d, want %d", sent.Bytes, got.Bytes, want)
	}
	// The calls end (and are audited) once their summaries are read.
	for _, s := range []agentpb.Agent_WorkloadClient{send, recv} {
		if _, err := s.Recv(); err == nil {
			t.Fatal("an event after the summary")
		}
	}
	var ends []int64
	for end := time.Now().Add(10 * time.Second); len(ends) < 2 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		ends = ends[:0]
		for _, e := range audit() {
			if e.Decision == "end" && e.Kind == policy.Bandwidth {
				ends = append(ends, e.Bytes)
			}
		}
	}
	if len(ends) != 2 || ends[0] != want || ends[1] != want {
		t.Errorf("audited ends of the bandwidth calls with bytes %v, want two of %d", ends, want)
	}
}

// TestTrainBytesCountTowardTheDay: a train sender declares the bytes its
// streams add up to, so that the guard refuses one over the identity's
// bytes per day before anything is sent, and what a train role moved is
// counted toward the day.
func TestTrainBytesCountTowardTheDay(t *testing.T) {
	s, pol := guarded(t, `rules:
  - name: bw
    identities: [cn:ctl]
    kinds: [bandwidth]
    limits: {bytes_per_day: 100000}
`)
	sender := func(streams ...train.Stream) *agentpb.WorkloadRequest {
		b, _ := json.Marshal(train.SenderSpec{Token: token.New(), Address: "10.0.0.1:9", Streams: streams})
		return &agentpb.WorkloadRequest{Id: "t", Role: agentapi.RoleTrainSender, SpecJson: b}
	}
	grant := func(req any) (*decision, error) {
		d := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe("", req)}
		return d, s.grant(d, pol, "")
	}
	tests := []struct {
		name     string
		req      *agentpb.WorkloadRequest
		declared int64
	}{
		{"a call's worth", sender(train.Stream{Count: 2000, Size: train.MaxSize}), 2000 * train.MaxSize},
		{"absurd figures", sender(train.Stream{Count: 1 << 40, Size: 1 << 40}, train.Stream{Count: 1 << 40, Size: 1 << 40}), 1 << 53},
		{"not JSON", &agentpb.WorkloadRequest{Role: agentapi.RoleTrainSender, SpecJson: []byte("{")}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe("", tc.req).bytes; got != tc.declared {
				t.Errorf("declares %d bytes, want %d", got, tc.declared)
			}
		})
	}
	if _, err := grant(sender(train.Stream{Count: 2000, Size: train.MaxSize})); err == nil || !strings.Contains(err.Error(), "100000 bytes a day") {
		t.Errorf("17.9 MB of trains against 100 kB a day: %v", err)
	}
	d, err := grant(sender(train.Stream{Count: 50, Size: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	end := &agentpb.WorkloadEvent{Event: &agentpb.WorkloadEvent_SummaryJson{SummaryJson: []byte(`{"packets":50,"bytes":50000}`)}}
	moved := s.stamp(d, end)
	if moved != 50000 {
		t.Errorf("the sender's summary counts %d bytes, want 50000", moved)
	}
	s.release(d, moved)
	if _, err := grant(sender(train.Stream{Count: 60, Size: 1000})); err == nil || !strings.Contains(err.Error(), "50000 are used today") {
		t.Errorf("trains over what is left of the day: %v", err)
	}
}

// TestStoppedTrainBytesAreCounted: a train sender that failed or was
// stopped sent no summary, and the bytes it had sent were neither audited
// nor counted toward its identity's day. Its end counts them all the same.
func TestStoppedTrainBytesAreCounted(t *testing.T) {
	c, audit := serveAudited(t)
	tok := token.New()
	recv := role(t, c, agentapi.RoleTrainReceiver, train.ReceiverSpec{Token: tok, Expect: 20, Timeout: 10 * time.Second})
	e, err := recv.Recv()
	if err != nil || e.GetListening() == nil {
		t.Fatalf("the receiver did not say where it listens: %v, %v", e, err)
	}
	// A first train, then long pauses: the call is stopped in them.
	streams := []train.Stream{{Count: 20, Size: 1000, Pause: time.Second}}
	for range 60 {
		streams = append(streams, train.Stream{Count: 2, Size: 100, Pause: time.Second})
	}
	spec, _ := json.Marshal(train.SenderSpec{Token: tok, Address: fmt.Sprintf("127.0.0.1:%d", e.GetListening().Port), Streams: streams})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	send, err := c.Workload(ctx, &agentpb.WorkloadRequest{Id: "trains", Role: agentapi.RoleTrainSender, SpecJson: spec})
	if err != nil {
		t.Fatal(err)
	}
	var got train.Received
	summary(t, recv, &got)
	cancel()
	send.Recv()
	var end *auditEntry
	for deadline := time.Now().Add(10 * time.Second); end == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, e := range audit() {
			if e.Decision == "end" && e.Method == agentpb.Agent_Workload_FullMethodName && e.Reason != "" {
				end = &e
			}
		}
	}
	if end == nil {
		t.Fatalf("no audited end of the stopped sender: %+v", audit())
	}
	if end.Bytes < 20*1000 {
		t.Errorf("the stopped sender's end counts %d bytes, want at least the first train's 20000 (%+v)", end.Bytes, end)
	}
}
