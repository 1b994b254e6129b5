package archtest

// A test-bed's graph (issue 33): the scenario builds the routing graph of
// its hosts, routers and sites (Testbed.Graph), and validation routes on
// it as the topology does, so that the two cannot disagree.
func init() {
	allowed["internal/scenario"] = append(allowed["internal/scenario"], "internal/routing")
}
