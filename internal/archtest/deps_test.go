package archtest

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/wanlab/wanlab/"

// allowed lists, for every package of the module, the module's packages it
// may import (non-test code). A package missing here fails the test: a new
// package says where it stands. docs/architecture.md explains the layers.
var allowed = map[string][]string{
	// Leaves: vocabulary and small mechanisms, importing nothing of wanlab.
	"internal/units":               {},
	"internal/limits":              {},
	"internal/results":             {},
	"internal/datadir":             {},
	"internal/unixsock":            {},
	"internal/cgroup":              {},
	"internal/golden":              {},
	"internal/proc":                {},
	"internal/cost":                {}, // the transfer-time model: evidence in, prediction out
	"internal/sim":                 {}, // the simulator's model program: data in, bin/wanlab-sim runs it
	"internal/testsupport":         {"internal/proc"},
	"internal/agent/agentpb":       {},
	"internal/linkemu":             {}, // the packet engine: a config struct in, counters out
	"internal/pcapng":              {}, // capture files, written by the engine's daemon
	"internal/workload/job":        {"internal/proc"},
	"internal/workload/diskio":     {},
	"internal/workload/token":      {}, // the per-test secret of the data plane
	"internal/workload/bind":       {}, // where test listeners open: address, port range
	"internal/yamlfile":            {}, // file:line problems of the YAML people write
	"internal/pki":                 {}, // certificates and TLS 1.3 configurations of agents and controllers
	"examples":                     {},
	"tools/testsum":                {},
	"internal/archtest":            {},
	"e2e":                          {}, // drives the wanlab binary only
	"internal/workload/probe":      {"internal/limits", "internal/workload/bind", "internal/workload/token"},
	"internal/workload/train":      {"internal/limits", "internal/workload/bind", "internal/workload/token"},
	"internal/workload/tcpwatch":   {"internal/limits", "internal/proc"},
	"internal/workload/disk":       {"internal/limits", "internal/workload/diskio"},
	"internal/workload/transfer":   {"internal/limits", "internal/workload/bind", "internal/workload/diskio", "internal/workload/token"},
	"internal/workload/throughput": {"internal/limits", "internal/workload/bind", "internal/workload/job", "internal/workload/token"},
	"internal/workload/eventdb":    {"internal/limits", "internal/workload/bind", "internal/workload/job", "internal/workload/token"},
	"internal/workload/taskfarm":   {"internal/limits", "internal/workload/bind", "internal/workload/job", "internal/workload/token"},
	"internal/workload/mesh":       {"internal/limits", "internal/workload/bind", "internal/workload/diskio", "internal/workload/job", "internal/workload/token"},

	// The scenario and what it resolves into.
	"internal/scenario": {"internal/limits", "internal/pki", "internal/results", "internal/units", "internal/workload/tcpwatch", "internal/yamlfile"},
	"internal/topology": {"internal/scenario"},
	"internal/policy":   {"internal/limits", "internal/units", "internal/yamlfile"},
	"internal/archive":  {"internal/workload/job"},

	// The agent, and the seam controllers reach hosts through.
	"internal/agent": {"internal/agent/agentpb", "internal/datadir", "internal/limits", "internal/unixsock",
		"internal/workload/disk", "internal/workload/job", "internal/workload/probe", "internal/workload/throughput", "internal/workload/transfer",
		"internal/workload/bind", "internal/workload/token", "internal/workload/tcpwatch", "internal/workload/train", "internal/pki", "internal/policy", "internal/proc"},
	// A bed with a timeline takes the scenario's expanded events.
	"internal/backend": {"internal/agent", "internal/scenario", "internal/topology"},

	// Backends: the emulated test-bed.
	// results: the words a link change is recorded with, which the analysis reads back.
	"internal/testbed": {"internal/agent", "internal/backend", "internal/cgroup", "internal/datadir", "internal/linkemu",
		"internal/pcapng", "internal/proc", "internal/results", "internal/scenario", "internal/topology", "internal/unixsock"},

	// Backends: real hosts, agents on the network named by an inventory.
	"internal/realhosts": {"internal/agent", "internal/agent/agentpb", "internal/backend", "internal/pki", "internal/scenario",
		"internal/topology", "internal/units", "internal/yamlfile"},

	// Controllers: measurements between hosts, and scenario runs.
	"internal/measure": {"internal/agent", "internal/agent/agentpb", "internal/archive", "internal/backend", "internal/datadir", "internal/results",
		"internal/workload/job", "internal/workload/tcpwatch", "internal/workload/token", "internal/workload/train"},
	"internal/controller": {"internal/agent", "internal/agent/agentpb", "internal/archive", "internal/backend", "internal/measure",
		"internal/results", "internal/scenario", "internal/topology", "internal/workload/job", "internal/workload/token", "internal/workload/tcpwatch"},
	"internal/crosscheck": {"internal/topology"},
	// The dashboard: pages over the monitoring service.
	"internal/dashboard": {"internal/analysis", "internal/archive", "internal/monitor", "internal/report", "internal/topology", "internal/units"},
	// The monitoring service: one more controller, with its own
	// configuration (and the shipped one, in examples).
	"internal/monitor": {"examples", "internal/agent/agentpb", "internal/archive", "internal/backend", "internal/cost", "internal/measure",
		"internal/results", "internal/scenario", "internal/units", "internal/workload/probe", "internal/workload/throughput",
		"internal/workload/transfer", "internal/yamlfile"},

	// Readers of the archive.
	"internal/analysis": {"internal/archive", "internal/results", "internal/scenario", "internal/topology", "internal/units",
		"internal/workload/job"},
	"internal/report": {"internal/analysis", "internal/archive", "internal/results", "internal/topology", "internal/units",
		"internal/workload/job"},

	// The command line joins everything; its main is thin.
	"internal/cli": {"*"},
	"cmd/wanlab":   {"internal/cli"},
	"bench/testbed": {"internal/agent", "internal/agent/agentpb", "internal/crosscheck", "internal/linkemu", "internal/measure", "internal/proc", "internal/testbed",
		"internal/workload/throughput"},
	"bench/workloads": {"internal/controller"},
}

