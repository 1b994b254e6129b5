// Package agent is the daemon that runs measurement workloads on one host for
// a controller; the controller's client for it is package agentapi. They
// speak gRPC (package wanlab.agent.v1) over a Unix socket in emulated
// test-beds, so that control traffic never crosses an emulated link.
//
// An agent trusts nothing in a request: it names and places every file
// itself, in its own data folder; it checks every request against its
// limits (time, bytes, streams, connections, tests at once) before it
// starts; and it bounds every call in time. docs/security.md says more.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/unixsock"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Server runs workloads for controllers. One server serves many tests at
// once, each its own call, up to its limits. It holds the agent's settings
// and the state its calls share; the calls are served by types of their
// own over it (service), each admitted by its guard.
type Server struct {
	Host    string
	Version string
	Limits  limits.Limits
	// Data is the agent's own folder: every file it makes, receives or
	// sends is there, named by the agent.
	Data *datadir.Dir
	// Test is where the agent's test listeners open: its test address and
	// port range.
	Test bind.Local
	// TestAddress and TestAddress6 are the test addresses a dual-stack
	// agent names in its Hello, IPv4 and IPv6, when its listeners open on
	// every address (Test.Addr empty); unset, it names Test.Addr.
	TestAddress, TestAddress6 string
	// DiskCapped says the host's disk has a rate cap (a test-bed host's
	// disk:), so that workloads read and write the disk, not the page cache.
	DiskCapped bool
	// DiskReadBps is the host's disk read cap (bytes/s; 0: none).
	DiskReadBps int64
	// HostCPU, if set, reads the CPU time the agent's host (its cgroup)
	// has used, for the CPU figures of each test.
	HostCPU func() (time.Duration, error)

	// Audit, if set, hears of every call's decision and end, and of every
	// connection refused in its TLS handshake.
	Audit func(audit.Entry)

	// firstWait, handshakeWait and auditFlush, if set, replace firstWait,
	// handshakeWait and auditFlush (tests).
	firstWait, handshakeWait, auditFlush time.Duration

	policy  atomic.Pointer[policy.Policy]
	host    host
	serving stoppers
	kept    keptFiles
	tests   chan struct{} // a slot per test running
	streams streamBudget
	// resolving counts the far ends' names being resolved (target.go).
	resolving resolveSlots
	// early paces the audit lines of refusals a caller can repeat at will.
	early auditPacer
}

// Serve serves on ln until ctx ends, with the gRPC options given (the
// transport's credentials).
func (s *Server) Serve(ctx context.Context, ln net.Listener, opts ...grpc.ServerOption) error {
	if err := s.Limits.Validate(); err != nil {
		return fmt.Errorf("agent on %s: %w", s.Host, err)
	}
	if s.Data == nil {
		return fmt.Errorf("agent on %s: no data folder", s.Host)
	}
	s.tests = make(chan struct{}, s.Limits.MaxTests)
	s.host.init()
	s.streams.max = s.Limits.MaxStreams
	g := guard{auditor{s}}
	opts = append(opts, grpc.UnaryInterceptor(g.admitUnary), grpc.StreamInterceptor(g.admitStream),
		grpc.MaxRecvMsgSize(1<<20), grpc.UnknownServiceHandler(g.unknownMethod), grpc.StatsHandler(rpcAudit{s}), grpc.InTapHandle(tapStream))
	srv := grpc.NewServer(opts...)
	srv.RegisterService(g.serviceDesc(), newService(s))
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	return srv.Serve(ln)
}

// SetPolicy makes p the agent's policy for calls from now on (those
// running keep the decision they got). Over TLS an agent needs one.
func (s *Server) SetPolicy(p *policy.Policy) { s.policy.Store(p) }

// ServeSocket serves on the Unix socket at path (see unixsock.Listen: mode
// 0600, peers of this user or root only) until ctx ends.
func (s *Server) ServeSocket(ctx context.Context, path string) error {
	ln, err := unixsock.Listen(path)
	if err != nil {
		return fmt.Errorf("agent on %s: %w", s.Host, err)
	}
	return s.Serve(ctx, ln)
}

// ServeTLS serves on ln over TLS 1.3 with mutual authentication (config
// from pki.Server) until ctx ends. Every call is authorised by the agent's
// policy (SetPolicy), which it needs. Connections are bounded as
// connGuard says: strangers in their handshake cannot take the room of
// controllers that have passed theirs.
func (s *Server) ServeTLS(ctx context.Context, ln net.Listener, config *tls.Config) error {
	if s.policy.Load() == nil {
		return fmt.Errorf("agent on %s: serving over TLS needs a policy", s.Host)
	}
	g := newConnGuard(s)
	return s.Serve(ctx, &guardedListener{Listener: ln, g: g}, grpc.Creds(guardedCreds{TransportCredentials: credentials.NewTLS(config), g: g}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: agentapi.PingEvery, Timeout: agentapi.PingWait}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: agentapi.PingEvery, PermitWithoutStream: true}),
		grpc.ConnectionTimeout(g.wait), grpc.MaxConcurrentStreams(maxCallsPerConnection))
}

