package archtest

// The task farm is a kind of its own (issue 32): its wire protocol, its
// settings and their checks, its driver and its agents' roles, through the
// kind's vocabulary only. Its tasks' round trips are summarised by delay,
// a leaf that the probe kind uses too.
func init() {
	allowed["internal/delay"] = []string{}
	allowed["internal/workload/taskfarm"] = append(allowed["internal/workload/taskfarm"], "internal/delay", "internal/results", "internal/workload/kind")
	// Fakes for a kind's tests: a Check as the scenario's, an Env that
	// runs the kind's roles in process as agents would.
	allowed["internal/workload/kind/kindtest"] = append(allowed["internal/workload/kind/kindtest"], "internal/limits", "internal/testsupport", "internal/units",
		"internal/workload/bind", "internal/workload/job", "internal/workload/kind", "internal/workload/token")
}
