package archtest

// stamp speaks STAMP (RFC 8762; issue 36): packets, a reflector and a
// sender's session, over UDP sockets. It is a leaf: it imports nothing
// of wanlab, and the agent, measurements and the monitoring service wire
// it in; it knows nothing of who asks it to measure, nor of policies.
func init() {
	allowed["internal/stamp"] = []string{}
	// The agent answers STAMP packets (wanlab agent --stamp).
	allowed["internal/agent"] = append(allowed["internal/agent"], "internal/stamp")
	for _, to := range []string{"internal/agent/...", "internal/measure/...", "internal/monitor/...", "internal/workload/...",
		"internal/policy", "internal/scenario", "internal/testbed", "internal/realhosts"} {
		never = append(never, struct{ from, to, why string }{"internal/stamp", to,
			"the STAMP protocol core is a leaf: its callers (agent, measurements, service) wire it in and check policies"})
	}
}
