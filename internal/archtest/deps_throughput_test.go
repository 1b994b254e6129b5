package archtest

// Throughput and impact as kinds (issue 32). A measure kind's package
// imports measure (deps_probe_test.go says why that is safe: measure
// imports no backend, no scenario and no kind), and its driver reaches
// the hosts' agents through measure.Endpoints, which asks the step's
// kind.Env for them (measure.Agents): so measure imports kind, a leaf.
func init() {
	const measure = "internal/measure"
	allowed["internal/workload/throughput"] = append(allowed["internal/workload/throughput"],
		measure, "internal/results", "internal/units", "internal/workload/kind")
	allowed["internal/workload/impact"] = append(allowed["internal/workload/impact"], "internal/results", "internal/workload/kind")
	allowed[measure] = append(allowed[measure], "internal/workload/kind")
	// measuretest's Env is kindtest's whose hosts are agents (a test helper).
	allowed["internal/measure/measuretest"] = append(allowed["internal/measure/measuretest"], "internal/workload/kind", "internal/workload/kind/kindtest")
}
