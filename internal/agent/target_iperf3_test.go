package agent

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/testsupport"
)

func iperf3Req(addr string, reverse bool) *agentpb.TargetRequest {
	return &agentpb.TargetRequest{Kind: policy.TargetIperf3, Address: addr, Reverse: reverse,
		Throughput: &agentpb.ThroughputSpec{Streams: 2, DurationNs: int64(time.Second), IntervalNs: int64(250 * time.Millisecond)}}
}

// iperf3Server starts iperf3 -s -1 (one test, then it exits) on a free
// port of host and returns its address once it listens; it is killed when
// the test ends.
func iperf3Server(t *testing.T, host string) string {
	t.Helper()
	testsupport.Need(t, "iperf3")
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("no TCP socket on %s: %v", host, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var out bytes.Buffer
	cmd := exec.Command("iperf3", "-s", "-1", "-B", host, "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting iperf3: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	// A connection would be a test to a one-off server: the kernel's
	// table of sockets says when it listens.
	want := fmt.Sprintf(":%04X 00000000:0000 0A", port)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		tcp4, _ := os.ReadFile("/proc/net/tcp")
		tcp6, _ := os.ReadFile("/proc/net/tcp6")
		if strings.Contains(string(tcp4)+string(tcp6), want) || strings.Contains(string(tcp6), fmt.Sprintf(":%04X 00000000000000000000000000000000:0000 0A", port)) {
			return net.JoinHostPort(host, strconv.Itoa(port))
		}
		select {
		case <-done:
			t.Fatalf("iperf3 -s exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("iperf3 -s did not listen on %d within 20 s: %s", port, out.String())
		}
	}
}

// TestTargetIperf3: an iperf3 server the policy names is tested as the
// agent's own throughput tests are, both ways and on both families:
// intervals as it runs, then the agent's and the server's count of each
// stream; its bytes are audited. A rule without throughput is refused.
func TestTargetIperf3(t *testing.T) {
	dir := tlsLab(t, "thr", "ctl")
	addr, audit := serveTLS(t, &Server{}, dir, targetPolicy)
	c := controller(t, dir, "thr", addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		host    string
		reverse bool
	}{{"127.0.0.1", false}, {"::1", true}} {
		far := iperf3Server(t, tc.host)
		stream, err := c.Target(ctx, iperf3Req(far, tc.reverse))
		if err != nil {
			t.Fatal(err)
		}
		var intervals int
		var res *agentpb.TargetResult
		for res == nil {
			ev, err := stream.Recv()
			if err != nil {
				t.Fatalf("%s: %v", far, err)
			}
			if ev.GetInterval() != nil {
				intervals++
			}
			res = ev.GetResult()
		}
		if res.Address != far || res.Error != "" || res.GetThroughput().GetPartial() || intervals == 0 {
			t.Fatalf("%s: %d intervals, result %v", far, intervals, res)
		}
		var ours, theirs uint64
		for i, st := range res.Throughput.GetStreams() {
			ours += st.GetBytes()
			theirs += res.GetServer().GetStreams()[i].GetBytes()
		}
		if len(res.Throughput.GetStreams()) != 2 || ours == 0 || theirs == 0 || res.Bytes < min(ours, theirs) {
			t.Errorf("%s: %d bytes here, %d at the server, %d counted: %v", far, ours, theirs, res.Bytes, res)
		}
		audit.wait(t, "the iperf3 test's end", 1, func(e auditEntry) bool {
			return e.Decision == "end" && e.Kind == policy.TargetIperf3 && e.Rule == "thr" && len(e.Peers) == 1 && e.Peers[0] == far && e.Bytes == int64(res.Bytes)
		})
	}
	_, err := target(ctx, controller(t, dir, "ctl", addr), iperf3Req("127.0.0.1:5201", false))
	wantRefusal(t, "iperf3 past the day's bytes", err, codes.ResourceExhausted, "bytes a day")
}

// TestTargetIperf3MeteredUnread: an iperf3 test's bytes count toward its
// identity's day as they flow, from the agent's own sockets, whether or
// not the controller reads its intervals: a controller that reads none
// (its stream's sends never return) does not keep the test running past
// the day. The agent's limits bound no rate, so that only the test's own
// counts can stop it.
func TestTargetIperf3MeteredUnread(t *testing.T) {
	l := limits.Default
	l.MaxRate = 1e15 // unlimited: the meter's tick charges nothing
	p, err := policy.Parse("p.yaml", []byte(`rules:
  - name: thr
    identities: [cn:thr]
    kinds: [throughput]
    targets: [{network: 127.0.0.1, kinds: [iperf3], ports: [1024-65535]}]
    limits: {bytes: 100MB, bytes_per_day: 200MB}
`), l)
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Host: "h", Limits: l}
	srv.host.init()
	srv.streams.max = l.MaxStreams
	srv.SetPolicy(p)
	s := guard{auditor{srv}}
	far := iperf3Server(t, "127.0.0.1")
	req := &agentpb.TargetRequest{Kind: policy.TargetIperf3, Address: far,
		Throughput: &agentpb.ThroughputSpec{Streams: 1, DurationNs: int64(time.Minute), IntervalNs: int64(100 * time.Millisecond)}}
	d := &decision{who: caller{ids: []string{"cn:thr"}}, req: describe(agentpb.Agent_Target_FullMethodName, req)}
	if err := s.grant(d, p, agentpb.Agent_Target_FullMethodName); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := &guardedStream{ServerStream: nopStream{}, s: s, d: d, ctx: ctx, cancel: cancel}
	metered := g.meter(time.Now(), time.Second)
	unread := func(*agentpb.TargetEvent) error { <-g.ctx.Done(); return g.ctx.Err() } // a controller that reads nothing
	res, err := targetCalls{srv}.runIperf3(g.ctx, d.req.target, unread)
	cancel()
	<-metered
	if !g.spent {
		t.Fatalf("the test ran on past its identity's day (result %v, %v)", res, err)
	}
	// Stopped once past the day: its bytes, the agent's own count, are more.
	if res == nil || !res.GetThroughput().GetPartial() || res.Bytes <= uint64(d.rule.BytesPerDay) {
		t.Errorf("result %v, %v: want a partial test of more than the day's %d bytes", res, err, d.rule.BytesPerDay)
	}
}
