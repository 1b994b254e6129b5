package archtest

import (
	"slices"
	"testing"
)

// The agent's API split in two (issue 32): internal/agent/agentapi is what
// both ends share and the controller's client, internal/agent the server.
// Controllers (measure, the backends, the controller) import agentapi; a
// workload's wire conversions are in the workload's package, which may
// import agentpb. So measure and the workloads never reach the server,
// which imports them.
func init() {
	const (
		server = "internal/agent"
		api    = "internal/agent/agentapi"
		pb     = "internal/agent/agentpb"
	)
	allowed[api] = []string{pb, "internal/pki"}
	allowed[server] = append(allowed[server], api)
	for _, pkg := range []string{"internal/workload/job", "internal/workload/probe", "internal/workload/throughput", "internal/workload/transfer"} {
		allowed[pkg] = append(allowed[pkg], pb)
	}
	// The controllers' side: the client instead of the server.
	for _, pkg := range []string{"internal/measure", "internal/backend", "internal/testbed", "internal/realhosts", "internal/controller", "bench/testbed"} {
		allowed[pkg] = append(slices.DeleteFunc(allowed[pkg], func(p string) bool { return p == server }), api)
	}

	never = append(never,
		struct{ from, to, why string }{"internal/measure", server, "measurements talk to agents through agentapi's client, never the agent's server (which runs the workloads that use measure)"},
		struct{ from, to, why string }{api, server, "the agent's API is what both ends share: the server imports it, not the other way round"},
		struct{ from, to, why string }{api, "internal/workload/...", "the agent's API carries no workload type: a workload's wire conversions are in its own package"},
	)
}

// TestAgentAPIRulesCatchABreach checks the rules of the split on made-up
// imports.
func TestAgentAPIRulesCatchABreach(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		caught   bool
	}{
		{"internal/measure", "internal/agent", true},
		{"internal/workload/throughput", "internal/agent", true},
		{"internal/workload/job", "internal/agent", true},
		{"internal/agent/agentapi", "internal/agent", true},
		{"internal/agent/agentapi", "internal/workload/probe", true},
		{"internal/agent/agentapi", "internal/workload/job", true},
		{"internal/measure", "internal/agent/agentapi", false},
		{"internal/agent", "internal/agent/agentapi", false},
		{"internal/workload/transfer", "internal/agent/agentpb", false},
	} {
		if got := breaches(tc.from, tc.to); got != tc.caught {
			t.Errorf("%s -> %s: caught %v, want %v", tc.from, tc.to, got, tc.caught)
		}
	}
}

// breaches says whether an import of to by from breaks a rule of never.
func breaches(from, to string) bool {
	return slices.ContainsFunc(never, func(r struct{ from, to, why string }) bool { return match(r.from, from) && match(r.to, to) })
}
