package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// echoSpec is the spec of the test kind's echo role: it listens, echoes
// one line of one connection (or ends at StopWorkload), and says what it
// echoed.
type echoSpec struct {
	Token   token.Token `json:"token"`
	Streams int         `json:"streams,omitempty"`
	// Folder makes the role write a file in its folder.
	Folder bool `json:"folder,omitempty"`
	// NoRoom makes the role refuse for want of room; Fail, for what it
	// was asked.
	NoRoom bool `json:"no_room,omitempty"`
	Fail   bool `json:"fail,omitempty"`
}

func (s *echoSpec) Validate(l limits.Limits) error {
	if s.Streams > l.MaxStreams {
		return fmt.Errorf("%d streams: %w", s.Streams, limits.ErrLimit)
	}
	return nil
}

// echoSummary is what the echo role says at its end.
type echoSummary struct {
	Host   string `json:"host"`
	Echoed string `json:"echoed"`
	Folder bool   `json:"folder"`
}

const (
	echoKind = results.Kind("echotest")
	echoRole = "echo-test"
)

func runEcho(ctx context.Context, env kind.RoleEnv, s kind.RoleSpec) (any, error) {
	spec := s.(*echoSpec)
	switch {
	case spec.NoRoom:
		return nil, fmt.Errorf("echo: %w", kind.ErrNoRoom)
	case spec.Fail:
		return echoSummary{Host: env.Host()}, errors.New("echo failed as asked")
	}
	if err := env.Streams(spec.Streams); err != nil {
		return nil, err
	}
	sum := echoSummary{Host: env.Host()}
	if spec.Folder {
		root, err := env.Folder()
		if err != nil {
			return nil, err
		}
		if err := root.WriteFile("echo", []byte("kept"), 0o600); err != nil {
			return nil, err
		}
		sum.Folder = true
	}
	sctx, err := env.Serving()
	if err != nil {
		return nil, err
	}
	ln, err := env.Test().Listen(net.ListenConfig{})
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	if err := env.Listening(ln.Addr().(*net.TCPAddr).Port); err != nil {
		return nil, err
	}
	echoed := make(chan string, 1)
	go func() {
		defer close(echoed)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			return
		}
		start := time.Now()
		io.WriteString(conn, line)
		env.Job(job.Record{ID: 1, Subject: "echo", Start: start, End: time.Now(), Bytes: int64(len(line)), Status: "ok"})
		echoed <- line
	}()
	select {
	case sum.Echoed = <-echoed:
	case <-sctx.Done():
	}
	return sum, nil
}

// registerEcho registers the test kind until the test ends; role names
// its role (a role of the agent's own table, to prove that the registry
// wins, or echoRole).
func registerEcho(t *testing.T, name results.Kind, role string) {
	t.Helper()
	t.Cleanup(kinds.Register(kind.Kind{Name: name, Roles: []kind.Role{{
		Name: role, Spec: func() kind.RoleSpec { return &echoSpec{} }, Run: runEcho,
	}}}))
}

