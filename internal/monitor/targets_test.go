package monitor

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/icmpecho"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/stamp"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/topology"
)

// localBed is a bed of agents served in the test on sockets, each host's
// tests on loopback.
type localBed struct {
	topo  *topology.Topology
	socks map[string]string
}

func (b *localBed) Topology() *topology.Topology { return b.topo }
func (b *localBed) Dial(ctx context.Context, host string) (*agentapi.Client, error) {
	return agentapi.Dial(ctx, host, b.socks[host])
}
func (b *localBed) Command(ctx context.Context, host string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "false")
}
func (b *localBed) Counters() (backend.Counters, error) {
	return backend.Counters{}, backend.ErrOffline
}
func (b *localBed) Close() error { return nil }

// serveAgents serves an agent for each host, with its limits, over a
// socket (as an emulated test-bed's: no policy, the limits hold).
func serveAgents(t *testing.T, hosts map[string]limits.Limits) *localBed {
	t.Helper()
	b := &localBed{topo: &topology.Topology{Name: "local"}, socks: map[string]string{}}
	for _, h := range slices.Sorted(func(yield func(string) bool) {
		for h := range hosts {
			if !yield(h) {
				return
			}
		}
	}) {
		dir := t.TempDir()
		data, err := datadir.Open(filepath.Join(dir, "data"))
		if err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(dir, h+".sock")
		ctx, cancel := context.WithCancel(context.Background())
		srv := &agent.Server{Host: h, Version: "test", Limits: hosts[h], Data: data}
		served := make(chan error, 1)
		go func() { served <- srv.ServeSocket(ctx, sock) }()
		t.Cleanup(func() { cancel(); <-served; data.Close() })
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			c, err := agentapi.Dial(context.Background(), h, sock)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the agent of %s: %v", h, err)
			}
		}
		b.socks[h] = sock
		b.topo.Hosts = append(b.topo.Hosts, topology.Host{Name: h, Addr: "127.0.0.1"})
	}
	return b
}

// reflector serves a STAMP reflector on 127.0.0.1 and returns its address.
func reflector(t *testing.T) string {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := stamp.NewReflector(stamp.ReflectorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Serve(ctx, conn); close(done) }()
	t.Cleanup(func() { cancel(); <-done; conn.Close() })
	return conn.LocalAddr().String()
}

// mute is a UDP socket on 127.0.0.1 that answers nothing.
func mute(t *testing.T) string {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn.LocalAddr().String()
}

// iperf3Server runs iperf3 -s on a free port of 127.0.0.1 and returns its
// address once it accepts connections.
func iperf3Server(t *testing.T) string {
	t.Helper()
	testsupport.Need(t, "iperf3")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("iperf3", "-s", "-B", "127.0.0.1", "-p", fmt.Sprint(port))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		// A control connection closed at once: the server goes on listening.
		if c, err := net.Dial("tcp4", addr); err == nil {
			c.Close()
			return addr
		}
		select {
		case <-done:
			t.Fatalf("iperf3 -s exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("iperf3 -s does not listen on %s: %s", addr, out.String())
		}
	}
}

// canPing says whether this process's agent may open an ICMP socket.
func canPing() bool {
	p := icmpecho.Pinger{Target: netip.MustParseAddr("127.0.0.1"), Count: 1, Interval: icmpecho.MinInterval, Timeout: 5 * time.Second}
	_, err := p.Run(context.Background())
	return err == nil
}

