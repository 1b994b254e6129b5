package archtest

// segment infers the link directions at fault from which one-way paths
// left their baselines (issue 37): paths, their directions (opaque IDs)
// and verdicts in, incidents out. It is pure and imports nothing of
// wanlab (its tests build topologies to know the truth). The monitoring
// core may raise its incidents with it.
func init() {
	allowed["internal/segment"] = []string{}
	allowed["internal/monitor/core"] = append(allowed["internal/monitor/core"], "internal/segment")
	never = append(never, struct{ from, to, why string }{"internal/segment", "...",
		"segment inference is pure: directions are opaque IDs, so it needs neither the topology nor the service"})
}
