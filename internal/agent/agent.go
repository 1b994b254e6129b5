// Package agent is the daemon that runs measurement workloads on one host for
// a controller, and the controller's client for it. They speak gRPC
// (package wanlab.agent.v1) over a Unix socket in emulated test-beds, so that
// control traffic never crosses an emulated link.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/cgroup"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// APIVersion is the version of the agent API this build speaks.
const APIVersion = 1

// Server runs workloads for controllers. One server serves any number of
// tests at once, each its own call.
type Server struct {
	agentpb.UnimplementedAgentServer
	Host    string
	Version string
	Limits  throughput.Limits
	// DiskCapped says the host's disk has a rate cap (a test-bed host's
	// disk:), so that workloads read and write the disk, not the page cache.
	DiskCapped bool
	cg         *cgroup.Manager
	cgGroup    string
	serving    stoppers
}

// Serve listens on the Unix socket at path and serves until ctx ends.
func (s *Server) Serve(ctx context.Context, path string) error {
	if cg, err := cgroup.Detect(); err == nil && cg.Version != cgroup.None {
		if g, err := cg.Own(); err == nil {
			s.cg, s.cgGroup = cg, g
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	os.Remove(path) // a socket left by a killed agent
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("agent on %s: listening on %s: %w", s.Host, path, err)
	}
	srv := grpc.NewServer()
	agentpb.RegisterAgentServer(srv, s)
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	return srv.Serve(ln)
}

// Hello says who the agent is and what it accepts.
func (s *Server) Hello(ctx context.Context, req *agentpb.HelloRequest) (*agentpb.HelloReply, error) {
	return &agentpb.HelloReply{
		ApiVersion: APIVersion, Host: s.Host, WanlabVersion: s.Version, BootId: bootID(),
		Limits: &agentpb.Limits{
			MaxDurationNs: int64(s.Limits.MaxDuration), MaxStreams: uint32(s.Limits.MaxStreams),
			MaxRateBps: uint64(s.Limits.MaxRate), MaxBytes: uint64(s.Limits.MaxBytes),
		},
	}, nil
}

// Receive listens for one throughput test and streams what arrives.
func (s *Server) Receive(req *agentpb.ReceiveRequest, stream agentpb.Agent_ReceiveServer) error {
	spec, err := s.spec(req.GetSpec())
	if err != nil {
		return err
	}
	r, err := throughput.Listen(spec)
	if err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	if err := stream.Send(&agentpb.ThroughputEvent{Event: &agentpb.ThroughputEvent_Listening{Listening: &agentpb.Listening{Port: uint32(r.Port)}}}); err != nil {
		return err
	}
	cpu := s.startCPU()
	sum := r.Run(stream.Context(), func(iv throughput.Interval) { stream.Send(intervalEvent(iv)) })
	return stream.Send(s.summaryEvent(sum, cpu))
}

// Send runs the sending side of a throughput test.
func (s *Server) Send(req *agentpb.SendRequest, stream agentpb.Agent_SendServer) error {
	spec, err := s.spec(req.GetSpec())
	if err != nil {
		return err
	}
	cpu := s.startCPU()
	sum := throughput.Send(stream.Context(), spec, req.GetAddress(), func(iv throughput.Interval) { stream.Send(intervalEvent(iv)) })
	return stream.Send(s.summaryEvent(sum, cpu))
}

// spec converts and checks a request's spec; a refusal names what was wrong.
func (s *Server) spec(p *agentpb.ThroughputSpec) (throughput.Spec, error) {
	spec := SpecFromPB(p)
	if err := spec.Validate(s.Limits); err != nil {
		code := codes.InvalidArgument
		if errors.Is(err, throughput.ErrLimit) {
			code = codes.ResourceExhausted
		}
		return spec, status.Errorf(code, "agent on %s refuses the test: %v", s.Host, err)
	}
	return spec, nil
}

// cpuMark is where CPU use stood when a test began.
type cpuMark struct {
	at          time.Time
	self, group time.Duration
}

func (s *Server) startCPU() cpuMark {
	m := cpuMark{at: time.Now(), self: processCPU(), group: -1}
	if s.cg != nil {
		if u, err := s.cg.Usage(s.cgGroup); err == nil {
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
		if u, err := s.cg.Usage(s.cgGroup); err == nil {
			hostPct = 100 * (u - m.group).Seconds() / wall
		}
	}
	return agentPct, hostPct
}

func (s *Server) summaryEvent(sum throughput.Summary, cpu cpuMark) *agentpb.ThroughputEvent {
	p := &agentpb.Summary{SecondsNs: int64(sum.Elapsed), Partial: sum.Partial}
	p.AgentCpuPercent, p.HostCpuPercent = s.cpuSince(cpu)
	if sum.Err != nil {
		p.Error = sum.Err.Error()
	}
	for _, st := range sum.Streams {
		p.Streams = append(p.Streams, SampleToPB(st))
	}
	return &agentpb.ThroughputEvent{Event: &agentpb.ThroughputEvent_Summary{Summary: p}}
}

func intervalEvent(iv throughput.Interval) *agentpb.ThroughputEvent {
	p := &agentpb.Interval{StartNs: int64(iv.Start), EndNs: int64(iv.End)}
	for _, st := range iv.Streams {
		p.Streams = append(p.Streams, SampleToPB(st))
	}
	return &agentpb.ThroughputEvent{Event: &agentpb.ThroughputEvent_Interval{Interval: p}}
}

// Client is a controller's connection to one agent.
type Client struct {
	Host string
	// BootID is the agent's kernel boot id: equal ids share a clock.
	BootID string
	agentpb.AgentClient
	conn *grpc.ClientConn
}

// Dial connects to the agent listening on the Unix socket at path and checks
// that it answers and speaks this API version.
func Dial(ctx context.Context, host, path string) (*Client, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no agent on host %s (%s): %w", host, path, err)
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("agent on host %s: %w", host, err)
	}
	c := &Client{Host: host, AgentClient: agentpb.NewAgentClient(conn), conn: conn}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	hello, err := c.Hello(hctx, &agentpb.HelloRequest{ApiVersion: APIVersion})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("the agent on host %s does not answer: %w", host, err)
	}
	c.BootID = hello.BootId
	if hello.ApiVersion != APIVersion {
		conn.Close()
		return nil, fmt.Errorf("the agent on host %s speaks API v%d, this wanlab v%d", host, hello.ApiVersion, APIVersion)
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
