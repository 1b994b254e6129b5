package archtest

// farend is the vocabulary of far ends without an agent (issue 36): their
// kinds, default ports and the agent's reasons for refusals of a Target
// call. It is a leaf; the policy, the agent, the controller's side and the
// monitoring core name far ends through it. (This file's name sorts after
// deps_monitor*_test.go and deps_targets_test.go, whose init functions
// assign the lists it appends to.)
func init() {
	allowed["internal/farend"] = []string{}
	for _, from := range []string{"internal/policy", "internal/agent", "internal/measure/target", "internal/monitor/core"} {
		allowed[from] = append(allowed[from], "internal/farend")
	}
	// The controller's side tells an iperf3 server's refusal as iperf3's
	// own sentinel (iperf3.ErrBusy), through the agent.
	allowed["internal/measure/target"] = append(allowed["internal/measure/target"], "internal/iperf3")
	never = append(never, struct{ from, to, why string }{"internal/farend", "...",
		"far ends' vocabulary is a leaf: everyone who names a far end imports it"})
}
