package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// auditEntry is an audit line, so named in tests whose audit logs are
// named audit.
type auditEntry = audit.Entry

// auditLog keeps a test agent's audit entries.
type auditLog struct {
	mu      sync.Mutex
	entries []auditEntry
	added   chan struct{}
}

func (a *auditLog) write(e auditEntry) {
	a.mu.Lock()
	a.entries = append(a.entries, e)
	close(a.added)
	a.added = make(chan struct{})
	a.mu.Unlock()
}

// count is how many entries match.
func (a *auditLog) count(match func(auditEntry) bool) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, e := range a.entries {
		if match(e) {
			n++
		}
	}
	return n
}

// wait waits up to 10 s for n entries that match.
func (a *auditLog) wait(t *testing.T, what string, n int, match func(auditEntry) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		a.mu.Lock()
		added := a.added
		a.mu.Unlock()
		if a.count(match) >= n {
			return
		}
		select {
		case <-added:
		case <-deadline:
			a.mu.Lock()
			defer a.mu.Unlock()
			t.Fatalf("the audit log has fewer than %d entries of %s: %+v", n, what, a.entries)
		}
	}
}

// tlsLab makes a CA in a temp dir, an agent's certificate for 127.0.0.1,
// and a controller's certificate for each name.
func tlsLab(t *testing.T, controllers ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pki")
	if err := pki.Init(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	if err := pki.Issue(dir, "agent", pki.Agent, pki.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range controllers {
		if err := pki.Issue(dir, name, pki.Controller, pki.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func labFiles(dir, name string) pki.Files {
	return pki.Files{CA: filepath.Join(dir, pki.CACert), Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
}

// serveTLS runs srv over TLS on 127.0.0.1 with the lab's agent
// certificate and the policy given, and returns its address and audit log.
func serveTLS(t *testing.T, srv *Server, dir, policyYAML string) (string, *auditLog) {
	t.Helper()
	data, err := datadir.Open(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Host, srv.Version, srv.Data, srv.Test = "h", "test", data, bind.Local{Addr: "127.0.0.1"}
	if srv.Limits == (limits.Limits{}) {
		srv.Limits = limits.Default
	}
	pol, err := policy.Parse("p.yaml", []byte(policyYAML), srv.Limits)
	if err != nil {
		t.Fatal(err)
	}
	srv.SetPolicy(pol)
	audit := &auditLog{added: make(chan struct{})}
	srv.Audit = audit.write
	side, err := pki.NewServer(labFiles(dir, "agent"))
	if err != nil {
		t.Fatal(err)
	}
	side.Refused = func(remote net.Addr, why string) {
		audit.write(auditEntry{Remote: remote.String(), Decision: "tls", Reason: why})
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ctx, ln, side.Config()) }()
	t.Cleanup(func() { cancel(); <-served; data.Close() })
	return ln.Addr().String(), audit
}

// controller dials the agent at addr as the lab's controller name.
func controller(t *testing.T, dir, name, addr string) *agentapi.Client {
	t.Helper()
	config, err := pki.ClientConfig(labFiles(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := agentapi.DialTLS(ctx, "h", addr, config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a gRPC connection as the lab's controller name, whatever the
// agent's policy says of it.
func rawConn(t *testing.T, dir, name, addr string) *grpc.ClientConn {
	t.Helper()
	config, err := pki.ClientConfig(labFiles(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	config.ServerName = "127.0.0.1"
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(config)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// silentCall opens a call of method and sends no request.
func silentCall(t *testing.T, ctx context.Context, conn *grpc.ClientConn, method string, serverStreams bool) {
	t.Helper()
	if _, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: serverStreams}, method); err != nil {
		t.Fatal(err)
	}
}

// TestStrangerHoldsNoSlot: an identity no rule names opened 64 Receive
// streams and sent nothing; the agent's test slots were all taken before
// any request was authorised, and the real controller was refused as busy
// for over a minute, with nothing in the audit log. A call is authorised
// before it takes anything, its request must arrive in time, one identity
// may have only so many calls awaiting theirs, and each refusal is
// audited.
func TestStrangerHoldsNoSlot(t *testing.T) {
	dir := tlsLab(t, "ctl", "stranger")
	lim := limits.Default
	lim.MaxTests = 2
	srv := &Server{Limits: lim, firstWait: 3 * time.Second}
	addr, audit := serveTLS(t, srv, dir, "rules:\n  - {name: ops, identities: [cn:ctl]}\n")

	// The stranger's calls: more Receive streams than the agent has
	// slots, more than it may have awaiting their request, and a unary
	// call, all silent.
	stranger := rawConn(t, dir, "stranger", addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const streams = maxPending + 4
	for range streams {
		silentCall(t, ctx, stranger, agentpb.Agent_Receive_FullMethodName, true)
	}
	silentCall(t, ctx, stranger, agentpb.Agent_Disk_FullMethodName, false)
	// Those over its calls awaiting their request at once are refused
	// at once: the others have reached the agent and wait.
	stranger1 := func(e auditEntry) bool { return e.Identity == "cn:stranger" && e.Decision == "refuse" }
	audit.wait(t, "the stranger's calls over its pending limit", streams+1-maxPending, func(e auditEntry) bool {
		return stranger1(e) && strings.Contains(e.Reason, "have not sent their request yet")
	})

	// The controller's test runs meanwhile.
	c := controller(t, dir, "ctl", addr)
	rctx, rcancel := context.WithCancel(context.Background())
	rs, err := c.Receive(rctx, &agentpb.ReceiveRequest{Spec: throughput.SpecToPB(tcpSpec(1, time.Second))})
	if err == nil {
		_, err = rs.Recv()
	}
	rcancel()
	if err != nil {
		t.Fatalf("the controller's test while a stranger's calls are open: %v", err)
	}

	// The others are refused and audited when their time is up.
	audit.wait(t, "the stranger's silent calls", maxPending, func(e auditEntry) bool {
		return stranger1(e) && strings.Contains(e.Reason, "its request did not arrive within 3s")
	})
	if audit.count(func(e auditEntry) bool { return stranger1(e) && e.Method == agentpb.Agent_Disk_FullMethodName }) != 1 {
		t.Error("the stranger's silent unary call is not in the audit log")
	}
	// A request that arrives is authorised before it takes a slot.
	_, err = agentpb.NewAgentClient(stranger).Disk(ctx, &agentpb.DiskRequest{Size: 1 << 20, Block: 1 << 16})
	wantRefusal(t, "the stranger's request", err, codes.PermissionDenied, "no rule names it")
}

// rawCodec sends bytes as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { *v.(*[]byte) = data; return nil }
func (rawCodec) Name() string                       { return "proto" }

var _ encoding.Codec = rawCodec{}

// TestRefusalsAreAudited: a call refused as busy, an unknown method and a
// request that does not decode were refused without an audit line.
func TestRefusalsAreAudited(t *testing.T) {
	dir := tlsLab(t, "ctl", "ctl2")
	lim := limits.Default
	lim.MaxTests = 1
	addr, audit := serveTLS(t, &Server{Limits: lim}, dir, "rules:\n  - {name: ops, identities: [cn:ctl, cn:ctl2]}\n")
	c, c2 := controller(t, dir, "ctl", addr), controller(t, dir, "ctl2", addr)
	ctx := context.Background()

	// ctl holds the one slot; ctl2's test is refused as busy.
	holdSlot(ctx, t, c)
	_, err := c2.Disk(ctx, &agentpb.DiskRequest{Size: 1 << 20, Block: 1 << 16})
	wantRefusal(t, "a test while the agent runs its most", err, codes.ResourceExhausted, "busy")

	conn := rawConn(t, dir, "ctl", addr)
	var out []byte
	in := []byte{0xff, 0xff, 0xff}
	err = conn.Invoke(ctx, "/wanlab.agent.v1.Agent/Shell", &in, &out, grpc.ForceCodec(rawCodec{}))
	wantRefusal(t, "an unknown method", err, codes.Unimplemented, "no method")
	err = conn.Invoke(ctx, agentpb.Agent_Disk_FullMethodName, &in, &out, grpc.ForceCodec(rawCodec{}))
	if status.Code(err) == codes.OK {
		t.Error("a request that does not decode was taken")
	}
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, agentpb.Agent_Receive_FullMethodName, grpc.ForceCodec(rawCodec{}))
	if err == nil {
		stream.SendMsg(&in)
		stream.CloseSend()
		err = stream.RecvMsg(&out)
	}
	if status.Code(err) == codes.OK {
		t.Error("a streaming request that does not decode was taken")
	}

	for _, tc := range []struct {
		what, identity, method, reason string
	}{
		{"busy", "cn:ctl2", agentpb.Agent_Disk_FullMethodName, "busy"},
		{"unknown method", "cn:ctl", "/wanlab.agent.v1.Agent/Shell", "no method"},
		{"undecodable unary request", "cn:ctl", agentpb.Agent_Disk_FullMethodName, "reading the request"},
		{"undecodable streaming request", "cn:ctl", agentpb.Agent_Receive_FullMethodName, "reading the request"},
	} {
		audit.wait(t, tc.what, 1, func(e auditEntry) bool {
			return e.Decision == "refuse" && e.Identity == tc.identity && e.Method == tc.method && strings.Contains(e.Reason, tc.reason)
		})
	}
}

// TestControlPortKeepsRoomForControllers: 400 TCP connections without a
// certificate kept the agent's 256 connections full, and controllers'
// hellos timed out. Connections in their handshake are bounded apart from
// controllers' (and per address), a handshake has 4 s, and both
// refusals and timeouts are audited.
func TestControlPortKeepsRoomForControllers(t *testing.T) {
	dir := tlsLab(t, "ctl")
	srv := &Server{handshakeWait: 2 * time.Second}
	addr, audit := serveTLS(t, srv, dir, "rules:\n  - {name: ops, identities: [cn:ctl]}\n")

	// 300 silent connections from 127.0.0.2.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range 300 {
		c, err := d.Dial("tcp4", addr)
		if err != nil {
			t.Fatalf("connection %d of the flood: %v", len(flood)+1, err)
		}
		flood = append(flood, c)
	}
	// The controller gets in meanwhile.
	c := controller(t, dir, "ctl", addr)
	if c.Info.GetGrant().GetRule() != "ops" {
		t.Errorf("the controller's hello: %+v", c.Info)
	}
	fromFlood := func(e auditEntry) bool { return e.Decision == "tls" && strings.HasPrefix(e.Remote, "127.0.0.2:") }
	audit.wait(t, "connections refused from one address", 1, func(e auditEntry) bool {
		return fromFlood(e) && strings.Contains(e.Reason, "connections from 127.0.0.2 are in theirs")
	})
	audit.wait(t, "handshakes timed out", 1, func(e auditEntry) bool {
		return fromFlood(e) && strings.Contains(e.Reason, "no TLS handshake within 2s")
	})
	// A controller's connection lives on past the handshake's time.
	hctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Hello(hctx, &agentpb.HelloRequest{ApiVersion: agentapi.APIVersion}); err != nil {
		t.Errorf("the controller's hello after the flood's handshakes timed out: %v", err)
	}
}

func TestSourceOf(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1:5":              "10.0.0.1",
		"[::ffff:10.0.0.2]:7":     "10.0.0.2",
		"[2001:db8:1:2:3::9]:7":   "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::]:1": "2001:db8:1:2::/64",
	} {
		ap, err := net.ResolveTCPAddr("tcp", in)
		if err != nil {
			t.Fatal(err)
		}
		if got := sourceOf(ap); got != want {
			t.Errorf("sourceOf(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestDialChecksOurCertificate: a controller whose certificate had
// expired was told only that the agent refused it. DialTLS checks its
// own certificate first and says what is wrong, with the date, without
// dialling.
func TestDialChecksOurCertificate(t *testing.T) {
	dir := tlsLab(t)
	past := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	if err := pki.Issue(dir, "old", pki.Controller, pki.Options{NotBefore: past, NotAfter: past.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	f := labFiles(dir, "old")
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	config := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
	_, err = agentapi.DialTLS(context.Background(), "h", "127.0.0.1:1", config)
	want := "expired on " + past.Add(time.Hour).UTC().Format(time.RFC3339)
	if !errors.Is(err, pki.ErrOwnCertificate) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "not dialled") {
		t.Errorf("dialling with an expired certificate: %v, want ErrOwnCertificate with %q", err, want)
	}
	if _, err := pki.ClientConfig(f); !errors.Is(err, pki.ErrOwnCertificate) {
		t.Errorf("the controller's configuration with an expired certificate: %v", err)
	}
}

// tcpSpec is a TCP throughput test of n streams for d.
func tcpSpec(n int, d time.Duration) throughput.Spec {
	return throughput.Spec{Protocol: throughput.TCP, Streams: n, Duration: d, Interval: time.Second}
}

// TestRefusedByGRPCIsAudited: a call gRPC ends with an error before the
// guard has read it is audited; one the guard has audited is not twice.
func TestRefusedByGRPCIsAudited(t *testing.T) {
	audit := &auditLog{added: make(chan struct{})}
	s := &Server{Host: "h", Audit: audit.write}
	h := rpcAudit{s}
	fail := &stats.End{Error: status.Error(codes.Unimplemented, "grpc: Decompressor is not installed")}
	ctx := h.TagRPC(context.Background(), &stats.RPCTagInfo{FullMethodName: agentpb.Agent_Disk_FullMethodName})
	h.HandleRPC(ctx, fail)
	seen := h.TagRPC(context.Background(), &stats.RPCTagInfo{FullMethodName: agentpb.Agent_Probe_FullMethodName})
	markAudited(seen)
	h.HandleRPC(seen, fail)
	h.HandleRPC(h.TagRPC(context.Background(), &stats.RPCTagInfo{FullMethodName: agentpb.Agent_Hello_FullMethodName}), &stats.End{})
	if n := audit.count(func(auditEntry) bool { return true }); n != 1 || audit.count(func(e auditEntry) bool {
		return e.Decision == "refuse" && e.Method == agentpb.Agent_Disk_FullMethodName && strings.Contains(e.Reason, "Decompressor")
	}) != 1 {
		t.Errorf("audit log %+v, want one refusal of Disk", audit.entries)
	}
}
