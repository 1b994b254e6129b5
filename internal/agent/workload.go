package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
	"github.com/wanlab/wanlab/internal/workload/tcpwatch"
	"github.com/wanlab/wanlab/internal/workload/token"
	"github.com/wanlab/wanlab/internal/workload/train"
)

// Workload roles and the spec type each takes as JSON.
const (
	RoleEventServer   = "eventdb-server"   // eventdb.ServerSpec
	RoleEventClient   = "eventdb-client"   // eventdb.ClientSpec
	RoleFarmMaster    = "taskfarm-master"  // taskfarm.MasterSpec
	RoleFarmWorkers   = "taskfarm-workers" // taskfarm.WorkerSpec
	RoleMeshNode      = "mesh-node"        // MeshNodeSpec
	RoleWatch         = "tcp-watch"        // tcpwatch.Spec
	RoleTrainReceiver = "train-receiver"   // train.ReceiverSpec
	RoleTrainSender   = "train-sender"     // train.SenderSpec
)

// MeshNodeSpec is a mesh node: the port it serves on, whether its
// transfers are disk to disk, and its loop.
type MeshNodeSpec struct {
	Port int  `json:"port"`
	Disk bool `json:"disk"`
	mesh.NodeSpec
}

// Validate checks the node against itself and the limits.
func (s MeshNodeSpec) Validate(l limits.Limits) error {
	if s.Port < 0 || s.Port > 65535 {
		return fmt.Errorf("port %d: give 0 (any) to 65535", s.Port)
	}
	return s.NodeSpec.Validate(l)
}

// stoppers holds the serving roles StopWorkload can end, by id.
type stoppers struct {
	mu sync.Mutex
	m  map[string]context.CancelFunc
}

// add registers a serving role's stop under its id; an id in use is refused.
func (s *stoppers) add(id string, stop context.CancelFunc) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]context.CancelFunc{}
	}
	if _, ok := s.m[id]; ok {
		return nil, fmt.Errorf("a workload with id %q is already running", id)
	}
	s.m[id] = stop
	return func() {
		s.mu.Lock()
		delete(s.m, id)
		s.mu.Unlock()
	}, nil
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

// servingKey names a serving role by its caller and id: a controller
// stops only the roles it started.
func servingKey(ctx context.Context, id string) string { return callerOf(ctx).key() + "/" + id }

// meshFolder names a disk mesh node's folder in the data folder after its
// caller and id: nodes of two identities that share a mesh id have a folder
// each, so neither writes into nor removes the other's, and the id the
// caller chose never becomes a path.
func meshFolder(ctx context.Context, id string) string {
	sum := sha256.Sum256([]byte(servingKey(ctx, id)))
	return "mesh-" + hex.EncodeToString(sum[:16])
}

