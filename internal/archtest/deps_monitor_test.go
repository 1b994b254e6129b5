package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// The monitoring service in layers: a pure core (configuration, schedule,
// baselines and alerts, metric names), the service's runners and HTTP
// layer above it, the dashboard above both.
func init() {
	// archive: the core's alerts and points are the archive's row types.
	allowed["internal/monitor/core"] = []string{"internal/archive", "internal/results", "internal/scenario", "internal/units", "internal/yamlfile"}
	allowed["internal/monitor"] = append(allowed["internal/monitor"], "internal/monitor/core")
	allowed["internal/dashboard"] = append(allowed["internal/dashboard"], "internal/monitor/core")
	for _, to := range []string{"internal/measure", "internal/backend", "internal/agent/...", "internal/testbed", "internal/realhosts", "internal/monitor"} {
		never = append(never, struct{ from, to, why string }{"internal/monitor/core", to,
			"the monitoring core is pure: it measures nothing and serves nothing (docs/architecture.md)"})
	}
}

// coreForbidden are the standard library's packages of I/O the monitoring
// core may not import: no network, no HTTP, no database, no files, no
// processes (net/netip, pure parsing, is fine).
var coreForbidden = []string{"net", "net/http", "net/http/...", "net/rpc/...", "database/...", "os", "os/exec", "syscall"}

// TestMonitorCoreIsPure checks the monitoring core's own imports of the
// standard library (the module's are TestDependencies').
func TestMonitorCoreIsPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, module+"internal/monitor/core").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		for _, f := range coreForbidden {
			if match(f, imp) {
				t.Errorf("internal/monitor/core imports %s: the core does no I/O (a runner or the HTTP layer does)", imp)
			}
		}
	}
}
