package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// TestSC2003Quick runs the built-in sc2003-multigigabit under --quick: the
// machine's socket buffer limits are raised for the run, recorded in it
// and put back after it; every step's finding names what limited it (the
// path, the test-bed or TCP), and a congestion control this kernel lacks
// is a failed step that says so.
func TestSC2003Quick(t *testing.T) {
	testsupport.NeedRoot(t)
	before, _ := os.ReadFile("/proc/sys/net/core/rmem_max")
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	r := wanlab(t, "run", "sc2003-multigigabit", "--quick", "--json", "--db", db)
	var doc struct {
		Run   int64 `json:"run"`
		Steps []struct {
			Workload string             `json:"workload"`
			Label    string             `json:"label"`
			Status   string             `json:"status"`
			Reason   string             `json:"reason"`
			Metrics  map[string]float64 `json:"metrics"`
		} `json:"steps"`
		Analysis struct {
			Findings []struct {
				Kind     string `json:"kind"`
				Workload string `json:"workload"`
				Text     string `json:"text"`
			} `json:"findings"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("exit %d: %v\n%s", r.code, err, r.stderr)
	}
	assertNothingLeft(t, "sc2003-multigigabit")
	if after, _ := os.ReadFile("/proc/sys/net/core/rmem_max"); string(after) != string(before) {
		t.Errorf("net.core.rmem_max is %s after the run, was %s", after, before)
	}
	available, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	for _, s := range doc.Steps {
		cc := strings.TrimPrefix(s.Label, "congestion=")
		switch {
		case s.Workload != "paix":
		case strings.Contains(" "+strings.TrimSpace(string(available))+" ", " "+cc+" "):
			if s.Status != "done" || s.Metrics["throughput_mbps"] < 500 {
				t.Errorf("%s: %s, %.0f Mbit/s through a 10 Gbit/s path (%s)", s.Label, s.Status, s.Metrics["throughput_mbps"], s.Reason)
			}
		case s.Status != "failed" || !strings.Contains(s.Reason, "is not in this kernel"):
			t.Errorf("%s, which this kernel lacks: %s: %s", s.Label, s.Status, s.Reason)
		}
	}
	limits := map[string]string{}
	for _, f := range doc.Analysis.Findings {
		if f.Kind == "limiting_factor" {
			limits[f.Workload] = f.Text
			t.Log(f.Text)
		}
	}
	for _, w := range []string{"paix", "chicago", "amsterdam", "two-flows"} {
		text, ok := limits[w]
		if !ok {
			t.Errorf("no finding of what limited %s", w)
			continue
		}
		n := 0
		for _, s := range doc.Steps {
			if s.Workload == w {
				n++
			}
		}
		said := strings.Count(text, "held it") + strings.Count(text, "TCP itself fell short") + strings.Count(text, " failed (")
		if said != n {
			t.Errorf("%s: the finding names a limit for %d of its %d steps: %s", w, said, n, text)
		}
	}
	a, err := archive.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	events, err := a.Events(context.Background(), doc.Run)
	if err != nil {
		t.Fatal(err)
	}
	var recorded bool
	for _, e := range events {
		recorded = recorded || strings.HasPrefix(e.Message, "machine: net.core.rmem_max was")
	}
	if !recorded {
		t.Errorf("the run does not record the machine-wide settings: %+v", events)
	}
}