// never are the rules the layers exist for; they hold whatever allowed
// says, and say why. "..." matches a package and all below it.
var never = []struct{ from, to, why string }{
	{"internal/linkemu", "...", "the packet engine knows nothing of scenarios, agents or archives"},
	{"internal/workload/...", "internal/testbed", "workloads run on any host, emulated or real, and know only addresses, sockets and files"},
	{"internal/workload/...", "internal/agent", "workloads do not know who asks them to run"},
	{"internal/analysis", "internal/testbed", "analysis reads the archive only, never a live test-bed"},
	{"internal/monitor", "internal/testbed", "the service measures through a backend.Bed, emulated or real, as the measure verbs do"},
	{"internal/monitor", "internal/realhosts", "the service measures through a backend.Bed, emulated or real, as the measure verbs do"},
	{"internal/analysis", "internal/linkemu", "analysis reads the archive only, never the engine"},
	{"internal/analysis", "internal/controller", "analysis reads the archive only, not the controller"},
	{"internal/report", "internal/testbed", "reports read the archive only, never a live test-bed"},
	{"internal/report", "internal/linkemu", "reports read the archive only, never the engine"},
	{"internal/report", "internal/controller", "reports read the archive only, not the controller"},
	{"internal/controller", "internal/testbed", "the controller reaches hosts through backend.Bed, whatever the backend"},
	{"internal/controller", "internal/realhosts", "the controller reaches hosts through backend.Bed, whatever the backend"},
	{"internal/measure", "internal/realhosts", "measurements reach hosts through backend.Bed, whatever the backend"},
	{"internal/realhosts", "internal/testbed", "the two backends know nothing of each other"},
	{"internal/testbed", "internal/realhosts", "the two backends know nothing of each other"},
	{"internal/policy", "internal/agent", "a policy is data the agent reads, not the other way round"},
	{"internal/measure", "internal/testbed", "measurements reach hosts through backend.Bed, whatever the backend"},
	{"internal/topology", "internal/testbed", "the topology is pure: no operating-system code"},
	{"internal/agent", "internal/cgroup", "the agent learns its host's CPU through a function it is given"},
	{"...", "cmd/...", "nothing imports cmd/"},
}

func match(pattern, pkg string) bool {
	if pattern == "..." || pattern == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
	}
	return pattern == pkg
}

// imports lists every package of the module with the module's packages it
// imports, from go list.
func imports(t *testing.T) map[string][]string {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		graph[pkg] = []string{}
		for _, imp := range f[1:] {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				graph[pkg] = append(graph[pkg], rest)
			}
		}
	}
	return graph
}

func TestDependencies(t *testing.T) {
	graph := imports(t)
	for pkg, deps := range graph {
		allow, listed := allowed[pkg]
		if !listed {
			t.Errorf("%s is not in the architecture test's list: add it to allowed, in its layer (docs/architecture.md)", pkg)
			continue
		}
		for _, dep := range deps {
			for _, r := range never {
				if match(r.from, pkg) && match(r.to, dep) {
					t.Errorf("%s imports %s: %s", pkg, dep, r.why)
				}
			}
			if !slices.ContainsFunc(allow, func(a string) bool { return match(a, dep) }) {
				t.Errorf("%s imports %s, which the architecture test does not allow: if it belongs, add it to allowed[%q] and say why in docs/architecture.md", pkg, dep, pkg)
			}
		}
	}
	for pkg := range allowed {
		if _, ok := graph[pkg]; !ok {
			t.Errorf("allowed lists %s, which is not a package of the module any more", pkg)
		}
	}
}

// TestRulesCatchABreach checks the rules themselves on made-up imports.
func TestRulesCatchABreach(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		caught   bool
	}{
		{"internal/linkemu", "internal/scenario", true},
		{"internal/workload/mesh", "internal/testbed", true},
		{"internal/report", "internal/controller", true},
		{"internal/cli", "cmd/wanlab", true},
		{"internal/report", "internal/analysis", false},
	} {
		caught := false
		for _, r := range never {
			caught = caught || match(r.from, tc.from) && match(r.to, tc.to)
		}
		if caught != tc.caught {
			t.Errorf("%s -> %s: caught %v, want %v", tc.from, tc.to, caught, tc.caught)
		}
	}
	if !match("internal/workload/...", "internal/workload") || match("internal/workload/...", "internal/workloads") {
		t.Error("the pattern matcher is wrong")
	}
}

// TestAllowedIsUsed: every import allowed lists is one its package makes:
// an entry nobody uses any more would let the import come back unseen.
func TestAllowedIsUsed(t *testing.T) {
	graph := imports(t)
	for _, pkg := range slices.Sorted(maps.Keys(allowed)) {
		for _, a := range allowed[pkg] {
			if strings.ContainsAny(a, "*.") {
				continue // a pattern
			}
			if !slices.ContainsFunc(graph[pkg], func(dep string) bool { return match(a, dep) }) {
				t.Errorf("allowed[%q] lists %s, which it does not import: remove it", pkg, a)
			}
		}
	}
}
