package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// An open incident is listed under the grid, what comes from the
// topology or a peer (its segment, its reason) escaped.
func TestGridListsIncidents(t *testing.T) {
	ev, _ := json.Marshal(map[string]any{"segment": []string{hostile}, "figures": []string{core.FigureLoss},
		"confidence": 1, "reason": "loss: <script>alert(1)</script>"})
	_, base := viewer(t, t.TempDir(), "testbed: grid\ngroups: {g: [a, b]}\ntests:\n  - {name: lat, type: probe, group: g}\n", nil, func(ar *archive.Archive) {
		if _, err := ar.OpenAlert(archive.Alert{Ref: "incident/x/1", Rule: core.RuleIncident, Src: hostile, Dst: hostile, Test: core.FigureLoss,
			Started: time.Now().Add(-time.Minute), Value: 1, Message: "m", Evidence: ev}); err != nil {
			t.Fatal(err)
		}
	})
	code, _, body := get(t, base+"/")
	if code != 200 || !strings.Contains(body, `id="incidents"`) {
		t.Fatalf("/: %d, incidents listed %v", code, strings.Contains(body, `id="incidents"`))
	}
	for _, bad := range []string{"<img", "<script>"} {
		if strings.Contains(body, bad) {
			t.Errorf("the grid has %s unescaped", bad)
		}
	}
	if !strings.Contains(body, "&lt;img src=x") || !strings.Contains(body, "&lt;script&gt;alert(1)") {
		t.Error("the incident's segment or reason is not on the page as text")
	}
}