// callGrace is how long a call may outlive the test it runs (connecting,
// making files, reporting), beyond the agent's duration limit.
const callGrace = 5 * time.Minute

// unbounded are the calls that run no test: they take no slot.
var unbounded = map[string]bool{
	agentpb.Agent_Hello_FullMethodName:        true,
	agentpb.Agent_StopWorkload_FullMethodName: true,
	// Read-only, paced and audited: wanlab serve polls it however busy
	// the agent is.
	agentpb.Agent_Interfaces_FullMethodName: true,
}

// admit takes a test slot for an authorised call, or refuses it when the
// agent runs as many tests as its limit allows; the slot's release ends
// with the call.
func (s guard) admit(method string) (release func(), err error) {
	if unbounded[method] {
		return func() {}, nil
	}
	select {
	case s.tests <- struct{}{}:
		return func() { <-s.tests }, nil
	default:
		return nil, agentapi.TooManyTests("agent on %s is busy: it runs %d tests at once, its limit (try again later)", s.Host, s.Limits.MaxTests)
	}
}

// bound gives a call its deadline: no test outlives its duration limit.
func (s guard) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := limits.Add(s.limitsOf(ctx).MaxDuration, callGrace)
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// admitUnary authorises a unary call, whose request firstMessage has read.
func (s guard) admitUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, d, err := s.authorize(ctx, info.FullMethod, req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	resp, err := handler(ctx, req)
	var moved int64
	if err == nil {
		moved = s.stamp(d, resp)
	}
	err = s.nameRule(d, err)
	s.finish(d, info.FullMethod, addBytes(moved, d.failed.Load()), err)
	return resp, err
}

// admitStream reads a streaming call's request (in time: firstMessage),
// authorises it, and only then runs it.
func (s guard) admitStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	markAudited(ctx)
	req := requestOf(info.FullMethod)
	if req == nil {
		return s.refuseEarly(ctx, callerOf(ctx), info.FullMethod, s.unknownMethod(nil, ss))
	}
	if err := s.firstMessage(ctx, info.FullMethod, ss.RecvMsg, req); err != nil {
		return err
	}
	actx, d, err := s.authorize(ctx, info.FullMethod, req)
	if err != nil {
		return err
	}
	g := &guardedStream{ServerStream: ss, s: s, d: d, first: req}
	g.ctx, g.cancel = s.bound(actx)
	metered := g.meter(time.Now(), meterEvery)
	err = s.nameRule(g.d, handler(srv, g))
	g.cancel()
	<-metered
	ended := err
	if g.spent {
		ended = fmt.Errorf("stopped after %d bytes: its identity's bytes_per_day (%d) are spent", g.live, g.d.rule.BytesPerDay)
	} else if err != nil && ss.Context().Err() != nil {
		// A listener's call ends when its controller has what it needs.
		ended = fmt.Errorf("the controller ended the call, or went away: %w", context.Cause(ss.Context()))
	}
	s.finish(g.d, info.FullMethod, addBytes(g.moved, g.d.failed.Load()), ended)
	return err
}

// guardedStream is an authorised server stream: its request, read and
// authorised already, is handed to the handler as it reads it; its
// context carries the decision and the call's deadline; its results are
// labelled and counted as they are sent.
type guardedStream struct {
	grpc.ServerStream
	s      guard
	ctx    context.Context
	cancel context.CancelFunc
	d      *decision
	first  proto.Message // the request, until the handler reads it
	moved  int64
	// mu guards what follows: live counts the bytes its intervals say it
	// has moved up to known; spent says it was stopped for its identity's
	// bytes of the day; rate (bytes/s, 0: not metered) is what a test may
	// have moved since known as far as the agent is concerned (see meter).
	mu    sync.Mutex
	live  int64
	known time.Time
	rate  float64
	spent bool
}

func (g *guardedStream) Context() context.Context { return g.ctx }

func (g *guardedStream) RecvMsg(m any) error {
	if g.first == nil {
		return g.ServerStream.RecvMsg(m)
	}
	dst, ok := m.(proto.Message)
	if !ok || dst.ProtoReflect().Descriptor() != g.first.ProtoReflect().Descriptor() {
		return status.Errorf(codes.Internal, "agent on %s: the handler reads a %T, the request is a %T", g.s.Host, m, g.first)
	}
	proto.Reset(dst)
	proto.Merge(dst, g.first)
	g.first = nil
	return nil
}

