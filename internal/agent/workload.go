package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kinds"
	"github.com/wanlab/wanlab/internal/workload/tcpwatch"
	"github.com/wanlab/wanlab/internal/workload/train"
)

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

// StopWorkload ends a serving role.
func (s workloadCalls) StopWorkload(ctx context.Context, req *agentpb.StopWorkloadRequest) (*agentpb.StopWorkloadReply, error) {
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
	w.send(&agentpb.WorkloadEvent{Event: &agentpb.WorkloadEvent_Job{Job: job.RecordToPB(r)}})
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

// Workload runs one role of an application workload. Its id, chosen by the
// controller, names it for StopWorkload and nothing else: it must be of
// the safe alphabet of file names, and it never becomes a path.
func (s workloadCalls) Workload(req *agentpb.WorkloadRequest, stream agentpb.Agent_WorkloadServer) error {
	w := &workloadStream{stream: stream}
	ctx := stream.Context()
	lim := s.limitsOf(ctx)
	refuse := func(err error) error { return s.refusal(req.GetRole(), err) }
	if err := datadir.ValidName(req.GetId()); err != nil {
		return refuse(fmt.Errorf("workload id: %w", err))
	}
	if k, role, ok := kinds.Role(req.GetRole()); ok {
		return s.runRole(ctx, w, req, k, role)
	}
	decodeSpec := func(v interface{ Validate(limits.Limits) error }) error {
		if err := decodeRoleSpec(req.GetSpecJson(), v, lim, false); err != nil {
			return refuse(err)
		}
		return nil
	}
	decode := func(v interface{ Validate(limits.Limits) error }) error {
		if err := decodeRoleSpec(req.GetSpecJson(), v, lim, true); err != nil {
			return refuse(err)
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
	// trainEnded sends a train role's summary; or, when it failed, refuses
	// the call with the bytes it moved before it failed, or was stopped,
	// counted.
	trainEnded := func(bytes int64, summary any, err error) error {
		if err != nil {
			countFailed(ctx, bytes)
			return refuse(err)
		}
		return w.summary(summary)
	}
	switch req.GetRole() {
	case agentapi.RoleTrainReceiver:
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
		return trainEnded(got.Bytes, got, err)
	case agentapi.RoleTrainSender:
		var spec train.SenderSpec
		if err := decode(&spec); err != nil {
			return err
		}
		sent, err := train.Send(ctx, spec)
		return trainEnded(sent.Bytes, sent, err)
	case agentapi.RoleWatch:
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
