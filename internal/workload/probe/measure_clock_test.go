package probe

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/measure"
)

// fakeProber is an agent whose reflector listens and whose probes answer
// as told.
type fakeProber struct {
	agentpb.UnimplementedAgentServer
	answer func() (*agentpb.ProbeSummary, error)
}

func (f *fakeProber) Reflect(_ *agentpb.ReflectRequest, stream agentpb.Agent_ReflectServer) error {
	if err := stream.Send(&agentpb.ProbeEvent{Event: &agentpb.ProbeEvent_Listening{Listening: &agentpb.Listening{Port: 9}}}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (f *fakeProber) Probe(context.Context, *agentpb.ProbeRequest) (*agentpb.ProbeSummary, error) {
	return f.answer()
}

// fakeAgent serves f over gRPC in memory and returns an endpoint on it.
func fakeAgent(t *testing.T, host string, f *fakeProber) measure.Endpoint {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	agentpb.RegisterAgentServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///"+host, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return measure.Endpoint{Host: host, Addr: "127.0.0.1", Agent: &agentapi.Client{Host: host, AgentClient: agentpb.NewAgentClient(conn)}}
}

// TestMeasureClockStep: an agent's answer that its clock stepped during the
// probes comes back, across gRPC, as the partial result and an error that
// is ErrClockStep, in the agent's words; no other answer is.
func TestMeasureClockStep(t *testing.T) {
	const stepped = "the clock stepped by 2s during the probes: their round trips and one-way delays across the step are wrong (measure again)"
	ms := int64(time.Millisecond)
	sum := func(partial bool, why string) *agentpb.ProbeSummary {
		return &agentpb.ProbeSummary{Partial: partial, Error: why, Results: []*agentpb.ProbeResult{
			{Seq: 0, SentNs: 0, ReflectRxNs: 4 * ms, ReflectTxNs: 5 * ms, ReceivedNs: 11 * ms},
			{Seq: 1, SentNs: 100 * ms, ReflectRxNs: 104 * ms, ReflectTxNs: 105 * ms, ReceivedNs: 113 * ms},
		}}
	}
	for _, c := range []struct {
		name      string
		answer    func() (*agentpb.ProbeSummary, error)
		wantStep  bool
		wantSent  int // -1: no result
		wantError string
	}{
		{"clock stepped", func() (*agentpb.ProbeSummary, error) { return nil, agentapi.ClockStepped(sum(true, stepped)) }, true, 2, stepped},
		{"clock stepped, said by an older agent", func() (*agentpb.ProbeSummary, error) { return sum(true, stepped), nil }, true, 2, stepped},
		{"partial for another reason", func() (*agentpb.ProbeSummary, error) { return sum(true, "reflector went away"), nil }, false, 2, "reflector went away"},
		{"aborted without a summary", func() (*agentpb.ProbeSummary, error) { return nil, status.Error(codes.Aborted, stepped) }, false, -1, ""},
		{"complete", func() (*agentpb.ProbeSummary, error) { return sum(false, ""), nil }, false, 2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := fakeAgent(t, "a", &fakeProber{answer: c.answer})
			b := fakeAgent(t, "b", &fakeProber{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := Measure(ctx, a, b, Spec{Count: 2, Interval: 100 * time.Millisecond, Size: 64, Timeout: time.Second})
			if got := errors.Is(err, ErrClockStep); got != c.wantStep {
				t.Errorf("errors.Is(%v, ErrClockStep) = %v, want %v", err, got, c.wantStep)
			}
			switch {
			case c.wantSent < 0:
				if res != nil || err == nil {
					t.Errorf("got %+v, %v; want no result and an error", res, err)
				}
			case res == nil || res.Sent != c.wantSent:
				t.Errorf("result %+v, want %d probes sent", res, c.wantSent)
			case c.wantError != "" && (err == nil || err.Error() != c.wantError || !res.Partial || res.Error != c.wantError):
				t.Errorf("error %v, result partial %v %q; want partial, %q", err, res.Partial, res.Error, c.wantError)
			}
		})
	}
}
