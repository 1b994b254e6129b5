package target_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/target"
)

// busyAgent answers every Target call as an agent whose iperf3 server is
// busy does.
type busyAgent struct{ olderAgent }

func (busyAgent) Target(*agentpb.TargetRequest, grpc.ServerStreamingServer[agentpb.TargetEvent]) error {
	return status.Error(codes.Unavailable, "agent on busy: an iperf3 test toward 192.0.2.9:5201: the server is busy running a test")
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

// TestRunBusy: an iperf3 server busy with another test is ErrBusy, in the
// agent's words; an agent gone is not.
func TestRunBusy(t *testing.T) {
	ep, stop := serve(t, busyAgent{})
	req := &agentpb.TargetRequest{Kind: target.Iperf3, Address: "192.0.2.9"}
	_, err := target.Run(t.Context(), ep, req, nil)
	if !errors.Is(err, target.ErrBusy) {
		t.Fatalf("a busy server: %v", err)
	}
	if want := "agent on busy: an iperf3 test toward 192.0.2.9:5201: the server is busy running a test"; !errors.Is(err, target.ErrBusy) || err.Error() != "the far end is busy: "+want {
		t.Errorf("says %q", err)
	}
	stop()
	if _, err := target.Run(t.Context(), ep, req, nil); err == nil || errors.Is(err, target.ErrBusy) {
		t.Errorf("an agent gone: %v", err)
	}
}
