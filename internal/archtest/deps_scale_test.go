package archtest

// bench/scale (issue 34's scale figures) runs the wanlab binary and reads
// its JSON: it imports nothing of the module.
func init() {
	allowed["bench/scale"] = []string{}
}
