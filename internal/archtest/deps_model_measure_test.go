package archtest

// The throughput, transfer, probe and mesh models (issue 34): each kind
// builds the actors of the simulator's model program (internal/sim) and
// reads its output, as eventdb and taskfarm do.
func init() {
	for _, pkg := range []string{"internal/workload/throughput", "internal/workload/transfer", "internal/workload/probe", "internal/workload/mesh"} {
		allowed[pkg] = append(allowed[pkg], "internal/sim")
	}
}
