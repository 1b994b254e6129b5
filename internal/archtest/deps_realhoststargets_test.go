package archtest

// An inventory's targets: (issue 36) are far ends without an agent, checked
// as a monitor configuration's are, through the far ends' vocabulary.
func init() {
	allowed["internal/realhosts"] = append(allowed["internal/realhosts"], "internal/farend")
}