// SendMsg counts a throughput test's bytes as its intervals report them:
// past its reservation the test takes more of its identity's day, and it
// is stopped when the day has no more.
func (g *guardedStream) SendMsg(m any) error {
	if iv := intervalOf(m); iv != nil {
		g.countInterval(iv, time.Now())
	}
	g.moved += g.s.stamp(g.d, m)
	return g.ServerStream.SendMsg(m)
}

// refusal turns a spec's error into the agent's refusal, naming the limit:
// one over a limit, or for want of room (kind.ErrNoRoom), is
// ResourceExhausted; any other InvalidArgument.
func (s *Server) refusal(what string, err error) error {
	code := codes.InvalidArgument
	if errors.Is(err, limits.ErrLimit) || errors.Is(err, kind.ErrNoRoom) {
		code = codes.ResourceExhausted
	}
	return status.Errorf(code, "agent on %s refuses %s: %v", s.Host, what, err)
}

// testAddresses are the test addresses the agent names, IPv4 (or its
// only one) and IPv6: a dual-stack agent's two, else Test's address,
// which is also the IPv6 one when it is IPv6.
func (s hostCalls) testAddresses() (addr, addr6 string) {
	if s.TestAddress != "" || s.TestAddress6 != "" {
		return s.TestAddress, s.TestAddress6
	}
	if a, err := netip.ParseAddr(s.Test.Addr); err == nil && !a.Unmap().Is4() {
		return s.Test.Addr, s.Test.Addr
	}
	return s.Test.Addr, ""
}

// Hello says who the agent is, what it accepts, and, over TLS, who the
// caller is to it and what its policy grants the caller.
func (s hostCalls) Hello(ctx context.Context, req *agentpb.HelloRequest) (*agentpb.HelloReply, error) {
	reply := &agentpb.HelloReply{
		ApiVersion: agentapi.APIVersion, Host: s.Host, WanlabVersion: s.Version, BootId: bootID(),
		Limits: limitsToPB(s.Limits), Clock: readClock(),
	}
	reply.TestAddress, reply.TestAddress6 = s.testAddresses()
	d, _ := ctx.Value(decisionKey{}).(*decision)
	if d == nil || len(d.who.ids) == 0 {
		return reply, nil
	}
	reply.Identity = d.who.String()
	if d.rule != nil {
		g := &agentpb.Grant{Rule: d.rule.Name, Kinds: d.rule.Kinds, Limits: limitsToPB(d.rule.Limits),
			MaxTests: uint32(d.rule.Limits.MaxTests), BytesPerDay: uint64(d.rule.BytesPerDay), Share: d.rule.Share}
		for _, p := range d.rule.Peers {
			g.Peers = append(g.Peers, p.String())
		}
		for _, p := range d.rule.Targets {
			g.Targets = append(g.Targets, p.String())
		}
		s.host.mu.Lock()
		if u := s.host.usage[d.who.key()]; u != nil && u.day == time.Now().UTC().Format(time.DateOnly) {
			g.BytesToday = uint64(u.bytes)
		}
		s.host.mu.Unlock()
		reply.Grant = g
	}
	return reply, nil
}

func limitsToPB(l limits.Limits) *agentpb.Limits {
	return &agentpb.Limits{MaxDurationNs: int64(l.MaxDuration), MaxStreams: uint32(l.MaxStreams), MaxRateBps: uint64(l.MaxRate), MaxBytes: uint64(l.MaxBytes)}
}

