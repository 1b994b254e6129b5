package archtest

// The workload-kind registry (issue 32): a kind is one package under
// internal/workload that knows only its vocabulary (kind) and the leaves
// it needs; the registry lists the kinds; the scenario decodes and the
// controller runs every kind through it.
func init() {
	allowed["internal/workload/kind"] = []string{"internal/limits", "internal/results", "internal/workload/bind", "internal/workload/job", "internal/workload/token"}
	allowed["internal/workload/kinds"] = []string{"internal/results", "internal/workload/kind", "internal/workload/command", "internal/workload/taskfarm", "internal/workload/eventdb", "internal/workload/mesh", "internal/workload/throughput", "internal/workload/probe", "internal/workload/transfer", "internal/workload/impact"}
	allowed["internal/workload/command"] = []string{"internal/datadir", "internal/results", "internal/workload/job", "internal/workload/kind"}
	allowed["internal/workload/eventdb"] = append(allowed["internal/workload/eventdb"], "internal/results", "internal/workload/kind")
	allowed["internal/workload/mesh"] = append(allowed["internal/workload/mesh"], "internal/results", "internal/workload/kind")
	allowed["internal/scenario"] = append(allowed["internal/scenario"], "internal/workload/kind", "internal/workload/kinds")
	allowed["internal/controller"] = append(allowed["internal/controller"], "internal/workload/kind", "internal/workload/kinds")
	// The emulated backend makes a command's files in its hosts' data
	// directories (generated data, dropped from the page cache) and
	// reads /proc/PID/net/tcp for its server: backend.HostFiles.
	allowed["internal/testbed"] = append(allowed["internal/testbed"], "internal/workload/diskio", "internal/workload/transfer")

	// A step's samples are results' vocabulary (results.Sample), which a
	// kind's Outcome carries and the archive stores.
	allowed["internal/archive"] = append(allowed["internal/archive"], "internal/results")

	for _, to := range []string{"internal/scenario", "internal/controller", "internal/backend"} {
		never = append(never, struct{ from, to, why string }{"internal/workload/...", to,
			"a workload kind is one unit that runs on any backend: it sees the scenario through kind.Check and the hosts through kind.Env"})
	}
}
