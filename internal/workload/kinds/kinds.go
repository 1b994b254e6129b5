// Package kinds is the registry of workload kinds: the scenario decodes a
// workload's settings, and the controller runs its steps, through the
// kind found here. Adding a kind is one package under internal/workload
// and one line in all.
package kinds

import (
	"slices"
	"sync"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/command"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/impact"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// all are the kinds, each in its own package.
var all = []kind.Kind{
	command.Kind,
	taskfarm.Kind,
	eventdb.Kind,
	mesh.Kind,
	throughput.Kind,
	impact.Kind,
	probe.Kind,
	transfer.Kind,
}

var (
	mu    sync.RWMutex
	extra []kind.Kind // registered by tests
)

// All lists the kinds, in registration order.
func All() []kind.Kind {
	mu.RLock()
	defer mu.RUnlock()
	return append(slices.Clone(all), extra...)
}

// Lookup finds a kind by name.
func Lookup(name results.Kind) (kind.Kind, bool) {
	for _, k := range All() {
		if k.Name == name {
			return k, true
		}
	}
	return kind.Kind{}, false
}

// Role finds a role of the kinds by its name on the wire
// ("eventdb-server"), with the kind it is a role of: the agent runs the
// roles it finds here.
func Role(name string) (kind.Kind, kind.Role, bool) {
	for _, k := range All() {
		for _, r := range k.Roles {
			if r.Name == name {
				return k, r, true
			}
		}
	}
	return kind.Kind{}, kind.Role{}, false
}

// Register adds a kind that all does not list, until the function it
// returns is called: for a test build only (internal/archtest registers a
// toy kind to prove that a kind is one package and one line). A name
// already known is refused with a panic.
func Register(k kind.Kind) (unregister func()) {
	if _, ok := Lookup(k.Name); ok {
		panic("kinds: " + string(k.Name) + " is registered twice")
	}
	mu.Lock()
	defer mu.Unlock()
	extra = append(extra, k)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		extra = slices.DeleteFunc(extra, func(e kind.Kind) bool { return e.Name == k.Name })
	}
}