// Receive listens for one throughput test and streams what arrives.
func (s throughputCalls) Receive(req *agentpb.ReceiveRequest, stream agentpb.Agent_ReceiveServer) error {
	spec, release, err := s.spec(stream.Context(), req.GetSpec())
	if err != nil {
		return err
	}
	defer release()
	r, err := throughput.Listen(spec, s.Test)
	if err != nil {
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	if err := stream.Send(&agentpb.ThroughputEvent{Event: &agentpb.ThroughputEvent_Listening{Listening: s.listening(stream.Context(), r.Port, r.Token)}}); err != nil {
		return err
	}
	cpu := s.startCPU()
	sum := r.Run(stream.Context(), func(iv throughput.Interval) { stream.Send(intervalEvent(iv)) })
	return stream.Send(s.summaryEvent(sum, cpu))
}

// Send runs the sending side of a throughput test.
func (s throughputCalls) Send(req *agentpb.SendRequest, stream agentpb.Agent_SendServer) error {
	spec, release, err := s.spec(stream.Context(), req.GetSpec())
	if err != nil {
		return err
	}
	defer release()
	tok, err := token.Parse(req.GetToken())
	if err != nil {
		return s.refusal("the test", err)
	}
	cpu := s.startCPU()
	sum := throughput.Send(stream.Context(), spec, req.GetAddress(), tok, func(iv throughput.Interval) { stream.Send(intervalEvent(iv)) })
	return stream.Send(s.summaryEvent(sum, cpu))
}

// spec converts and checks a request's spec and reserves its streams; a
// refusal names what was wrong.
func (s throughputCalls) spec(ctx context.Context, p *agentpb.ThroughputSpec) (throughput.Spec, func(), error) {
	spec := throughput.SpecFromPB(p)
	if err := spec.Validate(s.limitsOf(ctx)); err != nil {
		return spec, nil, s.refusal("the test", err)
	}
	release, err := s.streams.take(s.Host, spec.Streams)
	return spec, release, err
}

// cpuMark is where CPU use stood when a test began.
type cpuMark struct {
	at          time.Time
	self, group time.Duration
}

func (s *Server) startCPU() cpuMark {
	m := cpuMark{at: time.Now(), self: processCPU(), group: -1}
	if s.HostCPU != nil {
		if u, err := s.HostCPU(); err == nil {
			m.group = u
		}
	}
	return m
}

func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuSince returns the CPU used since m in percent of one core: by the agent
// process, and by the host's cgroup (-1 when unknown).
func (s *Server) cpuSince(m cpuMark) (agentPct, hostPct float64) {
	wall := time.Since(m.at).Seconds()
	agentPct, hostPct = 100*(processCPU()-m.self).Seconds()/wall, -1
	if m.group >= 0 {
		if u, err := s.HostCPU(); err == nil {
			hostPct = 100 * (u - m.group).Seconds() / wall
		}
	}
	return agentPct, hostPct
}

func (s throughputCalls) summaryEvent(sum throughput.Summary, cpu cpuMark) *agentpb.ThroughputEvent {
	p := &agentpb.Summary{SecondsNs: int64(sum.Elapsed), Partial: sum.Partial}
	p.AgentCpuPercent, p.HostCpuPercent = s.cpuSince(cpu)
	if sum.Err != nil {
		p.Error = sum.Err.Error()
	}
	for _, st := range sum.Streams {
		p.Streams = append(p.Streams, throughput.SampleToPB(st))
	}
	return &agentpb.ThroughputEvent{Event: &agentpb.ThroughputEvent_Summary{Summary: p}}
}

func intervalEvent(iv throughput.Interval) *agentpb.ThroughputEvent {
	p := &agentpb.Interval{StartNs: int64(iv.Start), EndNs: int64(iv.End)}
	for _, st := range iv.Streams {
		p.Streams = append(p.Streams, throughput.SampleToPB(st))
	}
	return &agentpb.ThroughputEvent{Event: &agentpb.ThroughputEvent_Interval{Interval: p}}
}

// Interfaces reports the host's interfaces' counters.
func (s hostCalls) Interfaces(ctx context.Context, req *agentpb.InterfacesRequest) (*agentpb.InterfacesReply, error) {
	devs, err := proc.NetDevs()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "agent on %s: reading the interfaces' counters: %v", s.Host, err)
	}
	reply := &agentpb.InterfacesReply{AtUnixNs: time.Now().UnixNano()}
	sysfs := sysfsIsOurs()
	for _, d := range devs {
		c := &agentpb.InterfaceCounters{Name: d.Name, RxBytes: d.RxBytes, TxBytes: d.TxBytes, RxPackets: d.RxPackets, TxPackets: d.TxPackets}
		if sysfs {
			c.SpeedBps = linkSpeed(d.Name)
		}
		reply.Interfaces = append(reply.Interfaces, c)
	}
	return reply, nil
}

// sysfsIsOurs says whether /sys/class/net shows this process's network
// namespace: sysfs shows the namespace of whoever mounted it, so an agent
// that entered a test-bed host's namespace reads no speeds there.
func sysfsIsOurs() bool {
	ours, err1 := os.Readlink("/proc/self/ns/net")
	init, err2 := os.Readlink("/proc/1/ns/net")
	return err1 == nil && err2 == nil && ours == init
}

// linkSpeed is an interface's speed in bit/s, 0 where the kernel has none.
func linkSpeed(name string) uint64 {
	if strings.ContainsAny(name, "/.") {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/sys/class/net", name, "speed"))
	if err != nil {
		return 0
	}
	mbit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || mbit <= 0 {
		return 0
	}
	return uint64(mbit) * 1e6
}
