package archtest

// One audit entry (issue 32): internal/audit is a leaf that the agent
// (its audit log), the archive (mon_audit) and the monitoring service
// (what callers ask of wanlab serve) share, so that none imports another
// for it. (This file's name sorts after the files that set the lists it
// adds to: init functions run in file-name order.)
func init() {
	allowed["internal/audit"] = []string{}
	for _, pkg := range []string{"internal/agent", "internal/archive", "internal/monitor", "internal/monitor/web"} {
		allowed[pkg] = append(allowed[pkg], "internal/audit")
	}
}
