package archtest

import (
	"slices"
	"testing"
)

// The monitoring service in three layers: the pure core; the runners
// (monitor/runner), which measure and hand what they find to the service
// and its store through the interfaces they declare; the HTTP layer
// (monitor/web), which knows the service only through the interfaces it
// declares. Package monitor, the service, is the composition root: its
// state, its store (the archive and the local buffer) and the shares; the
// dashboard and the CLI stand above it.
func init() {
	// The core has its own points and alerts: the store converts them.
	allowed["internal/monitor/core"] = without(allowed["internal/monitor/core"], "internal/archive")
	allowed["internal/monitor/tokens"] = []string{} // a leaf: the tokens file
	// archive: the rows the API reads and answers with; cost: the model
	// of the cost answers.
	allowed["internal/monitor/web"] = append(allowed["internal/monitor/web"],
		"internal/archive", "internal/cost", "internal/monitor/core", "internal/monitor/tokens", "internal/units")
	// archive: the rows the runners' test records are; measure: how they
	// measure; the workloads' specs they ask for.
	allowed["internal/monitor/runner"] = append(allowed["internal/monitor/runner"], "internal/agent/agentpb", "internal/archive", "internal/backend",
		"internal/measure", "internal/monitor/core", "internal/workload/probe", "internal/workload/throughput", "internal/workload/transfer")
	// The service measures nothing itself, its runners do; it serves
	// nothing, its HTTP layer does.
	allowed["internal/monitor"] = append(without(allowed["internal/monitor"], "internal/agent/agentpb", "internal/cost", "internal/measure",
		"internal/results", "internal/units", "internal/workload/probe", "internal/workload/throughput", "internal/workload/transfer", "internal/yamlfile"),
		"internal/monitor/runner", "internal/monitor/tokens")
	allowed["internal/dashboard"] = append(without(allowed["internal/dashboard"], "internal/monitor"), "internal/monitor/web")
	for _, to := range webNever {
		never = append(never, struct{ from, to, why string }{"internal/monitor/web", to,
			"the HTTP layer reaches the service through its interfaces (web.Service), never the service's package, its runners, its store or the hosts (docs/architecture.md)"})
	}
	for _, to := range []string{"internal/monitor", "internal/monitor/web"} {
		never = append(never, struct{ from, to, why string }{"internal/monitor/runner", to,
			"the runners hand what they find to the service and its store through their interfaces (runner.Service, runner.Appender), never the service's package"})
	}
	never = append(never, struct{ from, to, why string }{"internal/monitor/core", "internal/archive",
		"the monitoring core has its own points and alerts: the store converts them to the archive's rows"})
}

// without is list less the packages drop.
func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(p string) bool { return slices.Contains(drop, p) })
}

// webNever are the packages the HTTP layer may not import: the service's
// own (its state and store), its runners, and what measures.
var webNever = []string{"internal/monitor", "internal/monitor/runner", "internal/measure", "internal/backend", "internal/agent/...", "internal/workload/..."}

// TestMonitorWebRulesCatchABreach checks the layers' rules on made-up imports.
func TestMonitorWebRulesCatchABreach(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		caught   bool
	}{
		{"internal/monitor/web", "internal/monitor", true},
		{"internal/monitor/web", "internal/monitor/runner", true},
		{"internal/monitor/runner", "internal/monitor", true},
		{"internal/monitor/runner", "internal/monitor/web", true},
		{"internal/monitor/web", "internal/measure", true},
		{"internal/monitor/web", "internal/agent/agentpb", true},
		{"internal/monitor/core", "internal/archive", true},
		{"internal/monitor/web", "internal/monitor/core", false},
		{"internal/monitor/web", "internal/archive", false},
		{"internal/monitor", "internal/monitor/core", false},
		{"internal/monitor", "internal/monitor/runner", false},
		{"internal/monitor/runner", "internal/monitor/core", false},
	} {
		caught := false
		for _, r := range never {
			caught = caught || match(r.from, tc.from) && match(r.to, tc.to)
		}
		if caught != tc.caught {
			t.Errorf("%s -> %s: caught %v, want %v", tc.from, tc.to, caught, tc.caught)
		}
	}
}
