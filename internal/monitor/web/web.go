// Package web is the monitoring service's HTTP layer: the API under
// /api/v1/ and /metrics, who may read and act (tokens, browser sessions,
// the Host check), the state changes and their audit, and the network cost
// answers. It knows the service only through the small interfaces below
// (package monitor's Service implements them): it neither runs tests nor
// writes to the archive itself.
package web

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// State is what the HTTP layer reads of the service.
type State interface {
	Snapshot() core.Snapshot
	// Interfaces are the monitored interfaces' latest rates and the
	// devices that do not answer.
	Interfaces() ([]core.IfaceState, map[string]string)
	// Config is the running configuration.
	Config() *core.Config
	// Via are a path's link directions, either way (none if unknown).
	Via(src, dst string) []string
	// Archive is the archive while it is reachable, else nil: read only.
	Archive() *archive.Archive
	// Incidents are the open incidents: faulty segments inferred from
	// the paths' alerts.
	Incidents() []core.ActiveIncident
}

// Actions are what the HTTP layer asks of the service.
type Actions interface {
	// Ack acknowledges an active alert; false if none has that ref.
	Ack(ref, who, note string) bool
	// RunNow queues a run of a throughput-class test on demand
	// (core.ErrNotConfigured, core.ErrElsewhere, or a full queue).
	// family: that family's run of a test run once per family; "": each.
	RunNow(test, family, src, dst, who string) error
	// Audit records what a caller did: an event for identities, and the
	// archive's entry if e is not nil.
	Audit(message string, e *audit.Entry)
}

// Service is the service the HTTP layer serves.
type Service interface {
	State
	Actions
}

// API is the service's HTTP layer: the API under /api/v1/ and /metrics
// (Mux), who may read and act (Guard, Login, Logout), the actions and the
// network cost answers, over one Service.
type API struct {
	svc Service
	// hosts are the names the listener answers to besides its address
	// and access: hosts: (ListenerNames of --http).
	hosts []string

	mu   sync.Mutex
	gate *gate
}

// New makes the HTTP layer of a service whose listener answers to hosts
// besides its address (ListenerNames); it reads the tokens file of the
// configuration's access: section.
func New(svc Service, hosts []string) (*API, error) {
	g, err := newGate(svc.Config().Access, hosts)
	if err != nil {
		return nil, err
	}
	return &API{svc: svc, hosts: hosts, gate: g}, nil
}

// access is the gate of the configuration in force.
func (a *API) access() *gate {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gate
}

// Reload takes a reloaded configuration's access: section, keeping the
// browser sessions of names its tokens file still has, the throttles and
// the sign-ins not yet summarised. Pass it to the service's Reload.
func (a *API) Reload(cfg *core.Config) error {
	g, err := newGate(cfg.Access, a.hosts)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.gate
	old.mu.Lock()
	defer old.mu.Unlock()
	for id, ss := range old.sessions {
		if slices.Contains(g.tokens.Names(), ss.name) {
			g.sessions[id] = ss
		}
	}
	// Throttles and the count of sign-ins not yet summarised stay too
	// (copied: a request still in the old gate must not share them).
	for addr, ts := range old.failures {
		g.failures[addr] = slices.Clone(ts)
	}
	// The Host refusals' pacing is shared: it has a lock of its own.
	g.logged, g.quiet, g.refusedHost = slices.Clone(old.logged), old.quiet, old.refusedHost
	g.quiet.from = maps.Clone(old.quiet.from)
	old.quiet = quietLogins{}
	a.gate = g
	return nil
}

// Run writes, once a minute until ctx ends, the summary of the refused
// sign-ins that were counted rather than audited one by one.
func (a *API) Run(ctx context.Context) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			a.summariseLogins(now)
		}
	}
}
