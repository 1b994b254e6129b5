package archtest

// Incident inference pools the one-way loss of the routes crossing a
// direction and judges it by its Wilson interval (issue 37): binomial is
// the leaf home of those intervals. The name sorts after deps_monitor,
// whose init replaces the list this appends to.
func init() {
	allowed["internal/monitor/core"] = append(allowed["internal/monitor/core"], "internal/binomial")
}
