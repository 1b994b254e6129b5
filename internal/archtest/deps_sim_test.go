package archtest

// The simulated backend (issue 34): a kind's Model builds actors of the
// simulator's model program (internal/sim, a leaf of data), so kind and
// every kind package may import it; the predictor (internal/predict)
// joins scenario, topology, kinds, the simulator and the archive, as the
// controller does for the other backends.
func init() {
	allowed["internal/workload/kind"] = append(allowed["internal/workload/kind"], "internal/sim")
}
