package measure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// Role is one role of a workload running in a host's agent.
type Role struct {
	ep     Endpoint
	id     string
	stream agentpb.Agent_WorkloadClient
	port   int
	// OnData takes each batch of a streaming role's data (tcp-watch's
	// samples) as Summary reads it; an error ends the reading.
	OnData func([]byte) error
}

// StartRole asks ep's agent to run a role; for a role that listens it
// returns once the role listens, with its port.
func StartRole(ctx context.Context, ep Endpoint, id, name string, spec any, listens bool) (*Role, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	stream, err := ep.Agent.Workload(ctx, &agentpb.WorkloadRequest{Id: id, Role: name, SpecJson: b})
	if err != nil {
		return nil, AgentError(ep.Host, err)
	}
	r := &Role{ep: ep, id: id, stream: stream}
	if listens {
		e, err := stream.Recv()
		if err != nil {
			return nil, AgentError(ep.Host, fmt.Errorf("%s: %w", name, err))
		}
		l := e.GetListening()
		if l == nil {
			return nil, fmt.Errorf("%s on %s did not say where it listens", name, ep.Host)
		}
		r.port = int(l.Port)
	}
	return r, nil
}

// Address is where the role listens.
func (r *Role) Address() string { return net.JoinHostPort(r.ep.Addr, strconv.Itoa(r.port)) }

// Summary reads the role's events until its summary, passing on every job,
// and decodes the summary into v.
func (r *Role) Summary(onJob func(job.Record), v any) error {
	for {
		e, err := r.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the agent on %s ended %s without a summary", r.ep.Host, r.id)
			}
			return AgentError(r.ep.Host, err)
		}
		switch ev := e.Event.(type) {
		case *agentpb.WorkloadEvent_Job:
			if onJob == nil {
				continue
			}
			onJob(job.RecordFromPB(r.ep.Host, ev.Job))
		case *agentpb.WorkloadEvent_DataJson:
			if r.OnData != nil {
				if err := r.OnData(ev.DataJson); err != nil {
					return err
				}
			}
		case *agentpb.WorkloadEvent_SummaryJson:
			if err := json.Unmarshal(ev.SummaryJson, v); err != nil {
				return fmt.Errorf("reading the summary of %s on %s: %w", r.id, r.ep.Host, err)
			}
			return nil
		}
	}
}

// Stop ends a serving role and waits for its call to end.
func (r *Role) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := r.ep.Agent.StopWorkload(ctx, &agentpb.StopWorkloadRequest{Id: r.id}); err != nil {
		return AgentError(r.ep.Host, err)
	}
	return nil
}

// Drain waits for the role's call to end.
func (r *Role) Drain() {
	for {
		if _, err := r.stream.Recv(); err != nil {
			return
		}
	}
}