// startEcho starts an echo role under id and returns its stream.
func startEcho(t *testing.T, c agentpb.AgentClient, id, role string, spec any) agentpb.Agent_WorkloadClient {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := c.Workload(context.Background(), &agentpb.WorkloadRequest{Id: id, Role: role, SpecJson: b})
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// listensAt reads a role's first event, which must say where it listens.
func listensAt(t *testing.T, stream agentpb.Agent_WorkloadClient) string {
	t.Helper()
	e, err := stream.Recv()
	if err != nil {
		t.Fatalf("before it listened: %v", err)
	}
	if e.GetListening() == nil {
		t.Fatalf("first event %v, want listening", e)
	}
	return fmt.Sprintf("127.0.0.1:%d", e.GetListening().GetPort())
}

// TestRegisteredRole: the agent runs a role of a registered kind through
// the registry: it listens, sends its jobs and its summary, its call is
// audited under its kind's name, and what it held (its folder, its
// streams) is given back at its end.
func TestRegisteredRole(t *testing.T) {
	registerEcho(t, echoKind, echoRole)
	c, audit := serveAudited(t)
	stream := startEcho(t, c, "e1", echoRole, echoSpec{Token: token.New(), Streams: limits.Default.MaxStreams, Folder: true})
	addr := listensAt(t, stream)

	// While it runs it holds every stream of the host, and its folder.
	other := startEcho(t, c, "e2", echoRole, echoSpec{Token: token.New(), Streams: 1})
	_, err := other.Recv()
	wantRefusal(t, "a role past the host's streams", err, codes.ResourceExhausted, "streams are in use")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "hello\n")
	if back, err := bufio.NewReader(conn).ReadString('\n'); err != nil || back != "hello\n" {
		t.Fatalf("echo: %q, %v", back, err)
	}
	var jobs int
	var sum echoSummary
	for {
		e, err := stream.Recv()
		if err != nil {
			t.Fatalf("before the summary: %v", err)
		}
		if e.GetJob() != nil {
			jobs++
		}
		if b := e.GetSummaryJson(); b != nil {
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Errorf("after the summary: %v, want the call's end", err)
	}
	if want := (echoSummary{Host: "h", Echoed: "hello\n", Folder: true}); sum != want || jobs != 1 {
		t.Errorf("summary %+v after %d jobs, want %+v after 1", sum, jobs, want)
	}
	if !eventually(10*time.Second, func() bool {
		n := 0
		for _, e := range audit() {
			if e.Kind == string(echoKind) && e.Decision == "end" && e.Reason == "" {
				n++
			}
		}
		return n == 1
	}) {
		t.Errorf("audit %+v, want the role's end under kind %s", audit(), echoKind)
	}

	// Its streams and folder are given back.
	again := startEcho(t, c, "e1", echoRole, echoSpec{Token: token.New(), Streams: limits.Default.MaxStreams})
	listensAt(t, again)
	if _, err := c.StopWorkload(context.Background(), &agentpb.StopWorkloadRequest{Id: "e1"}); err != nil {
		t.Fatal(err)
	}
	summary(t, again, &sum)
	if sum.Echoed != "" {
		t.Errorf("a stopped role echoed %q", sum.Echoed)
	}
}

// TestRegisteredRoleFolder: a role's folder is its own, named by the agent,
// and removed at its end.
func TestRegisteredRoleFolder(t *testing.T) {
	registerEcho(t, echoKind, echoRole)
	c, data := serve(t, limits.Default)
	stream := startEcho(t, c, "f", echoRole, echoSpec{Token: token.New(), Folder: true})
	listensAt(t, stream)
	folders := namesWithPrefix(data, string(echoKind)+"-")
	if len(folders) != 1 {
		t.Fatalf("folders %v, want the role's", folders)
	}
	if _, err := os.Stat(data + "/" + folders[0] + "/echo"); err != nil {
		t.Errorf("the role's file: %v", err)
	}
	c.StopWorkload(context.Background(), &agentpb.StopWorkloadRequest{Id: "f"})
	var sum echoSummary
	summary(t, stream, &sum)
	if !eventually(10*time.Second, func() bool { return len(namesWithPrefix(data, string(echoKind)+"-")) == 0 }) {
		t.Errorf("after the role's end the agent keeps %v", namesWithPrefix(data, string(echoKind)+"-"))
	}
}

// TestRegisteredRoleRefusals: a registered role's spec is decoded with
// unknown fields refused, validated with the caller's limits, and must
// carry a token; its errors are refusals, for want of room or not.
func TestRegisteredRoleRefusals(t *testing.T) {
	registerEcho(t, echoKind, echoRole)
	c, _ := serve(t, limits.Default)
	tok := token.New()
	for _, tc := range []struct {
		what string
		spec any
		code codes.Code
		text string
	}{
		{"an unknown field", map[string]any{"token": tok, "colour": "red"}, codes.InvalidArgument, "unknown field"},
		{"no token", echoSpec{}, codes.InvalidArgument, "no test token"},
		{"past the limits", echoSpec{Token: tok, Streams: limits.Default.MaxStreams + 1}, codes.ResourceExhausted, "streams"},
		{"no room", echoSpec{Token: tok, NoRoom: true}, codes.ResourceExhausted, "no room"},
		{"a failure", echoSpec{Token: tok, Fail: true}, codes.InvalidArgument, "echo failed as asked"},
	} {
		stream := startEcho(t, c, "r", echoRole, tc.spec)
		var err error
		for err == nil {
			_, err = stream.Recv()
		}
		wantRefusal(t, tc.what, err, tc.code, tc.text)
	}
}

// TestRegisteredRoleWins: a registered role of a name the agent's own
// table has too runs through the registry.
func TestRegisteredRoleWins(t *testing.T) {
	registerEcho(t, "echowins", agentapi.RoleWatch)
	c, _ := serve(t, limits.Default)
	stream := startEcho(t, c, "w", agentapi.RoleWatch, echoSpec{Token: token.New()})
	listensAt(t, stream)
	c.StopWorkload(context.Background(), &agentpb.StopWorkloadRequest{Id: "w"})
	var sum echoSummary
	summary(t, stream, &sum)
	if sum.Host != "h" {
		t.Errorf("summary %+v, want the echo role's", sum)
	}
}
