package archtest

// The topology routes a test-bed's pairs of hosts on the graph the
// scenario builds (issue 33): it imports the pure routing package, and
// stays free of the engine (its PathChange is its own).
func init() {
	allowed["internal/topology"] = append(allowed["internal/topology"], "internal/routing")
	never = append(never, struct{ from, to, why string }{"internal/topology", "internal/linkemu",
		"the topology is pure data about the test-bed: the test-bed turns it into the engine's configuration"})
}
