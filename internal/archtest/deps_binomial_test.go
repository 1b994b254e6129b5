package archtest

// binomial is a loss counted among trials with its Wilson interval: a
// leaf, so that probes, far-end tests, path twins and the monitoring
// service count loss alike without importing each other.
func init() {
	allowed["internal/binomial"] = []string{}
	// measure/target and twinrun, whose lists their own files set, name
	// it there.
	for _, from := range []string{"internal/workload/probe", "internal/monitor/runner"} {
		allowed[from] = append(allowed[from], "internal/binomial")
	}
}
