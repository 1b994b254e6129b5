package archtest

// kindtest.SimToy, the kind with a simulation model only that the
// predictor's tests register, gives its figures in results' vocabulary,
// as every kind does.
func init() {
	allowed["internal/workload/kind/kindtest"] = append(allowed["internal/workload/kind/kindtest"], "internal/results")
}