// runService runs a service of the configuration text over bed and a new
// archive until stop.
func runService(t *testing.T, bed backend.Bed, text string) (s *Service, store *Store, stop func()) {
	t.Helper()
	cfg, err := Parse(filepath.Join(t.TempDir(), "monitor.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	store, err = OpenStore(filepath.Join(t.TempDir(), "a.db"), t.TempDir(), core.DefaultBufferMax, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if s, err = New(cfg, Options{Bed: bed, Store: store, Logf: t.Logf}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once bool
	return s, store, func() {
		if once {
			return
		}
		once = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestTargets: a service whose hosts' agents test toward far ends that
// run none (a STAMP reflector, ping, an iperf3 server, all on loopback)
// stores their results as paths from the host to the target's name with
// the agents' metric names; a silent target and a refused one are failed
// tests that say why, naming the target.
func TestTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a service for up to a few minutes")
	}
	bed := serveAgents(t, map[string]limits.Limits{"a": limits.Default, "tight": {MaxDuration: time.Hour, MaxStreams: 1, MaxRate: 1e9, MaxBytes: 100, MaxConnections: 4, MaxTests: 4}})
	ping := ""
	if canPing() {
		ping = "  gw: {ping: 127.0.0.1}\n"
	} else {
		t.Log("no ICMP socket here: no ping target")
	}
	text := fmt.Sprintf(`testbed: local
targets:
  refl: {stamp: %q}
  quiet: {stamp: %q}
  srv: {iperf3: %q}
%sgroups:
  near: [a, refl%s]
  dark: [a, quiet]
  policed: [tight, refl]
  bulk: [a, srv]
tests:
  - {name: latency, type: probe, group: near, rate: 10/s, summary: 2s}
  - {name: dark, type: probe, group: dark, rate: 10/s, summary: 2s}
  - {name: policed, type: probe, group: policed, rate: 10/s, summary: 2s}
  - {name: bulk, type: throughput, group: bulk, every: 10s, duration: 1s}
interfaces: {every: 0}
`, reflector(t), mute(t), iperf3Server(t), ping, map[bool]string{true: ", gw"}[ping != ""])
	s, store, stop := runService(t, bed, text)
	defer stop()
	cfg := s.cfg
	type want struct {
		dst, test, metric, reason string
	}
	wants := []want{
		{"refl", "latency", string(core.RTTMedian), ""},
		{"srv", "bulk", string(core.ThroughputRate), ""},
		{"quiet", "dark", "", "target quiet (stamp " + cfg.Targets[1].Address + ") answered none of 20 probes from a"},
		{"refl", "policed", "", "target refl (stamp " + cfg.Targets[0].Address + ") from tight: the agent's policy refuses the test"},
	}
	if ping != "" {
		wants = append(wants, want{"gw", "latency", string(core.LossRatio), ""})
	}
	src := func(w want) string {
		if w.test == "policed" {
			return "tight"
		}
		return "a"
	}
	met := func(snap core.Snapshot, w want) (core.PathView, bool) {
		i := slices.IndexFunc(snap.Paths, func(p core.PathView) bool { return p.Src == src(w) && p.Dst == w.dst && p.Test == w.test })
		if i < 0 {
			return core.PathView{}, false
		}
		p := snap.Paths[i]
		if w.metric != "" {
			_, ok := p.Values[w.metric]
			return p, p.State == "ok" && ok
		}
		return p, strings.Contains(p.Reason, w.reason)
	}
	var snap core.Snapshot
	for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		snap = s.Snapshot()
		if !slices.ContainsFunc(wants, func(w want) bool { _, ok := met(snap, w); return !ok }) {
			break
		}
	}
	for _, w := range wants {
		if p, ok := met(snap, w); !ok {
			t.Errorf("%s->%s (%s): %+v; want %s", src(w), w.dst, w.test, p, map[bool]string{true: "a value of " + w.metric, false: "a failure saying " + w.reason}[w.metric != ""])
		} else if p.Target == "" {
			t.Errorf("%s->%s: the view does not say it is a target", src(w), w.dst)
		}
	}
	if p, ok := met(snap, wants[0]); ok && (p.Values[string(core.LossRatio)] != 0 || p.Values[string(core.RTTMedian)] > 0.5 || p.Family != "ipv4") {
		t.Errorf("the reflector on loopback: %+v", p)
	}
	// The archive holds the points as the agents' paths', and the test
	// toward the iperf3 server with its result.
	ar := store.Archive()
	pts, err := ar.Points(t.Context(), "a", "srv", string(core.ThroughputRate), time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
	if err != nil || len(pts) == 0 || pts[0].Value <= 0 {
		t.Errorf("throughput points toward srv: %v, %v", pts, err)
	}
	recs, err := ar.Tests(t.Context(), "a", "srv", "bulk", 5)
	if err != nil || len(recs) == 0 || recs[0].Status != "ok" || !strings.Contains(string(recs[0].Result), `"to": "srv"`) && !strings.Contains(string(recs[0].Result), `"to":"srv"`) {
		t.Errorf("test records toward srv: %+v, %v", recs, err)
	}
	if snap.Tests["probe failed"] == 0 {
		t.Errorf("tests counted %v: the silent and the refused targets' rounds are failed tests", snap.Tests)
	}
}

// busyAgent is an agent whose iperf3 target is always busy.
type busyAgent struct {
	agentpb.UnimplementedAgentServer
}

func (busyAgent) Hello(context.Context, *agentpb.HelloRequest) (*agentpb.HelloReply, error) {
	return &agentpb.HelloReply{ApiVersion: agentapi.APIVersion, Host: "a"}, nil
}

func (busyAgent) Target(*agentpb.TargetRequest, grpc.ServerStreamingServer[agentpb.TargetEvent]) error {
	return status.Error(codes.Unavailable, "agent on a: an iperf3 test toward 192.0.2.9:5201: the server is busy running a test")
}

// TestTargetBusy: an iperf3 server busy with another's test is its own
// status: the test is recorded as busy, the path neither fails nor
// alerts, and says why it has no data.
func TestTargetBusy(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "a.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	agentpb.RegisterAgentServer(g, busyAgent{})
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	bed := &localBed{topo: &topology.Topology{Name: "local", Hosts: []topology.Host{{Name: "a", Addr: "127.0.0.1"}}}, socks: map[string]string{"a": sock}}
	s, store, stop := runService(t, bed, `testbed: local
targets: {srv: {iperf3: "192.0.2.9:5201"}}
groups: {bulk: [a, srv]}
tests:
  - {name: bulk, type: throughput, group: bulk, every: 10s, duration: 1s}
alerts: {for: 1}
interfaces: {every: 0}
`)
	var snap core.Snapshot
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if snap = s.Snapshot(); snap.Tests["throughput busy"] > 0 {
			break
		}
	}
	stop()
	if snap.Tests["throughput busy"] == 0 || snap.Tests["throughput failed"] != 0 || len(snap.Alerts) != 0 {
		t.Fatalf("tests %v, alerts %+v: want a busy test, none failed, no alert", snap.Tests, snap.Alerts)
	}
	if len(snap.Paths) != 1 || snap.Paths[0].Target != core.TargetIperf3 || !strings.Contains(snap.Paths[0].Reason, "the server is busy running a test") {
		t.Errorf("paths %+v: want a->srv saying the server was busy", snap.Paths)
	}
	store.Flush()
	recs, err := store.Archive().Tests(t.Context(), "a", "srv", "bulk", 5)
	if err != nil || len(recs) == 0 || recs[0].Status != "busy" || !strings.Contains(recs[0].Reason, "target srv (iperf3 192.0.2.9:5201) from a") {
		t.Errorf("test records %+v, %v", recs, err)
	}
}