// StopWorkload ends a serving role.
func (s *Server) StopWorkload(ctx context.Context, req *agentpb.StopWorkloadRequest) (*agentpb.StopWorkloadReply, error) {
	return &agentpb.StopWorkloadReply{Stopped: s.serving.stop(servingKey(ctx, req.GetId()))}, nil
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

// data sends a batch of a streaming role's data.
func (w *workloadStream) data(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.send(&agentpb.WorkloadEvent{Event: &agentpb.WorkloadEvent_DataJson{DataJson: b}})
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

// Workload runs one role of an application workload. Its id, chosen by the
// controller, names it for StopWorkload and nothing else: it must be of
// the safe alphabet of file names, and it never becomes a path.
func (s *Server) Workload(req *agentpb.WorkloadRequest, stream agentpb.Agent_WorkloadServer) error {
	w := &workloadStream{stream: stream}
	ctx := stream.Context()
	lim := s.limitsOf(ctx)
	refuse := func(err error) error { return s.refusal(req.GetRole(), err) }
	if err := datadir.ValidName(req.GetId()); err != nil {
		return refuse(fmt.Errorf("workload id: %w", err))
	}
	decodeSpec := func(v interface{ Validate(limits.Limits) error }) error {
		dec := json.NewDecoder(bytes.NewReader(req.GetSpecJson()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return refuse(fmt.Errorf("reading its spec: %w", err))
		}
		if err := v.Validate(lim); err != nil {
			return refuse(err)
		}
		return nil
	}
	decode := func(v interface{ Validate(limits.Limits) error }) error {
		if err := decodeSpec(v); err != nil {
			return err
		}
		// Every role that opens connections does so with the test's
		// token, which the controller draws for the step: a role without
		// one would serve or greet anyone who guessed the zero token.
		var t struct {
			Token token.Token `json:"token"`
		}
		if json.Unmarshal(req.GetSpecJson(), &t) != nil || t.Token.IsZero() {
			return refuse(errors.New("its spec carries no test token"))
		}
		return nil
	}
	// serve runs a serving role until StopWorkload or the call ends.
	serving := func() (context.Context, func(), error) {
		sctx, stop := context.WithCancel(ctx)
		remove, err := s.serving.add(servingKey(ctx, req.GetId()), stop)
		if err != nil {
			stop()
			return nil, nil, refuse(err)
		}
		return sctx, func() { remove(); stop() }, nil
	}
	switch req.GetRole() {
	case RoleEventServer:
		var spec eventdb.ServerSpec
		if err := decode(&spec); err != nil {
			return err
		}
		sctx, done, err := serving()
		if err != nil {
			return err
		}
		defer done()
		srv, err := eventdb.Listen(spec, lim, s.Test)
		if err != nil {
			return refuse(err)
		}
		if err := w.listening(srv.Port()); err != nil {
			return err
		}
		return w.summary(srv.Serve(sctx))
	case RoleEventClient:
		var spec eventdb.ClientSpec
		if err := decode(&spec); err != nil {
			return err
		}
		eventdb.RunClient(ctx, spec, lim, s.Host, w.job)
		return w.summary(struct{}{})
	case RoleFarmMaster:
		var spec taskfarm.MasterSpec
		if err := decode(&spec); err != nil {
			return err
		}
		m, err := taskfarm.Listen(spec, lim, s.Test)
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
		return w.summary(taskfarm.RunWorkers(ctx, spec, lim.MaxDuration))
	case RoleMeshNode:
		var spec MeshNodeSpec
		if err := decode(&spec); err != nil {
			return err
		}
		spec.Host = s.Host
		release, err := s.streams.take(s.Host, spec.Streams)
		if err != nil {
			return err
		}
		defer release()
		sctx, done, err := serving()
		if err != nil {
			return err
		}
		defer done()
		var files *mesh.Files
		if spec.Disk {
			folder := meshFolder(ctx, req.GetId())
			dir, err := s.Data.Sub(folder)
			if err != nil {
				return status.Errorf(codes.Internal, "agent on %s: %v", s.Host, err)
			}
			defer func() { dir.Close(); s.Data.Remove(folder) }()
			if files, err = mesh.OpenFiles(ctx, dir.Root(), spec.MaxStreamLength(), s.DiskCapped); err != nil {
				return status.Errorf(codes.ResourceExhausted, "agent on %s: %v", s.Host, err)
			}
			defer files.Close()
		}
		srv, err := mesh.Listen(spec.Port, s.Test, spec.Token, spec.MaxStreamLength())
		if err != nil {
			return refuse(err)
		}
		srv.Files = files
		srv.MaxConnections = lim.MaxConnections
		srv.Expect = spec.Connections()
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
	case RoleTrainReceiver:
		var spec train.ReceiverSpec
		if err := decode(&spec); err != nil {
			return err
		}
		r, err := train.Listen(spec, s.Test)
		if err != nil {
			return refuse(err)
		}
		if err := w.listening(r.Port()); err != nil {
			return err
		}
		got, err := r.Receive(ctx)
		if err != nil {
			countFailed(ctx, got.Bytes)
			return refuse(err)
		}
		return w.summary(got)
	case RoleTrainSender:
		var spec train.SenderSpec
		if err := decode(&spec); err != nil {
			return err
		}
		sent, err := train.Send(ctx, spec)
		if err != nil {
			// What it sent before it failed, or was stopped, counts.
			countFailed(ctx, sent.Bytes)
			return refuse(err)
		}
		return w.summary(sent)
	case RoleWatch:
		// A watch opens no connection: it reads the host's own.
		var spec tcpwatch.Spec
		if err := decodeSpec(&spec); err != nil {
			return err
		}
		sctx, done, err := serving()
		if err != nil {
			return err
		}
		defer done()
		sum, err := tcpwatch.Run(sctx, spec, func(b tcpwatch.Batch) error { return w.data(b) })
		if err != nil && sum.Ticks == 0 {
			return refuse(err)
		}
		return w.summary(sum)
	}
	return status.Errorf(codes.InvalidArgument, "agent on %s: unknown workload role %q", s.Host, req.GetRole())
}

// declaredTrainBytes is what a train sender's spec asks it to send, for
// the guard's check of the identity's bytes per day before it sends (a
// spec the role then refuses declares what it says).
func declaredTrainBytes(specJSON []byte) int64 {
	var spec struct {
		Streams []struct {
			Count int64 `json:"count"`
			Size  int64 `json:"size"`
		} `json:"streams"`
	}
	if json.Unmarshal(specJSON, &spec) != nil {
		return 0
	}
	var n int64
	for _, st := range spec.Streams {
		// Each term is at most 2^52 and the sum is capped at 2^62 at
		// every step: it cannot overflow, whatever the request says.
		n = min(n+min(max(st.Count, 0), 1<<26)*min(max(st.Size, 0), 1<<26), 1<<62)
	}
	return n
}

// trainBytes is what a bandwidth role's summary (train.Sent or
// train.Received) says it moved, for its audited end and the identity's
// bytes per day.
func trainBytes(summaryJSON []byte) int64 {
	var sum struct {
		Bytes int64 `json:"bytes"`
	}
	if json.Unmarshal(summaryJSON, &sum) != nil {
		return 0
	}
	return min(max(sum.Bytes, 0), 1<<62)
}
