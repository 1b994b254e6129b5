package archtest

// The workload-kind registry (issue 32): a kind is one package under
// internal/workload that knows only its vocabulary (kind) and the leaves
// it needs; the registry lists the kinds; the scenario decodes and the
// controller runs every kind through it.
func init() {
	allowed["internal/workload/kind"] = []string{"internal/limits", "internal/results", "internal/workload/bind", "internal/workload/job", "internal/workload/token"}
	allowed["internal/workload/kinds"] = []string{"internal/results", "internal/workload/kind", "internal/workload/command"}
	allowed["internal/workload/command"] = []string{"internal/datadir", "internal/results", "internal/workload/job", "internal/workload/kind"}
	allowed["internal/scenario"] = append(allowed["internal/scenario"], "internal/workload/kind", "internal/workload/kinds")
	allowed["internal/controller"] = append(allowed["internal/controller"], "internal/workload/kind", "internal/workload/kinds")
	// The emulated backend makes a command's files in its hosts' data
	// directories (generated data, dropped from the page cache) and
	// reads /proc/PID/net/tcp for its server: backend.HostFiles.
	allowed["internal/testbed"] = append(allowed["internal/testbed"], "internal/workload/diskio", "internal/workload/transfer")

	for _, to := range []string{"internal/scenario", "internal/controller", "internal/backend"} {
		never = append(never, struct{ from, to, why string }{"internal/workload/...", to,
			"a workload kind is one unit that runs on any backend: it sees the scenario through kind.Check and the hosts through kind.Env"})
	}
}
