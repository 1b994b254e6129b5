package examples

import (
	"slices"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/scenario"
)

// The names users type: the issue's, and alice-disks.
var wantNames = []string{
	"alice-disks", "alice-garr", "alice-grid", "alice-mesh", "alice-streams", "application-design", "diane-sla", "lhc-tiers", "monarc-wan", "objectivity-demo", "objectivity-lan-1000m", "objectivity-lan-100m",
	"objectivity-lan-10m", "objectivity-lan-4clients", "objectivity-wan-2m", "objectivity-wan-multisite", "path-changes", "sc2003-multigigabit", "slac-cern",
}

func TestBuiltins(t *testing.T) {
	var names []string
	for _, s := range Builtins() {
		names = append(names, s.Name)
		if s.Title == "" || len(s.Seeds) == 0 || !strings.HasPrefix(s.Seeds[0], "../shared/seeds/") {
			t.Errorf("%s: title %q, seeds %v: every built-in names what it is and the study it comes from", s.Name, s.Title, s.Seeds)
		}
		for _, quick := range []bool{false, true} {
			f, err := scenario.Parse(s.File, s.Text, quick)
			if err != nil {
				t.Errorf("%s (quick %v): %v", s.Name, quick, err)
				continue
			}
			if f.Testbed.Name != s.Name {
				t.Errorf("%s: its test-bed is called %q", s.Name, f.Testbed.Name)
			}
		}
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("built-ins %v, want %v", names, wantNames)
	}
	if _, ok := Lookup("wan-lan"); ok {
		t.Error("wan-lan has no workloads and is not a built-in scenario")
	}
	if s, ok := Lookup("diane-sla"); !ok || !strings.Contains(string(s.Text), "taskfarm") {
		t.Error("Lookup(diane-sla)")
	}
}

// TestSimulatedBuiltins checks the built-ins past what one machine
// emulates: they say backend: simulated (so wanlab run refuses them), in
// full and with --quick, and the others do not.
func TestSimulatedBuiltins(t *testing.T) {
	simulated := []string{"alice-grid", "monarc-wan"}
	for _, s := range Builtins() {
		for _, quick := range []bool{false, true} {
			f, err := scenario.Parse(s.File, s.Text, quick)
			if err != nil {
				t.Fatalf("%s (quick %v): %v", s.Name, quick, err)
			}
			if got, want := f.Testbed.Simulated(), slices.Contains(simulated, s.Name); got != want {
				t.Errorf("%s (quick %v): simulated %v, want %v", s.Name, quick, got, want)
			}
		}
	}
}
