package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// serve runs an agent with lim on a socket of the test's and returns a
// client for it and its data folder.
func serve(t *testing.T, lim limits.Limits) (*agentapi.Client, string) {
	t.Helper()
	srv := &Server{Host: "h", Version: "test", Limits: lim}
	c := serveOn(t, srv)
	return c, srv.Data.Path()
}

// serveOn gives srv a data folder of the test's, serves it on a socket
// there until the test ends, and returns a client for it.
func serveOn(t *testing.T, srv *Server) *agentapi.Client {
	t.Helper()
	dir := t.TempDir()
	data, err := datadir.Open(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Data = data
	ctx, cancel := context.WithCancel(context.Background())
	sock := filepath.Join(dir, "agent.sock")
	served := make(chan error, 1)
	go func() { served <- srv.ServeSocket(ctx, sock) }()
	t.Cleanup(func() { cancel(); <-served; data.Close() })
	var c *agentapi.Client
	for range 200 {
		if c, err = agentapi.Dial(context.Background(), "h", sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// workload starts a role and returns the call's first error.
func workload(c *agentapi.Client, id, role string, spec any) error {
	b, _ := json.Marshal(spec)
	stream, err := c.Workload(context.Background(), &agentpb.WorkloadRequest{Id: id, Role: role, SpecJson: b})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

// holdSlot starts a reflector that idles for 10 s, holding one of the
// agent's test slots until then or until ctx ends.
func holdSlot(ctx context.Context, t *testing.T, c *agentapi.Client) {
	t.Helper()
	s, err := c.Reflect(ctx, &agentpb.ReflectRequest{IdleNs: int64(10 * time.Second)})
	if err == nil {
		_, err = s.Recv()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func wantRefusal(t *testing.T, what string, err error, code codes.Code, text string) {
	t.Helper()
	if s, _ := status.FromError(err); err == nil || s.Code() != code || !strings.Contains(s.Message(), text) {
		t.Errorf("%s: %v, want %v with %q", what, err, code, text)
	}
}

// TestMeshIDCannotEscape: a mesh node's id of x/../../victimdir made the
// agent remove an arbitrary tree. Ids are names of a safe alphabet now,
// and never become paths.
func TestMeshIDCannotEscape(t *testing.T) {
	c, data := serve(t, limits.Default)
	victim := filepath.Join(filepath.Dir(data), "victimdir")
	os.MkdirAll(filepath.Join(victim, "inside"), 0o700)
	rel, _ := filepath.Rel(os.TempDir(), victim)
	spec := mesh.Node{Disk: true, NodeSpec: mesh.NodeSpec{Peers: []mesh.Peer{{Name: "p", Address: "127.0.0.1:1", Weight: 1}},
		Sizes: []int64{1000}, Streams: 1, Duration: time.Second}}
	for _, id := range []string{"x/../../../../../" + rel, "../victimdir", "/tmp", ""} {
		err := workload(c, id, mesh.RoleNode, spec)
		wantRefusal(t, fmt.Sprintf("mesh node id %q", id), err, codes.InvalidArgument, "workload id")
	}
	if _, err := os.Stat(filepath.Join(victim, "inside")); err != nil {
		t.Errorf("the folder outside is gone: %v", err)
	}
}

// TestFilesAreTheAgents: SendFile sends only files of the agent's data
// folder, never through a link, and removes only what the agent kept; a
// root-only file once came back as a 0644 copy anyone could read.
func TestFilesAreTheAgents(t *testing.T) {
	c, data := serve(t, limits.Default)
	secret := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(secret, []byte("root:secret"), 0o600)
	os.Symlink(secret, filepath.Join(data, "innocent"))
	os.Symlink("placed", filepath.Join(data, "inner"))
	os.WriteFile(filepath.Join(data, "placed"), []byte("a file put there on the host"), 0o600)
	spec := transfer.SpecToPB(transfer.Spec{Streams: 1, Block: 1 << 20})
	for _, tc := range []struct {
		file   string
		remove bool
		want   string
	}{
		{secret, false, "not a valid file name"},
		{"../../" + filepath.Base(secret), false, "not a valid file name"},
		{"innocent", false, "symbolic link"},
		{"inner", false, "symbolic link"},
		{"placed", true, "only for a file the agent kept"},
	} {
		_, err := c.SendFile(context.Background(), &agentpb.SendFileRequest{Spec: spec, File: tc.file, RemoveAfter: tc.remove, Address: "127.0.0.1:1"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SendFile %q: %v, want %q", tc.file, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "placed")); err != nil {
		t.Errorf("a file the agent did not keep was removed: %v", err)
	}
}

// TestReceivedFilesArePrivate: a kept file is 0600, and a receive that is
// cancelled leaves nothing (it once truncated and removed any file named).
func TestReceivedFilesArePrivate(t *testing.T) {
	a, _ := serve(t, limits.Default)
	b, bData := serve(t, limits.Default)
	kept := sendKept(t, a, b, 2, 100000)
	fi, err := os.Stat(filepath.Join(bData, kept))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 100000 {
		t.Errorf("kept file %q: %v %v", kept, fi, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	spec := transfer.SpecToPB(transfer.Spec{Streams: 2, Block: 64 << 10})
	rstream, err := b.ReceiveFile(ctx, &agentpb.ReceiveFileRequest{Spec: spec, CorruptAt: -1})
	if err == nil {
		_, err = rstream.Recv()
	}
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	time.Sleep(200 * time.Millisecond)
	entries, _ := os.ReadDir(bData)
	if len(entries) != 1 {
		t.Errorf("after a cancelled receive the data folder holds %d files, want only the kept one", len(entries))
	}
}

// TestRolesAreBounded: every workload role is checked against the agent's
// limits (a 200,000-worker role took an agent from 32 to 427 MB in 3 s),
// and the agent runs at most MaxTests tests at once.
func TestRolesAreBounded(t *testing.T) {
	lim := limits.Default
	lim.MaxTests, lim.MaxConnections, lim.MaxStreams = 2, 100, 8
	c, _ := serve(t, lim)
	wantRefusal(t, "200,000 workers", workload(c, "w1", taskfarm.RoleWorkers, taskfarm.WorkerSpec{Address: "127.0.0.1:1", Workers: 200_000}),
		codes.ResourceExhausted, "workers 200000: over the agent's limit of 100 connections")
	wantRefusal(t, "a master for 200,000 workers", workload(c, "m1", taskfarm.RoleMaster, taskfarm.MasterSpec{Tasks: 1, Work: taskfarm.WorkSleep, Prefetch: 1, Workers: 200_000}),
		codes.ResourceExhausted, "over the agent's limit")
	wantRefusal(t, "a mesh node of 64 streams", workload(c, "n1", mesh.RoleNode, mesh.Node{NodeSpec: mesh.NodeSpec{
		Peers: []mesh.Peer{{Name: "p", Address: "127.0.0.1:1", Weight: 1}}, Sizes: []int64{1 << 20}, Streams: 64, Duration: time.Second}}),
		codes.ResourceExhausted, "streams 64")
	wantRefusal(t, "a spec with a field the agent does not know", workload(c, "w2", taskfarm.RoleWorkers, map[string]any{"address": "x", "workers": 1, "path": "/etc"}),
		codes.InvalidArgument, "unknown field")
	wantRefusal(t, "a role without the test's token", workload(c, "w3", taskfarm.RoleWorkers, taskfarm.WorkerSpec{Address: "127.0.0.1:1", Workers: 1}),
		codes.InvalidArgument, "its spec carries no test token")

	// Two reflectors hold both test slots; a third test is refused.
	for range 2 {
		holdSlot(context.Background(), t, c)
	}
	_, err := c.Disk(context.Background(), &agentpb.DiskRequest{Size: 1 << 20, Block: 1 << 16})
	wantRefusal(t, "a third test at once", err, codes.ResourceExhausted, "busy")
}

// sendKept sends a generated file of size bytes over streams from a to b,
// which keeps it, and returns the name b gave it.
func sendKept(t *testing.T, a, b *agentapi.Client, streams int, size uint64) string {
	t.Helper()
	spec := transfer.SpecToPB(transfer.Spec{Streams: streams, Block: 64 << 10})
	rstream, err := b.ReceiveFile(context.Background(), &agentpb.ReceiveFileRequest{Spec: spec, Keep: true, CorruptAt: -1, ExpectedSize: size})
	if err != nil {
		t.Fatal(err)
	}
	first, err := rstream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", first.GetListening().GetPort())
	if _, err := a.SendFile(context.Background(), &agentpb.SendFileRequest{Spec: spec, Size: size, Address: addr, Token: first.GetListening().GetToken()}); err != nil {
		t.Fatal(err)
	}
	ev, err := rstream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return ev.GetResult().GetFile()
}
