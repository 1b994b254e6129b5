package archtest

// The eventdb and taskfarm models (issue 34): each kind builds the actors
// of the simulator's model program (internal/sim) and reads its output;
// the kinds' test fakes build a platform of it too.
func init() {
	for _, pkg := range []string{"internal/workload/eventdb", "internal/workload/taskfarm", "internal/workload/kind/kindtest"} {
		allowed[pkg] = append(allowed[pkg], "internal/sim")
	}
}
