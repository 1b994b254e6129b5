package target_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/icmpecho"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/measuretest"
	"github.com/wanlab/wanlab/internal/measure/target"
)

// canPing skips the test where this process may open no ICMP socket.
func canPing(t *testing.T) {
	t.Helper()
	p := icmpecho.Pinger{Target: netip.MustParseAddr("127.0.0.1"), Count: 1, Interval: icmpecho.MinInterval, Timeout: 5 * time.Second}
	if _, err := p.Run(context.Background()); err != nil {
		t.Skipf("no ping here: %v", err)
	}
}

// TestProbesPing: a host's agent pings a far end on the loopback and the
// controller summarises the echoes as probes: every one answered, with
// its round trip.
func TestProbesPing(t *testing.T) {
	canPing(t)
	ep, _ := measuretest.Agent(t, "a", limits.Default)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, addr := range []string{"127.0.0.1", "::1"} {
		req := &agentpb.TargetRequest{Kind: target.Ping, Address: addr,
			Probe: &agentpb.ProbeSpec{Count: 4, IntervalNs: int64(10 * time.Millisecond), Size: 56, TimeoutNs: int64(2 * time.Second)}}
		sum, err := target.Probes(ctx, ep, req)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if sum.Address != addr || sum.Sent != 4 || sum.Received != 4 || sum.Lost != 0 || sum.Loss.Of != 4 || sum.Silent || sum.Partial {
			t.Errorf("%s: summary %+v", addr, sum)
		}
		if sum.RTTms.Min <= 0 || sum.RTTms.Max > 1000 {
			t.Errorf("%s: round trips %+v", addr, sum.RTTms)
		}
	}
}

// olderAgent is an agent of a version without the Target call.
type olderAgent struct {
	agentpb.UnimplementedAgentServer
}

func (olderAgent) Hello(context.Context, *agentpb.HelloRequest) (*agentpb.HelloReply, error) {
	return &agentpb.HelloReply{ApiVersion: agentapi.APIVersion, Host: "old"}, nil
}

// TestRunErrors: an agent without the Target call is ErrUnsupported, and
// a test over the agent's limits ErrRefused, in the agent's words.
func TestRunErrors(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "old.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	agentpb.RegisterAgentServer(srv, olderAgent{})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	old, err := agentapi.Dial(context.Background(), "old", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	ping := &agentpb.TargetRequest{Kind: target.Ping, Address: "127.0.0.1", Probe: &agentpb.ProbeSpec{Count: icmpecho.MaxCount, IntervalNs: int64(time.Second)}}
	if _, err := target.Run(context.Background(), measure.Endpoint{Host: "old", Agent: old}, ping, nil); !errors.Is(err, target.ErrUnsupported) {
		t.Errorf("an agent without Target: %v", err)
	}
	ep, _ := measuretest.Agent(t, "a", limits.Default)
	if _, err := target.Run(context.Background(), ep, ping, nil); !errors.Is(err, target.ErrRefused) {
		t.Errorf("a ping of nearly three hours: %v", err)
	}
}

// TestSummariseSilent: a far end that answered nothing is silent, all
// its echoes lost, and says so.
func TestSummariseSilent(t *testing.T) {
	req := &agentpb.TargetRequest{Kind: target.Ping, Address: "router.example", Probe: &agentpb.ProbeSpec{Count: 3, IntervalNs: int64(time.Second), Size: 56}}
	res := &agentpb.TargetResult{Kind: target.Ping, Address: "192.0.2.1", Silent: true, Error: "icmp echo to 192.0.2.1: no reply",
		Probes: &agentpb.ProbeSummary{Results: []*agentpb.ProbeResult{{Seq: 0, SentNs: 1}, {Seq: 1, SentNs: 2}, {Seq: 2, SentNs: 3}}}}
	s := target.Summarise("a", req, res)
	if !s.Silent || s.Sent != 3 || s.Lost != 3 || s.Received != 0 || s.Target != "router.example" || s.Address != "192.0.2.1" || s.Loss.Lost != 3 {
		t.Errorf("summary %+v", s)
	}
}

// TestSummariseSTAMP: a STAMP round's one-way delays are its reflector's
// times against ours, reliable when the clocks said they were
// synchronised.
func TestSummariseSTAMP(t *testing.T) {
	ms := int64(time.Millisecond)
	req := &agentpb.TargetRequest{Kind: target.STAMP, Address: "refl.example", Probe: &agentpb.ProbeSpec{Count: 2, IntervalNs: 10 * ms, Size: 44}}
	res := &agentpb.TargetResult{Kind: target.STAMP, Address: "192.0.2.1:862", Synchronised: true, Probes: &agentpb.ProbeSummary{Results: []*agentpb.ProbeResult{
		{Seq: 0, SentNs: 100 * ms, ReflectRxNs: 103 * ms, ReflectTxNs: 104 * ms, ReceivedNs: 106 * ms},
		{Seq: 1, SentNs: 110 * ms},
	}}}
	s := target.Summarise("a", req, res)
	if s.OneWay == nil || s.OneWay.Forward.Avg != 3 || s.OneWay.Back.Avg != 2 || !s.OneWay.Reliable || s.RTTms.Avg != 5 || s.Lost != 1 {
		t.Errorf("summary %+v, one way %+v", s, s.OneWay)
	}
	var got []string
	for _, x := range s.Samples() {
		got = append(got, fmt.Sprintf("%s %s %g", x.Metric, x.Subject, x.Value))
	}
	want := []string{"delay.roundtrip a->refl.example 0.005", "delay.oneway a->refl.example 0.003", "delay.oneway refl.example->a 0.002",
		"loss.roundtrip a->refl.example 0", "loss.roundtrip a->refl.example 1"}
	if !slices.Equal(got, want) {
		t.Errorf("samples %q, want %q", got, want)
	}
}
