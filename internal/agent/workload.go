package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
)

// Workload roles and the spec type each takes as JSON.
const (
	RoleEventServer = "eventdb-server"   // eventdb.ServerSpec
	RoleEventClient = "eventdb-client"   // eventdb.ClientSpec
	RoleFarmMaster  = "taskfarm-master"  // taskfarm.MasterSpec
	RoleFarmWorkers = "taskfarm-workers" // taskfarm.WorkerSpec
	RoleMeshNode    = "mesh-node"        // MeshNodeSpec
)

// MeshNodeSpec is a mesh node: the port it serves on, whether its
// transfers are disk to disk, and its loop.
type MeshNodeSpec struct {
	Port int  `json:"port"`
	Disk bool `json:"disk"`
	mesh.NodeSpec
}

// stoppers holds the serving roles StopWorkload can end, by id.
type stoppers struct {
	mu sync.Mutex
	m  map[string]context.CancelFunc
}

func (s *stoppers) add(id string, stop context.CancelFunc) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]context.CancelFunc{}
	}
	s.m[id] = stop
	return func() {
		s.mu.Lock()
		delete(s.m, id)
		s.mu.Unlock()
	}
}

func (s *stoppers) stop(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	stop, ok := s.m[id]
	if ok {
		stop()
	}
	return ok
}

// StopWorkload ends a serving role.
func (s *Server) StopWorkload(ctx context.Context, req *agentpb.StopWorkloadRequest) (*agentpb.StopWorkloadReply, error) {
	return &agentpb.StopWorkloadReply{Stopped: s.serving.stop(req.GetId())}, nil
}

// workloadStream sends a role's events; gRPC streams take one sender at a time.
type workloadStream struct {
	mu     sync.Mutex
	stream agentpb.Agent_WorkloadServer
}

func (w *workloadStream) send(e *agentpb.WorkloadEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stream.Send(e)
}

func (w *workloadStream) listening(port int) error {
	return w.send(&agentpb.WorkloadEvent{Event: &agentpb.WorkloadEvent_Listening{Listening: &agentpb.Listening{Port: uint32(port)}}})
}

func (w *workloadStream) job(r job.Record) {
	w.send(&agentpb.WorkloadEvent{Event: &agentpb.WorkloadEvent_Job{Job: JobToPB(r)}})
}

func (w *workloadStream) summary(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.send(&agentpb.WorkloadEvent{Event: &agentpb.WorkloadEvent_SummaryJson{SummaryJson: b}})
}

// JobToPB converts a job record to its wire form.
func JobToPB(r job.Record) *agentpb.Job {
	return &agentpb.Job{Id: uint32(r.ID), Subject: r.Subject, StartUnixNs: r.Start.UnixNano(), EndUnixNs: r.End.UnixNano(),
		Bytes: uint64(r.Bytes), Status: r.Status, Reason: r.Reason, TcpRttMs: r.TCPRTTms, TcpRetransmits: r.TCPRetransmits}
}

// Workload runs one role of an application workload.
func (s *Server) Workload(req *agentpb.WorkloadRequest, stream agentpb.Agent_WorkloadServer) error {
	w := &workloadStream{stream: stream}
	ctx := stream.Context()
	refuse := func(err error) error {
		return status.Errorf(codes.InvalidArgument, "agent on %s refuses %s: %v", s.Host, req.GetRole(), err)
	}
	decode := func(v any) error {
		if err := json.Unmarshal(req.GetSpecJson(), v); err != nil {
			return refuse(fmt.Errorf("reading its spec: %w", err))
		}
		return nil
	}
	// serve runs a serving role until StopWorkload or the call ends.
	serving := func() (context.Context, func()) {
		sctx, stop := context.WithCancel(ctx)
		remove := s.serving.add(req.GetId(), stop)
		return sctx, func() { remove(); stop() }
	}
	switch req.GetRole() {
	case RoleEventServer:
		var spec eventdb.ServerSpec
		if err := decode(&spec); err != nil {
			return err
		}
		srv, err := eventdb.Listen(spec)
		if err != nil {
			return refuse(err)
		}
		sctx, done := serving()
		defer done()
		if err := w.listening(srv.Port()); err != nil {
			return err
		}
		return w.summary(srv.Serve(sctx))
	case RoleEventClient:
		var spec eventdb.ClientSpec
		if err := decode(&spec); err != nil {
			return err
		}
		if err := spec.Validate(); err != nil {
			return refuse(err)
		}
		eventdb.RunClient(ctx, spec, s.Host, w.job)
		return w.summary(struct{}{})
	case RoleFarmMaster:
		var spec taskfarm.MasterSpec
		if err := decode(&spec); err != nil {
			return err
		}
		m, err := taskfarm.Listen(spec)
		if err != nil {
			return refuse(err)
		}
		if err := w.listening(m.Port()); err != nil {
			return err
		}
		return w.summary(m.Run(ctx, w.job))
	case RoleFarmWorkers:
		var spec taskfarm.WorkerSpec
		if err := decode(&spec); err != nil {
			return err
		}
		return w.summary(taskfarm.RunWorkers(ctx, spec))
	case RoleMeshNode:
		var spec MeshNodeSpec
		if err := decode(&spec); err != nil {
			return err
		}
		spec.Host = s.Host
		if err := spec.Validate(); err != nil {
			return refuse(err)
		}
		if uint32(spec.Streams) > uint32(s.Limits.MaxStreams) && s.Limits.MaxStreams > 0 {
			return status.Errorf(codes.ResourceExhausted, "agent on %s refuses %d streams (its limit is %d)", s.Host, spec.Streams, s.Limits.MaxStreams)
		}
		var files *mesh.Files
		if spec.Disk {
			largest := slices.Max(spec.Sizes)/int64(spec.Streams) + 1
			var err error
			if files, err = mesh.OpenFiles(filepath.Join(os.TempDir(), "mesh-"+req.GetId()), largest, s.DiskCapped); err != nil {
				return status.Errorf(codes.ResourceExhausted, "agent on %s: %v", s.Host, err)
			}
			defer files.Close()
		}
		srv, err := mesh.Listen(spec.Port)
		if err != nil {
			return refuse(err)
		}
		srv.Files = files
		sctx, done := serving()
		defer done()
		served := make(chan struct{})
		go func() { srv.Serve(sctx); close(served) }()
		if err := w.listening(srv.Port()); err != nil {
			return err
		}
		sum, err := mesh.Loop(ctx, spec.NodeSpec, files, w.job)
		if err != nil {
			return refuse(err)
		}
		if err := w.summary(sum); err != nil {
			return err
		}
		<-served
		return nil
	}
	return status.Errorf(codes.InvalidArgument, "agent on %s: unknown workload role %q", s.Host, req.GetRole())
}
