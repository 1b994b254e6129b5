package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// role is one role of a workload running in a host's agent.
type role struct {
	ep     measure.Endpoint
	id     string
	stream agentpb.Agent_WorkloadClient
	port   int
}

// startRole asks ep's agent to run a role; for a role that listens it
// returns once the role listens, with its port.
func startRole(ctx context.Context, ep measure.Endpoint, id, name string, spec any, listens bool) (*role, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	stream, err := ep.Agent.Workload(ctx, &agentpb.WorkloadRequest{Id: id, Role: name, SpecJson: b})
	if err != nil {
		return nil, measure.AgentError(ep.Host, err)
	}
	r := &role{ep: ep, id: id, stream: stream}
	if listens {
		e, err := stream.Recv()
		if err != nil {
			return nil, measure.AgentError(ep.Host, fmt.Errorf("%s: %w", name, err))
		}
		l := e.GetListening()
		if l == nil {
			return nil, fmt.Errorf("%s on %s did not say where it listens", name, ep.Host)
		}
		r.port = int(l.Port)
	}
	return r, nil
}

// address is where the role listens.
func (r *role) address() string { return fmt.Sprintf("%s:%d", r.ep.Addr, r.port) }

// summary reads the role's events until its summary, passing on every job,
// and decodes the summary into v.
func (r *role) summary(onJob func(job.Record), v any) error {
	for {
		e, err := r.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the agent on %s ended %s without a summary", r.ep.Host, r.id)
			}
			return measure.AgentError(r.ep.Host, err)
		}
		switch ev := e.Event.(type) {
		case *agentpb.WorkloadEvent_Job:
			j := ev.Job
			onJob(job.Record{ID: int(j.Id), Host: r.ep.Host, Subject: j.Subject, Start: time.Unix(0, j.StartUnixNs), End: time.Unix(0, j.EndUnixNs),
				Bytes: int64(j.Bytes), Status: j.Status, Reason: j.Reason, TCPRTTms: j.TcpRttMs, TCPRetransmits: j.TcpRetransmits})
		case *agentpb.WorkloadEvent_SummaryJson:
			if err := json.Unmarshal(ev.SummaryJson, v); err != nil {
				return fmt.Errorf("reading the summary of %s on %s: %w", r.id, r.ep.Host, err)
			}
			return nil
		}
	}
}

// stop ends a serving role and waits for its call to end.
func (r *role) stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := r.ep.Agent.StopWorkload(ctx, &agentpb.StopWorkloadRequest{Id: r.id}); err != nil {
		return measure.AgentError(r.ep.Host, err)
	}
	return nil
}

// drain waits for the role's call to end.
func (r *role) drain() {
	for {
		if _, err := r.stream.Recv(); err != nil {
			return
		}
	}
}
