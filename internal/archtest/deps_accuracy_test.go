package archtest

// bench/accuracy (issue 34's accuracy figures) runs the wanlab binary for
// predictions and reads two measured runs itself to set them against each
// other: the archive, the analysis and the predictor's comparison.
func init() {
	allowed["bench/accuracy"] = []string{"internal/analysis", "internal/archive", "internal/predict", "internal/results"}
}
