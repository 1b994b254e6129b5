package agent

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
)

func guarded(t *testing.T, yaml string) (guard, *policy.Policy) {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(yaml), limits.Default)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Host: "h", Limits: limits.Default}
	s.host.init()
	s.SetPolicy(p)
	return guard{auditor{s}}, p
}

func TestGrant(t *testing.T) {
	s, pol := guarded(t, `rules:
  - name: ops
    identities: [cn:ctl]
    kinds: [throughput, probe]
    peers: [10.1.0.0/16]
    limits: {tests: 1, bytes_per_day: 1000}
`)
	send := func(addr string) any {
		return &agentpb.SendRequest{Spec: &agentpb.ThroughputSpec{Streams: 1, Bytes: 100}, Address: addr}
	}
	tests := []struct {
		name string
		ids  []string
		req  any
		want string
	}{
		{"allowed", []string{"cn:ctl"}, send("10.1.2.3:5201"), ""},
		{"no rule", []string{"cn:other"}, send("10.1.2.3:5201"), "identity cn:other is not authorised by this agent's policy (p.yaml)"},
		{"kind", []string{"cn:ctl"}, &agentpb.DiskRequest{Size: 10}, `refuses a disk test: rule "ops" (p.yaml:2) does not allow it for cn:ctl`},
		{"peer", []string{"cn:ctl"}, send("10.2.0.1:5201"), "refuses to send toward 10.2.0.1"},
		{"peer by name", []string{"cn:ctl"}, send("dtn.example:5201"), `give an IP address, not "dtn.example"`},
		{"bytes today", []string{"cn:ctl"}, &agentpb.SendRequest{Spec: &agentpb.ThroughputSpec{Streams: 2, Bytes: 600}, Address: "10.1.0.1:1"}, "allows cn:ctl 1000 bytes a day"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &decision{who: caller{ids: tc.ids}, req: describe("", tc.req)}
			err := s.grant(d, pol, "")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				s.release(d, 0)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	// One test at a time for this identity, and bytes counted at the end.
	d := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe("", send("10.1.0.1:1"))}
	if err := s.grant(d, pol, ""); err != nil {
		t.Fatal(err)
	}
	d2 := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe("", send("10.1.0.1:1"))}
	if err := s.grant(d2, pol, ""); err == nil || !strings.Contains(err.Error(), "1 tests at once") {
		t.Errorf("a second test at once: %v", err)
	}
	s.release(d, 950)
	if err := s.grant(d2, pol, ""); err == nil || !strings.Contains(err.Error(), "950 are used today") {
		t.Errorf("over the daily bytes: %v", err)
	}
}

// Two throughput-class tests share no host: the second waits, or is
// refused as busy; calls of one test, and probes, go alongside.
func TestAdmission(t *testing.T) {
	s, _ := guarded(t, "rules:\n  - {name: a, identities: ['*']}\n")
	ctx := context.Background()
	first := &call{test: "t1", who: "cn:x", kind: "throughput", throughput: true, ends: time.Now().Add(time.Hour)}
	if err := s.enter(ctx, first, true, 0, 8); err != nil {
		t.Fatal(err)
	}
	same := &call{test: "t1", who: "cn:x", kind: "throughput", throughput: true}
	if err := s.enter(ctx, same, true, 0, 8); err != nil {
		t.Errorf("the other end of the same test: %v", err)
	}
	other := &call{test: "t2", who: "cn:y", kind: "transfer", throughput: true}
	if err := s.enter(ctx, other, true, 0, 8); err == nil || !strings.Contains(err.Error(), "busy until "+first.ends.UTC().Format(time.RFC3339)) {
		t.Errorf("a second test without waiting: %v", err)
	}
	if err := s.enter(ctx, other, true, 0, 0); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("no queue: %v", err)
	}
	probe := &call{test: "t3", who: "cn:y", kind: "probe"}
	if err := s.enter(ctx, probe, true, 0, 8); err != nil || probe.alongside != 2 {
		t.Errorf("a probe alongside: %v, alongside %d, want 2", err, probe.alongside)
	}
	done := make(chan error, 1)
	go func() { done <- s.enter(ctx, other, true, 5*time.Second, 8) }()
	time.Sleep(50 * time.Millisecond)
	s.leave(first)
	s.leave(same)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("a waiting test once the host is free: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("the waiting test did not get the host when it was freed")
	}
	if n := s.leave(probe); n != 3 {
		t.Errorf("the probe ran alongside %d tests, want 3", n)
	}
}

