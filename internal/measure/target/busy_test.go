package target_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/iperf3"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/target"
)

// busyAgent answers every Target call as an agent whose iperf3 server is
// busy does: Unavailable, with its reason.
type busyAgent struct{ olderAgent }

const busyWords = "agent on busy: an iperf3 test toward 192.0.2.9:5201: the server is busy running a test"

func (busyAgent) Target(*agentpb.TargetRequest, grpc.ServerStreamingServer[agentpb.TargetEvent]) error {
	return withReason(busyWords, farend.ReasonBusy)
}

// slowResolver answers every Target call as an agent whose resolver did
// not answer in time does: Unavailable too, with its own reason.
type slowResolver struct{ olderAgent }

func (slowResolver) Target(*agentpb.TargetRequest, grpc.ServerStreamingServer[agentpb.TargetEvent]) error {
	return withReason(`agent on busy refuses an iperf3 test toward "iperf.example": resolving "iperf.example": i/o timeout`, farend.ReasonResolveTimeout)
}

// reasonless answers Unavailable without a reason, as issue 36's first
// agents did for a busy server.
type reasonless struct{ olderAgent }

func (reasonless) Target(*agentpb.TargetRequest, grpc.ServerStreamingServer[agentpb.TargetEvent]) error {
	return status.Error(codes.Unavailable, busyWords)
}

func withReason(words, reason string) error {
	st, err := status.New(codes.Unavailable, words).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: farend.ErrorDomain})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// serve serves srv on a socket and dials it.
func serve(t *testing.T, srv agentpb.AgentServer) (measure.Endpoint, func()) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "a.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	agentpb.RegisterAgentServer(g, srv)
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	c, err := agentapi.Dial(context.Background(), "busy", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return measure.Endpoint{Host: "busy", Agent: c}, g.Stop
}

// TestRunBusy: an iperf3 server busy with another test is ErrBusy (and
// iperf3.ErrBusy), in the agent's words; an agent gone is not.
func TestRunBusy(t *testing.T) {
	ep, stop := serve(t, busyAgent{})
	req := &agentpb.TargetRequest{Kind: target.Iperf3, Address: "192.0.2.9"}
	_, err := target.Run(t.Context(), ep, req, nil)
	if !errors.Is(err, target.ErrBusy) || !errors.Is(err, iperf3.ErrBusy) || errors.Is(err, target.ErrResolveTimeout) {
		t.Fatalf("a busy server: %v", err)
	}
	if err.Error() != busyWords {
		t.Errorf("says %q", err)
	}
	stop()
	if _, err := target.Run(t.Context(), ep, req, nil); err == nil || errors.Is(err, target.ErrBusy) {
		t.Errorf("an agent gone: %v", err)
	}
}

// TestRunReasons: the agent's two refusals of code Unavailable are told
// apart by their reasons: a resolver that did not answer is no busy
// server, for an iperf3 test too; an agent that gives no reason is taken
// at its code, as before.
func TestRunReasons(t *testing.T) {
	req := &agentpb.TargetRequest{Kind: target.Iperf3, Address: "iperf.example"}
	ep, _ := serve(t, slowResolver{})
	_, err := target.Run(t.Context(), ep, req, nil)
	if !errors.Is(err, target.ErrResolveTimeout) || errors.Is(err, target.ErrBusy) || !strings.Contains(err.Error(), "i/o timeout") {
		t.Errorf("a slow resolver: %v", err)
	}
	ep, _ = serve(t, reasonless{})
	if _, err := target.Run(t.Context(), ep, req, nil); !errors.Is(err, iperf3.ErrBusy) {
		t.Errorf("an agent without reasons: %v", err)
	}
}
