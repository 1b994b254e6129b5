package archtest

// icmpecho is ICMP echo toward a far end that runs no agent (issue 36): a
// socket, echoes and their replies, a result. It summarises round trips
// with delay's quantile and reports loss as the probes do (binomial.Ratio,
// with its Wilson interval). It sends where it is told: whether the agent
// may is the agent's policy's to say (policy.AllowsTarget) before it runs.
func init() {
	allowed["internal/icmpecho"] = []string{"internal/binomial", "internal/delay"}
	for _, to := range []string{"internal/policy", "internal/agent", "internal/agent/..."} {
		never = append(never, struct{ from, to, why string }{"internal/icmpecho", to,
			"the pinger sends where it is told: the agent checks its policy before it runs one"})
	}
}