func TestPaced(t *testing.T) {
	s, pol := guarded(t, "rules:\n  - {name: slow, identities: [cn:ctl], limits: {requests: 2}}\n")
	d := &decision{who: caller{ids: []string{"cn:ctl"}}}
	for i := range 4 { // a burst of twice the rate, and at least 4
		if err := s.paced(d, pol); err != nil {
			t.Fatalf("call %d of the burst: %v", i+1, err)
		}
	}
	if err := s.paced(d, pol); err == nil || !strings.Contains(err.Error(), `calls faster than rule "slow"'s 2 per second`) {
		t.Errorf("past the burst: %v", err)
	}
	if err := s.paced(&decision{who: caller{ids: []string{"cn:other"}}}, pol); err != nil {
		t.Errorf("another identity is paced apart: %v", err)
	}
}

func TestPeerAddr(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.1:1": "10.0.0.1", "[::ffff:10.0.0.2]:5": "10.0.0.2", "[2001:db8::1]:7": "2001:db8::1"} {
		a, err := peerAddr(in)
		if err != nil || a != netip.MustParseAddr(want) {
			t.Errorf("peerAddr(%q) = %v, %v", in, a, err)
		}
	}
}

// TestBytesPerDayAreReserved: bytes_per_day was checked against each
// test's declared bytes alone, so tests at once, or tests that declare
// only a duration, went past it. A test reserves its bytes when it is
// admitted, and what it moved is counted when it ends.
func TestBytesPerDayAreReserved(t *testing.T) {
	const rule = `rules:
  - name: ops
    identities: [cn:ctl]
    limits: {tests: 4, bytes_per_day: 1000, rate: 8kbit}
`
	sized := func(b uint64) any { // declares b bytes
		return &agentpb.SendRequest{Spec: &agentpb.ThroughputSpec{Protocol: agentpb.Protocol_PROTOCOL_TCP, Streams: 1, Bytes: b}, Address: "10.0.0.1:1"}
	}
	timed := func(d time.Duration) any { // 1000 bytes a second at the rule's rate
		return &agentpb.ReceiveRequest{Spec: &agentpb.ThroughputSpec{Protocol: agentpb.Protocol_PROTOCOL_TCP, Streams: 1, DurationNs: int64(d)}}
	}
	paced := func(bps uint64, d time.Duration) any {
		return &agentpb.ReceiveRequest{Spec: &agentpb.ThroughputSpec{Protocol: agentpb.Protocol_PROTOCOL_UDP, Streams: 1, DurationNs: int64(d), UdpRateBps: bps}}
	}
	type step struct {
		req   any
		moved int64 // at its end; -1: still running
		want  string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"two at once", []step{{sized(600), -1, ""}, {sized(600), -1, "600 are reserved by its tests running, and this test reserves 600"}}},
		{"settled with what moved", []step{{sized(600), 100, ""}, {sized(600), -1, ""}, {sized(301), -1, "100 are used today, 600 are reserved"}}},
		{"duration only", []step{{timed(time.Second), -1, ""}, {timed(time.Second), -1, "this test reserves 1000 (the rule's rate for its duration"}}},
		{"duration only, settled", []step{{timed(time.Second), 10, ""}, {timed(990 * time.Millisecond), -1, ""}, {sized(1), -1, "10 are used today, 990 are reserved"}}},
		{"paced", []step{{paced(800, 5*time.Second), -1, ""}, {sized(500), -1, ""}, {sized(1), -1, "and this test reserves 1 (the bytes it declares"}}},
		{"longer than a day's bytes", []step{{timed(time.Hour), -1, "this test reserves 3600000"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, pol := guarded(t, rule)
			for i, st := range tc.steps {
				d := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe("", st.req)}
				err := s.grant(d, pol, "")
				if st.want != "" {
					if err == nil || !strings.Contains(err.Error(), st.want) {
						t.Fatalf("step %d: %v, want %q", i+1, err, st.want)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %v", i+1, err)
				}
				if st.moved >= 0 {
					s.release(d, st.moved)
				}
			}
		})
	}
}

