package controller

import (
	"context"
	"os/exec"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// A step's env is what the registry's kinds run with (kind.Env): the
// bed's hosts, whatever the backend.
var _ kind.Env = (*stepEnv)(nil)

// It reaches the hosts' agents, which the measure kinds' drivers use.
var _ measure.Agents = (*stepEnv)(nil)

// The data directories of a bed's hosts are a kind's Files.
var _ kind.Files = backend.HostFiles(nil)

// Addr is a host's test address, of the family the run's tests are over
// ("" for a host the topology lacks).
func (e *stepEnv) Addr(host string) string {
	if ep, ok := e.hosts[host]; ok && ep.Addr != "" {
		return ep.Addr
	}
	h, _ := e.topo.Host(host)
	return h.Addr
}

// Command prepares argv to run in a host of the bed.
func (e *stepEnv) Command(ctx context.Context, host string, argv ...string) *exec.Cmd {
	return e.bed.Command(ctx, host, argv...)
}

// Files are the bed's hosts' data directories, when they are on this
// machine; nil otherwise.
func (e *stepEnv) Files() kind.Files {
	if f, ok := e.bed.(backend.HostFiles); ok {
		return f
	}
	return nil
}

// Expect adds n jobs to those the progress bar expects.
func (e *stepEnv) Expect(n int) { e.expected.add(n) }

// Done counts a job that ended, and whether it failed.
func (e *stepEnv) Done(r job.Record) {
	e.finished.add(1)
	if r.Status != job.OK {
		e.failed.add(1)
	}
}

func (e *stepEnv) Seed() uint64       { return e.seed }
func (e *stepEnv) ID() string         { return e.id }
func (e *stepEnv) Token() token.Token { return e.token }

// Endpoint is a host's agent, for the measure kinds' drivers
// (measure.Agents).
func (e *stepEnv) Endpoint(host string) (measure.Endpoint, bool) {
	ep, ok := e.hosts[host]
	return ep, ok
}

// Start starts one of a kind's roles on a host's agent.
func (e *stepEnv) Start(ctx context.Context, host, id, role string, spec kind.RoleSpec, listens bool) (kind.Started, error) {
	r, err := measure.StartRole(ctx, e.hosts[host], id, role, spec, listens)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Bottleneck is the rate from's traffic to host to can get, in bit/s: the
// lower direction of to's site access link (which to's traffic shares with
// its site's other hosts), or without a site the bottleneck of the path
// to it; 0 when nothing limits it.
func (e *stepEnv) Bottleneck(from, to string) float64 {
	if peer, _ := e.topo.Host(to); peer.Site != "" {
		return e.topo.AccessBPS(to)
	}
	if path, ok := e.topo.Path(from, to); ok {
		return path.Bottleneck
	}
	return 0
}
