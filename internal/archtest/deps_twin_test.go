package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// twin fits an emulated path to measurements of a real one (issue 35): a
// campaign (the measure verbs' figures, or an archive's points) in, a
// twin and its scenario written to an io.Writer out. It is pure: it takes
// the archive's point, run and sample types (archive) and reads a history
// only through the HistoryReader interface its caller passes (an archive
// the caller opened); it uses the delay summaries' quantile (delay), the
// metric names (results) and units (units), and opens, measures, runs and
// serves nothing; the CLI runs the campaign and fills it.
func init() {
	allowed["internal/twin"] = []string{"internal/archive", "internal/binomial", "internal/delay", "internal/results", "internal/units"}
	for _, to := range []string{"internal/measure", "internal/measure/...", "internal/workload/...", "internal/backend", "internal/agent/...",
		"internal/testbed", "internal/realhosts", "internal/controller", "internal/monitor", "internal/monitor/...", "internal/scenario"} {
		never = append(never, struct{ from, to, why string }{"internal/twin", to,
			"twin is pure fitting: the CLI runs the campaign and hands it the figures (its tests parse the scenario it writes)"})
	}
}

// TestTwinIsPure checks twin's own imports of the standard library: no
// network, no files, no processes.
func TestTwinIsPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, module+"internal/twin").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		for _, f := range coreForbidden {
			if match(f, imp) {
				t.Errorf("internal/twin imports %s: it fits, it does no I/O but writing to an io.Writer", imp)
			}
		}
	}
}
