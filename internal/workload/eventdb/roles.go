package eventdb

import (
	"context"
	"fmt"

	"github.com/wanlab/wanlab/internal/workload/kind"
)

// The roles' names on the wire, and the spec each takes as JSON.
const (
	RoleServer = "eventdb-server" // ServerSpec
	RoleClient = "eventdb-client" // ClientSpec
)

// roles are the event store's roles in agents: the server, until
// StopWorkload, and a client host's jobs, each reported as it ends.
var roles = []kind.Role{
	kind.NewRole(RoleServer, runServer),
	kind.NewRole(RoleClient, runClient),
}

// runServer serves the store on the host's test address until the
// controller stops it; its summary is the server's totals.
func runServer(ctx context.Context, env kind.RoleEnv, s *ServerSpec) (any, error) {
	sctx, err := env.Serving()
	if err != nil {
		return nil, err
	}
	srv, err := Listen(*s, env.Limits(), env.Test())
	if err != nil {
		return nil, err
	}
	if err := env.Listening(srv.Port()); err != nil {
		srv.ln.Close()
		return nil, fmt.Errorf("saying where the event server listens: %w", err)
	}
	return srv.Serve(sctx), nil
}

// runClient runs a client host's jobs, sending each as it ends; its
// summary is empty.
func runClient(ctx context.Context, env kind.RoleEnv, s *ClientSpec) (any, error) {
	if err := RunClient(ctx, *s, env.Limits(), env.Host(), env.Job); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
