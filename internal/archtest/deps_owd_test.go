package archtest

// owd follows one direction's one-way delay and finds its steps, with or
// without synchronised clocks (issue 37): samples in, steps out. It is
// pure; it reuses the delay summaries' quantile (internal/delay). The
// monitoring core may judge its probes' one-way delays with it.
func init() {
	allowed["internal/owd"] = []string{"internal/delay"}
	allowed["internal/monitor/core"] = append(allowed["internal/monitor/core"], "internal/owd")
	for _, to := range []string{"internal/monitor/...", "internal/workload/...", "internal/measure", "internal/topology", "internal/scenario"} {
		never = append(never, struct{ from, to, why string }{"internal/owd", to,
			"one-way delay estimation is pure: its callers hand it samples, it knows no probe, path or service"})
	}
}
