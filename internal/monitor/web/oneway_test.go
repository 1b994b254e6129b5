package web

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/tokens"
)

// A probe summary's one-way figures are stored, listed among the path's
// values and exposed on /metrics with their help.
func TestOneWayFiguresExposed(t *testing.T) {
	s, h := costService(t)
	now := time.Now()
	k := core.PathKey{Src: "cern", Dst: "cnaf", Test: "latency"}
	figures := map[core.Name]float64{core.OWDForwardChange: 0.005, core.OWDBackChange: 0, core.OWDForwardUncertainty: 0.0003,
		core.OWDBackUncertainty: 0.0004, core.ClockSkew: 50}
	var pts []core.Point
	for n, v := range figures {
		pts = append(pts, core.Point{T: now, Src: k.Src, Dst: k.Dst, Test: k.Test, Metric: string(n), Value: v})
	}
	s.Observe(core.Observation{Key: k, Type: core.Probe, At: now, Points: pts}, nil)

	w := httptest.NewRecorder()
	h.ServeHTTP(w, viaListener(httptest.NewRequest("GET", "/api/v1/paths", nil), ""))
	var doc struct{ Paths []core.PathView }
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range doc.Paths {
		if p.Src != k.Src || p.Dst != k.Dst || p.Test != k.Test {
			continue
		}
		found = true
		for n, v := range figures {
			if got, ok := p.Values[string(n)]; !ok || got != v {
				t.Errorf("/api/v1/paths: %s = %v (present %v), want %v", n, got, ok, v)
			}
		}
	}
	if !found {
		t.Fatalf("/api/v1/paths lacks %s: %s", k, w.Body)
	}

	w = httptest.NewRecorder()
	h.ServeHTTP(w, viaListener(httptest.NewRequest("GET", "/metrics", nil), ""))
	labels := `dst="cnaf",family="",nmwg="delay.oneway",src="cern",test="latency"`
	for _, want := range []string{
		"# HELP wanlab_path_one_way_delay_change_seconds Change of the one-way delay",
		"# HELP wanlab_path_one_way_delay_change_uncertainty_seconds How far",
		"# HELP wanlab_path_clock_skew_ppm Drift of dst's clock",
		`wanlab_path_one_way_delay_change_seconds{direction="forward",` + labels + `} 0.005`,
		`wanlab_path_one_way_delay_change_seconds{direction="back",` + labels + `} 0`,
		`wanlab_path_one_way_delay_change_uncertainty_seconds{direction="back",` + labels + `} 0.0004`,
		`wanlab_path_clock_skew_ppm{dst="cnaf",family="",nmwg="clock.skew",src="cern",test="latency"} 50`,
	} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	w = httptest.NewRecorder()
	h.ServeHTTP(w, viaListener(httptest.NewRequest("GET", "/api/v1/paths/cern/cnaf/series?metric="+string(core.OWDForwardChange), nil), ""))
	if w.Code != 200 || !strings.Contains(w.Body.String(), "0.005") {
		t.Errorf("the stored series: %d %s", w.Code, w.Body)
	}
}

// An open incident is acknowledged through the alerts' route, its ref
// (which holds slashes) path-escaped; the archive keeps who and why.
func TestAckIncident(t *testing.T) {
	tok, line, _ := tokens.New("alice")
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	evidence := `{"segment":["cnaf.in"],"figures":["loss"],"paths":[{"path":"cern -> cnaf (latency)","figure":"loss"}],"confidence":1,"sources":["expected paths"],"reason":"loss"}`
	inc := archive.Alert{Ref: "incident/cnaf.in/1", Rule: core.RuleIncident, Src: "cnaf.in", Dst: "cnaf.in", Test: "loss",
		Started: time.Now().Add(-time.Minute), Value: 1, Threshold: 1, Message: "segment cnaf.in", Evidence: json.RawMessage(evidence)}
	s, h := costServiceWith(t, "access: {tokens: "+file+"}\n", inc)
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	for _, c := range []struct {
		name, ref string
		code      int
	}{
		{"unescaped: not the route", inc.Ref, 404},
		{"no such incident", url.PathEscape("incident/slac.in/1"), 404},
		{"the open incident", url.PathEscape(inc.Ref), 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := call{"POST", "/api/v1/alerts/" + c.ref + "/ack", `{"note": "on it"}`, bearer}.do(h)
			if w.Code != c.code {
				t.Errorf("POST: %d %s, want %d", w.Code, w.Body, c.code)
			}
		})
	}
	stored, err := s.Archive().Alerts(t.Context(), time.Time{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0].AckedBy != "alice" || stored[0].AckNote != "on it" {
		t.Errorf("stored %+v, want the incident acknowledged by alice", stored)
	}
}
