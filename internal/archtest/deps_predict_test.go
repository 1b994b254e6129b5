package archtest

// The predictor (issue 34) simulates a scenario's steps in place of a
// test-bed: it is the controller's Simulator (controller), maps the
// scenario's test-bed (scenario) onto the simulator's platform (sim)
// through the topology the test-bed builds (topology), has each step's
// kind (kind, kinds) build its actors and read the outcome (results),
// and sets a prediction against a measured run through the analysis
// (analysis). It reaches no host and no engine.
func init() {
	allowed["internal/predict"] = []string{"internal/analysis", "internal/controller", "internal/results", "internal/scenario",
		"internal/sim", "internal/topology", "internal/workload/kind", "internal/workload/kinds"}
	for _, to := range []string{"internal/testbed", "internal/realhosts", "internal/backend", "internal/agent", "internal/linkemu"} {
		never = append(never, struct{ from, to, why string }{"internal/predict", to,
			"a prediction runs on the simulator: it brings no host up and reaches no agent or engine"})
	}
}
