package archtest

import "slices"

// The measure kinds' measurements in their packages (issue 32): probe's
// and transfer's measurements (probe.Measure, transfer.Measure) are in
// the kinds' packages, which reach the agents through measure's
// endpoints, and measure imports no kind's package for them any more.
// impact (probes through a load) and tune (a path's round trip, then a
// grid of loads) are made of other measurements.
func init() {
	const (
		measure = "internal/measure"
		api     = "internal/agent/agentapi"
		pb      = "internal/agent/agentpb"
	)
	allowed["internal/workload/probe"] = append(allowed["internal/workload/probe"], api, measure, "internal/delay", "internal/results", "internal/workload/kind")
	allowed["internal/workload/transfer"] = append(allowed["internal/workload/transfer"], measure, "internal/results", "internal/workload/job", "internal/workload/kind")
	allowed["internal/workload/impact"] = []string{measure, "internal/workload/probe", "internal/workload/throughput"}
	allowed["internal/measure/tune"] = []string{measure, "internal/units", "internal/workload/probe", "internal/workload/throughput"}
	// The agent served for the tests of measurements (a test helper).
	allowed["internal/measure/measuretest"] = append(allowed["internal/measure/measuretest"], "internal/agent", api, "internal/datadir", "internal/limits", measure)
	allowed["internal/controller"] = append(allowed["internal/controller"], "internal/measure/endpoints")
	allowed["internal/monitor/runner"] = append(allowed["internal/monitor/runner"], "internal/measure/endpoints")

	// measure imports no backend: a backend's test-bed resolves a
	// scenario, whose registry of kinds imports the kinds' measurements,
	// which import measure. Dialling a bed's agents is endpoints' (a
	// bridge between the two).
	allowed[measure] = slices.DeleteFunc(allowed[measure], func(p string) bool { return p == "internal/backend" })
	allowed["internal/measure/endpoints"] = []string{"internal/backend", measure}
	never = append(never, struct{ from, to, why string }{measure, "internal/backend",
		"the kinds' measurements import measure, and a backend's test-bed imports the scenario, whose registry imports the kinds: endpoints dials a bed's agents"})
	allowed["bench/testbed"] = append(allowed["bench/testbed"], "internal/workload/probe", "internal/workload/transfer")
}
