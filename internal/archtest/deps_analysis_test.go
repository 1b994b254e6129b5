package archtest

// The readers of the archive read a kind's traits and its specs'
// capabilities (internal/workload/kind) through the registry
// (internal/workload/kinds), never naming a kind (issue 32).
func init() {
	for _, pkg := range []string{"internal/analysis", "internal/report", "internal/dashboard"} {
		allowed[pkg] = append(allowed[pkg], "internal/workload/kind")
	}
	allowed["internal/analysis"] = append(allowed["internal/analysis"], "internal/workload/kinds")
}
