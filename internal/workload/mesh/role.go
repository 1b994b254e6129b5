package mesh

import (
	"context"
	"fmt"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// RoleNode is the mesh node's role on the wire; its spec is a Node.
const RoleNode = "mesh-node"

// Node is a mesh node as the controller starts it: the port it serves on,
// whether its transfers are disk to disk, and its loop.
type Node struct {
	Port int  `json:"port"`
	Disk bool `json:"disk"`
	NodeSpec
}

// Validate checks the node against itself and the limits.
func (n Node) Validate(l limits.Limits) error {
	if n.Port < 0 || n.Port > 65535 {
		return fmt.Errorf("port %d: give 0 (any) to 65535", n.Port)
	}
	return n.NodeSpec.Validate(l)
}

var nodeRole = kind.NewRole(RoleNode, runNode)

// runNode runs a mesh node in an agent: it serves its peers' transfers
// and runs its own loop; once the loop is done it sends its summary and
// serves on until the controller stops it (every node serves the others
// until all have finished their loops).
func runNode(ctx context.Context, env kind.RoleEnv, spec *Node) (any, error) {
	spec.Host = env.Host()
	if err := env.Streams(spec.Streams); err != nil {
		return nil, err
	}
	sctx, err := env.Serving()
	if err != nil {
		return nil, err
	}
	var files *Files
	if spec.Disk {
		dir, err := env.Folder()
		if err != nil {
			return nil, err
		}
		if files, err = OpenFiles(ctx, dir, spec.MaxStreamLength(), env.DiskCapped()); err != nil {
			return nil, fmt.Errorf("%w: %w", kind.ErrNoRoom, err)
		}
		defer files.Close()
	}
	srv, err := Listen(spec.Port, env.Test(), spec.Token, spec.MaxStreamLength())
	if err != nil {
		return nil, err
	}
	srv.Files = files
	srv.MaxConnections = env.Limits().MaxConnections
	srv.Expect = spec.Connections()
	// However the node ends, it stops serving before its files close.
	sctx, stop := context.WithCancel(sctx)
	served := make(chan struct{})
	go func() { srv.Serve(sctx); close(served) }()
	defer func() { stop(); <-served }()
	if err := env.Listening(srv.Port()); err != nil {
		return nil, err
	}
	sum, err := Loop(ctx, spec.NodeSpec, files, env.Job)
	if err != nil {
		return nil, err
	}
	if err := env.Summary(sum); err != nil {
		return nil, err
	}
	<-sctx.Done()
	return nil, nil
}
