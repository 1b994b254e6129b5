package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// Before a call is authorised it holds nothing but its stream: its
// request must arrive within firstWait of its start (a call's request is
// read, and the caller authorised, before a test slot or stream is
// reserved), and one identity may have at most maxPending calls whose
// request has not arrived.
const (
	firstWait  = 10 * time.Second
	maxPending = 64
)

// guard admits the agent's calls: it reads each call's request in time,
// decides it by the policy and the host's room (authorize), holds it to
// its limits while it runs, and gives back what it held at its end; it
// audits every decision.
type guard struct{ auditor }

// requestTypes maps each method of the agent's API to its request type.
var requestTypes = sync.OnceValue(func() map[string]protoreflect.MessageType {
	types := map[string]protoreflect.MessageType{}
	services := agentpb.File_agent_proto.Services()
	for i := range services.Len() {
		svc := services.Get(i)
		for j := range svc.Methods().Len() {
			m := svc.Methods().Get(j)
			if mt, err := protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName()); err == nil {
				types[fmt.Sprintf("/%s/%s", svc.FullName(), m.Name())] = mt
			}
		}
	}
	return types
})

// requestOf is a new, empty request of method; nil for a method the agent
// does not have.
func requestOf(method string) proto.Message {
	mt, ok := requestTypes()[method]
	if !ok {
		return nil
	}
	return mt.New().Interface()
}

// serviceDesc is the agent's service with every unary method's request
// read by firstMessage: in time, and counted per identity while it is
// awaited.
func (s guard) serviceDesc() *grpc.ServiceDesc {
	desc := agentpb.Agent_ServiceDesc
	desc.Methods = slices.Clone(desc.Methods)
	for i := range desc.Methods {
		m := &desc.Methods[i]
		method, handler := "/"+desc.ServiceName+"/"+m.MethodName, m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			return handler(srv, ctx, func(req any) error { return s.firstMessage(ctx, method, dec, req) }, in)
		}
	}
	return &desc
}

// firstMessage reads a call's request into m with recv, within the
// agent's first-message wait; every failure is audited as a refusal.
func (s guard) firstMessage(ctx context.Context, method string, recv func(any) error, m any) error {
	markAudited(ctx)
	who := callerOf(ctx)
	if s.policy.Load() != nil {
		release, err := s.host.pend(s.Host, who, maxPending)
		if err != nil {
			return s.refuseEarly(ctx, who, method, err)
		}
		defer release()
	}
	wait := s.firstWait
	if wait <= 0 {
		wait = firstWait
	}
	// A stream cannot be read with a deadline: the read goes on in its
	// own goroutine; past the wait the stream is cancelled (tapStream),
	// which ends the read, and the call returns once it has ended, as
	// gRPC wants.
	done := make(chan error, 1)
	go func() { done <- recv(m) }()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return s.refuseEarly(ctx, who, method, fmt.Errorf("agent on %s: reading the request: %w", s.Host, err))
		}
		return nil
	case <-timer.C:
		if cancel, ok := ctx.Value(streamCancelKey{}).(context.CancelFunc); ok {
			cancel()
			<-done
		}
		return s.refuseEarly(ctx, who, method, status.Errorf(codes.DeadlineExceeded,
			"agent on %s refuses the call: its request did not arrive within %v of its start", s.Host, wait))
	}
}

type streamCancelKey struct{}

// tapStream gives each stream a context its call can cancel (firstMessage
// does, to end a read of its request that is overdue); it is the stream's
// own context, which its reads and writes end with.
func tapStream(ctx context.Context, _ *tap.Info) (context.Context, error) {
	ctx, cancel := context.WithCancel(ctx)
	return context.WithValue(ctx, streamCancelKey{}, cancel), nil
}

// pend counts a call of who whose request is awaited, or refuses it when
// who has max of them; release ends the count.
func (h *host) pend(agent string, who caller, most int) (release func(), err error) {
	key := who.key()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[key] >= most {
		return nil, status.Errorf(codes.ResourceExhausted, "agent on %s refuses a call of %s: %d of its calls have not sent their request yet, the most one identity may have", agent, who, most)
	}
	h.pending[key]++
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.pending[key]--; h.pending[key] <= 0 {
			delete(h.pending, key)
		}
	}, nil
}

// unknownMethod answers a method the agent does not have; admitStream
// has audited it.
func (s guard) unknownMethod(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	return status.Errorf(codes.Unimplemented, "agent on %s has no method %q", s.Host, method)
}

// rpcMark is a call's tag: whether the guard has audited it.
type rpcMark struct {
	method  string
	audited atomic.Bool
}

type markKey struct{}

func markAudited(ctx context.Context) {
	if m, ok := ctx.Value(markKey{}).(*rpcMark); ok {
		m.audited.Store(true)
	}
}

// rpcAudit audits the calls gRPC itself refuses before the guard sees
// them (a request it cannot decode or decompress, say).
type rpcAudit struct{ s *Server }

func (a rpcAudit) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, markKey{}, &rpcMark{method: info.FullMethodName})
}

func (a rpcAudit) HandleRPC(ctx context.Context, st stats.RPCStats) {
	end, ok := st.(*stats.End)
	if !ok || end.Error == nil || a.s.Audit == nil {
		return
	}
	if m, ok := ctx.Value(markKey{}).(*rpcMark); ok && !m.audited.Load() {
		auditor{a.s}.refuseEarly(ctx, callerOf(ctx), m.method, end.Error)
	}
}

func (rpcAudit) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (rpcAudit) HandleConn(context.Context, stats.ConnStats) {}