// TestReservationsAdmitLegitimateTests: a duration-only TCP test reserved
// the agent's UDP rate limit (10 Gbit/s) for its duration, and a watch or
// a task farm reserved by its duration bytes it never moves, so
// bytes_per_day refused them. A TCP test reserves at the rule's rate, or
// 1 Gbit/s when it gives none; kinds whose bytes are not counted reserve
// nothing.
func TestReservationsAdmitLegitimateTests(t *testing.T) {
	tcp := func(d time.Duration) any {
		return &agentpb.SendRequest{Spec: &agentpb.ThroughputSpec{Protocol: agentpb.Protocol_PROTOCOL_TCP, Streams: 4, DurationNs: int64(d)}, Address: "10.0.0.1:1"}
	}
	role := func(role string, d time.Duration) any {
		spec, _ := json.Marshal(map[string]any{"duration": d, "address": "10.0.0.1:1"})
		return &agentpb.WorkloadRequest{Role: role, SpecJson: spec}
	}
	tests := []struct {
		name, limits string
		reqs         []any // at once
		want         string
	}{
		{"60 s TCP test, no rate", "{bytes_per_day: 50GB}", []any{tcp(time.Minute)}, ""},
		{"a 1 h watch", "{bytes_per_day: 50GB}", []any{role(agentapi.RoleWatch, time.Hour)}, ""},
		{"a 1 h task farm", "{bytes_per_day: 50GB}", []any{role(taskfarm.RoleMaster, time.Hour), role(taskfarm.RoleWorkers, time.Hour)}, ""},
		{"TCP at the rule's rate", "{bytes_per_day: 50GB, rate: 8Gbit}", []any{tcp(time.Minute)}, "this test reserves 60000000000 (the rule's rate for its duration"},
		{"TCP tests at once", "{bytes_per_day: 10GB}", []any{tcp(time.Minute), tcp(time.Minute)}, "7500000000 are reserved by its tests running, and this test reserves 7500000000 (1 Gbit/s for its duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, pol := guarded(t, "rules:\n  - {name: ops, identities: [cn:ctl], kinds: [throughput, watch, taskfarm], limits: "+tc.limits+"}\n")
			var err error
			for _, req := range tc.reqs {
				d := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe("", req)}
				if err = s.grant(d, pol, ""); err != nil {
					break
				}
			}
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRunningTestStopsAtTheDaysBytes: a TCP test reserves less than it
// can move; past its reservation it takes more of its identity's day as
// its intervals report bytes, and is stopped when the day has no more, so
// that tests at once cannot go past it together.
func TestRunningTestStopsAtTheDaysBytes(t *testing.T) {
	s, pol := guarded(t, "rules:\n  - {name: ops, identities: [cn:ctl], limits: {bytes_per_day: 1000, rate: 8kbit}}\n")
	timed := &agentpb.ReceiveRequest{Spec: &agentpb.ThroughputSpec{Protocol: agentpb.Protocol_PROTOCOL_TCP, Streams: 1, DurationNs: int64(400 * time.Millisecond)}}
	a := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe("", timed)}
	b := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe("", timed)}
	for _, d := range []*decision{a, b} {
		if err := s.grant(d, pol, ""); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &guardedStream{ServerStream: nopStream{}, s: s, d: a, ctx: ctx, cancel: cancel}
	interval := func(n uint64) *agentpb.ThroughputEvent {
		return &agentpb.ThroughputEvent{Event: &agentpb.ThroughputEvent_Interval{Interval: &agentpb.Interval{Streams: []*agentpb.StreamSample{{Bytes: n}}}}}
	}
	g.SendMsg(interval(400)) // its reservation
	g.SendMsg(interval(200)) // more of the day: 200 left, with b's 400
	if ctx.Err() != nil || a.reserved != 600 {
		t.Fatalf("within the day's bytes: stopped %v, reserved %d", ctx.Err(), a.reserved)
	}
	g.SendMsg(interval(1)) // past the day's
	if ctx.Err() == nil {
		t.Fatal("a test past its identity's bytes of the day runs on")
	}
	if u := s.host.usage["cn:ctl"]; u.reserved != 1000 {
		t.Errorf("reserved %d, want the day's 1000", u.reserved)
	}
}

// TestSilentTestStopsAtTheDaysBytes: a TCP test that declares only its
// duration, with an interval as long (so no interval reports its bytes),
// went past its identity's bytes of the day by all it could move in that
// time; the agent holds it to the day on its own tick, at its limits'
// rate, and stops it about when the day may be spent.
func TestSilentTestStopsAtTheDaysBytes(t *testing.T) {
	// 1000 bytes a day at 1000 bytes/s: the test reserves 500 for its 0.5 s.
	s, pol := guarded(t, "rules:\n  - {name: ops, identities: [cn:ctl], limits: {bytes_per_day: 1000, rate: 8kbit}}\n")
	req := &agentpb.ReceiveRequest{Spec: &agentpb.ThroughputSpec{Protocol: agentpb.Protocol_PROTOCOL_TCP, Streams: 1,
		DurationNs: int64(500 * time.Millisecond), IntervalNs: int64(500 * time.Millisecond)}}
	d := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe(agentpb.Agent_Receive_FullMethodName, req)}
	if err := s.grant(d, pol, agentpb.Agent_Receive_FullMethodName); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &guardedStream{ServerStream: nopStream{}, s: s, d: d, ctx: ctx, cancel: cancel}
	start := time.Now()
	metered := g.meter(start, 20*time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("a test whose intervals say nothing runs on past its identity's bytes of the day")
	}
	// The day's 1000 bytes last 1 s at the rule's rate: not stopped before.
	if took := time.Since(start); took < time.Second {
		t.Errorf("stopped after %v, before the day could be spent", took)
	}
	<-metered
	if !g.spent || d.reserved != 1000 {
		t.Errorf("spent %v, reserved %d: want spent, the day's 1000", g.spent, d.reserved)
	}
}

