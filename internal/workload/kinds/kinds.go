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
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// all are the kinds in their own package. The others (eventdb, taskfarm,
// mesh, throughput, transfer, probe, impact) are still decoded in
// scenario and run in controller, through their legacy tables, until they
// move here (issue 32).
var all = []kind.Kind{
	command.Kind,
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
