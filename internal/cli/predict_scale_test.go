package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/wanlab/wanlab/internal/sim"
)

// TestPredictSimulatedBuiltins predicts the built-ins that only the
// simulator runs (backend: simulated) with --quick, as CI does, on
// bin/wanlab-sim: every step ends done.
func TestPredictSimulatedBuiltins(t *testing.T) {
	if err := sim.Available(); err != nil {
		t.Skipf("no simulator to predict on: %v", err)
	}
	for _, name := range []string{"monarc-wan", "alice-grid"} {
		t.Run(name, func(t *testing.T) {
			out, code := cli(t, "predict", name, "--quick", "--db", filepath.Join(t.TempDir(), "w.db"), "--json")
			var doc struct {
				Status string
				Steps  []struct{ Workload, Label, Status, Reason string }
			}
			if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || doc.Status != "done" || len(doc.Steps) == 0 {
				t.Fatalf("exit %d, %v:\n%s", code, err, out)
			}
			for _, s := range doc.Steps {
				if s.Status != "done" {
					t.Errorf("%s %s: %s %s", s.Workload, s.Label, s.Status, s.Reason)
				}
			}
		})
	}
}