// TestExtendAcrossMidnight: a running test took more of its identity's
// day against yesterday's bytes, and was stopped after midnight UTC when
// yesterday's were spent. The count starts again, as for a new test.
func TestExtendAcrossMidnight(t *testing.T) {
	s, pol := guarded(t, "rules:\n  - {name: ops, identities: [cn:ctl], limits: {bytes_per_day: 1000, rate: 8kbit}}\n")
	req := &agentpb.ReceiveRequest{Spec: &agentpb.ThroughputSpec{Protocol: agentpb.Protocol_PROTOCOL_TCP, Streams: 1, DurationNs: int64(400 * time.Millisecond)}}
	d := &decision{who: caller{ids: []string{"cn:ctl"}}, req: describe("", req)}
	if err := s.grant(d, pol, ""); err != nil {
		t.Fatal(err)
	}
	u := s.host.usage["cn:ctl"]
	u.day, u.bytes = "2000-01-01", 600 // yesterday's: with its 400 reserved, the day was spent
	if !s.extend(d, 700) {
		t.Errorf("a test past midnight was held to yesterday's bytes (%d used on %s)", u.bytes, u.day)
	}
	if u.bytes != 0 || u.day == "2000-01-01" {
		t.Errorf("after midnight: %d bytes used on %s, want 0 today", u.bytes, u.day)
	}
}

// nopStream is a server stream that sends nowhere.
type nopStream struct{ grpc.ServerStream }

func (nopStream) SendMsg(any) error { return nil }
