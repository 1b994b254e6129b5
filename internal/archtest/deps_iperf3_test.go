package archtest

// iperf3 speaks iperf3's protocol to a far end that runs an iperf3 server
// and no agent (issue 36). It is a workload's data plane like
// throughput's sender: addresses, sockets and the server's bytes in, a
// result out. It reads its sockets' TCP_INFO through job's helper and
// checks a spec against an agent's limits; it knows nothing of agents,
// policies, test-beds or the service, which call it.
func init() {
	allowed["internal/iperf3"] = []string{"internal/limits", "internal/workload/job"}
	for _, to := range []string{"internal/agent", "internal/agent/...", "internal/policy", "internal/testbed", "internal/realhosts", "internal/monitor/...", "internal/measure"} {
		never = append(never, struct{ from, to, why string }{"internal/iperf3", to,
			"the iperf3 client is a data plane: it knows addresses and sockets, not who asks it to run or what allows it"})
	}
}
