package archtest

// Targets in the monitoring service (issue 36): the runners test from a
// host toward a far end without an agent through measure/target, the
// controller's side of the agent's Target call.
func init() {
	allowed["internal/monitor/runner"] = append(allowed["internal/monitor/runner"], "internal/measure/target")
}
