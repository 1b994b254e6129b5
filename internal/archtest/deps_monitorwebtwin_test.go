package archtest

// The HTTP layer serves the twin of a monitored path (issue 35): it reads
// the path's history from the archive it is handed and fits the twin with
// twin, the pure fitting package. It never imports twinrun, which
// measures through agents (measure, workloads), nor what runs a scenario.
func init() {
	allowed["internal/monitor/web"] = append(allowed["internal/monitor/web"], "internal/twin")
	for _, to := range []string{"internal/twinrun", "internal/scenario"} {
		never = append(never, struct{ from, to, why string }{"internal/monitor/web", to,
			"the HTTP layer fits a path's twin from the archive with twin alone: twinrun measures through agents, and the scenario is written by twin"})
	}
}
