package archtest

// routing finds the paths of hosts through routers and sites: a graph in,
// paths out. The scenario builds its graph and the topology its paths
// with it; it is pure and imports nothing of wanlab.
func init() {
	allowed["internal/routing"] = []string{}
	never = append(never, struct{ from, to, why string }{"internal/routing", "...",
		"routing is pure graph code: the scenario and the topology import it, never the other way round"})
}
