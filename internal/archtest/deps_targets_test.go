package archtest

// Far ends without an agent (issue 36). The agent tests toward them (its
// Target call) once its policy's rule names the far end's address
// (policy.AllowsTarget): ICMP echo through icmpecho, STAMP sessions through
// stamp's sender, iperf3 tests through iperf3's client; none of the three
// imports the agent (see their own files). measure/target is the
// controller's side: it asks a host's agent for such a test and
// summarises its probes as probe's measurements do.
func init() {
	allowed["internal/agent"] = append(allowed["internal/agent"], "internal/icmpecho", "internal/stamp", "internal/iperf3")
	allowed["internal/measure/target"] = []string{"internal/agent/agentpb", "internal/binomial", "internal/delay", "internal/measure", "internal/results", "internal/workload/probe",
		// a test toward an iperf3 server laid out as one between agents
		"internal/workload/throughput"}
}
