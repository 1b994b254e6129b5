package web

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// An incident open in the archive is the service's after a restart: the
// API lists it and /metrics exposes it, its segment from the topology or
// a peer never unescaped in the JSON's HTML-sensitive characters.
func TestIncidentsAPIAndMetrics(t *testing.T) {
	started := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	evidence := `{"segment":["cnaf.in"],"figures":["loss"],"paths":[{"path":"cern -> cnaf (latency)","figure":"loss"},` +
		`{"path":"<b>x</b> -> cnaf (latency)","figure":"loss"}],"confidence":1,"sources":["expected paths"],"reason":"loss: 2 affected paths crossing it and no healthy one"}`
	open := archive.Alert{Ref: "incident/cnaf.in/1", Rule: core.RuleIncident, Src: "cnaf.in", Dst: "cnaf.in", Test: "loss",
		Started: started, Value: 1, Threshold: 1, Message: "segment cnaf.in (loss, from expected paths)", Evidence: json.RawMessage(evidence)}
	s, h := costServiceWith(t, "", open)
	if got := s.Snapshot().Alerts; len(got) != 0 {
		t.Errorf("an incident is not a path's alert: %+v", got)
	}

	w := httptest.NewRecorder()
	h.ServeHTTP(w, viaListener(httptest.NewRequest("GET", "/api/v1/incidents", nil), ""))
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/incidents: %d %s: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if strings.Contains(w.Body.String(), "<b>") {
		t.Errorf("a host name reached the JSON unescaped: %s", w.Body)
	}
	var got struct{ Incidents []core.ActiveIncident }
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Incidents) != 1 {
		t.Fatalf("incidents %+v, want the one open", got.Incidents)
	}
	i := got.Incidents[0]
	if i.Key != "cnaf.in" || i.Ref != open.Ref || !i.Started.Equal(started) || i.Confidence != 1 || len(i.Paths) != 2 || i.Paths[1].Path != "<b>x</b> -> cnaf (latency)" {
		t.Errorf("incident %+v", i)
	}

	w = httptest.NewRecorder()
	h.ServeHTTP(w, viaListener(httptest.NewRequest("GET", "/metrics", nil), ""))
	for _, want := range []string{
		core.SeriesIncidentActive + `{figures="loss",segment="cnaf.in"} 1`,
		core.SeriesIncidentConfidence + `{segment="cnaf.in"} 1`,
	} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// With no incident the list is empty, not null.
func TestIncidentsAPIEmpty(t *testing.T) {
	_, h := costService(t)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, viaListener(httptest.NewRequest("GET", "/api/v1/incidents", nil), ""))
	if body := strings.TrimSpace(w.Body.String()); w.Code != 200 || !strings.Contains(body, `"incidents": []`) {
		t.Errorf("GET /api/v1/incidents: %d %s", w.Code, body)
	}
}
