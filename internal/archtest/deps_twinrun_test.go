package archtest

// twinrun runs the campaign of wanlab twin (issue 35): a twin.Plan's steps
// through the measurements the measure verbs use, reaching hosts through
// measure's endpoints only, and compares a path's campaign with its
// twin's replay (--check). The CLI opens the test-bed or the inventory
// and writes the files; twin, which fits, stays pure.
func init() {
	allowed["internal/twinrun"] = []string{"internal/binomial", "internal/measure", "internal/twin", "internal/units",
		"internal/workload/impact", "internal/workload/probe", "internal/workload/throughput"}
	for _, to := range []string{"internal/testbed", "internal/realhosts", "internal/controller", "internal/monitor", "internal/monitor/...",
		"internal/archive", "internal/scenario"} {
		never = append(never, struct{ from, to, why string }{"internal/twinrun", to,
			"twinrun measures through measure's endpoints, whatever the backend; the CLI opens beds, archives and scenarios"})
	}
}
