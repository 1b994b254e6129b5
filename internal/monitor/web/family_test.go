package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

const familiesConfig = `testbed: grid
groups:
  sites: [cern, cnaf]
tests:
  - {name: lat, type: probe, group: sites, rate: 10/s, summary: 30s, families: [ipv4, ipv6]}
`

// A pair tested over both families: /metrics labels each run's series
// and alerts with its family (and an alert with its scope), the paths say
// theirs, and a path's series can be read one family at a time.
func TestFamiliesExposed(t *testing.T) {
	now := time.Now()
	var pts []archive.Point
	for i := range 3 {
		at := now.Add(-time.Duration(i+1) * 20 * time.Second)
		pts = append(pts, archive.Point{T: at, Src: "cern", Dst: "cnaf", Test: "lat", Family: core.IPv4, Metric: string(core.RTTMin), Value: 0.010},
			archive.Point{T: at, Src: "cern", Dst: "cnaf", Test: "lat", Family: core.IPv6, Metric: string(core.RTTMin), Value: 0.030})
	}
	alert := archive.Alert{Ref: "loss_above/cern/cnaf/lat/ipv6/1", Rule: core.RuleLossAbove, Src: "cern", Dst: "cnaf", Test: "lat",
		Started: now.Add(-time.Minute), Message: "IPv6 only (IPv4 healthy): loss", Family: core.IPv6, Scope: core.ScopeIPv6Only}
	_, h := viewing(t, familiesConfig, pts, alert)
	get := func(url string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, viaListener(httptest.NewRequest("GET", url, nil), ""))
		return w
	}
	metrics := get("/metrics").Body.String()
	for _, want := range []string{
		`wanlab_path_rtt_seconds{dst="cnaf",family="ipv4",nmwg="delay.roundtrip",src="cern",stat="min",test="lat"} 0.01`,
		`wanlab_path_rtt_seconds{dst="cnaf",family="ipv6",nmwg="delay.roundtrip",src="cern",stat="min",test="lat"} 0.03`,
		`wanlab_path_up{dst="cnaf",family="ipv6",src="cern",test="lat",type="probe"} 1`,
		`wanlab_alert_active{dst="cnaf",family="ipv6",rule="loss_above",scope="ipv6-only",src="cern",test="lat"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var paths struct{ Paths []core.PathView }
	if err := json.Unmarshal(get("/api/v1/paths").Body.Bytes(), &paths); err != nil {
		t.Fatal(err)
	}
	var families []string
	for _, p := range paths.Paths {
		if p.Src == "cern" && p.Dst == "cnaf" {
			if !p.PerFamily || p.State == "no data" {
				t.Errorf("path %+v: want a fresh run of one family", p)
			}
			families = append(families, p.Family)
		}
	}
	if strings.Join(families, " ") != "ipv4 ipv6" {
		t.Errorf("cern->cnaf shows families %v, want ipv4 and ipv6", families)
	}
	for _, tc := range []struct {
		query  string
		code   int
		points int
		value  float64
	}{
		{"", http.StatusOK, 6, 0},
		{"&family=ipv6", http.StatusOK, 3, 0.030},
		{"&family=ipv4", http.StatusOK, 3, 0.010},
		{"&family=none", http.StatusOK, 0, 0},
		{"&family=ipv5", http.StatusBadRequest, 0, 0},
		{"&family=ipv4&family=ipv6", http.StatusBadRequest, 0, 0},
	} {
		w := get("/api/v1/paths/cern/cnaf/series?metric=rtt_min_seconds" + tc.query)
		if w.Code != tc.code {
			t.Errorf("series%s: %d %s, want %d", tc.query, w.Code, w.Body, tc.code)
			continue
		}
		var doc struct{ Points []archive.Point }
		json.Unmarshal(w.Body.Bytes(), &doc)
		if len(doc.Points) != tc.points {
			t.Errorf("series%s: %d points, want %d", tc.query, len(doc.Points), tc.points)
		}
		for _, p := range doc.Points {
			if tc.value != 0 && p.Value != tc.value {
				t.Errorf("series%s: %+v", tc.query, p)
			}
		}
	}
	var alerts struct{ Alerts []core.Alert }
	if err := json.Unmarshal(get("/api/v1/alerts").Body.Bytes(), &alerts); err != nil || len(alerts.Alerts) != 1 ||
		alerts.Alerts[0].Family != core.IPv6 || alerts.Alerts[0].Scope != core.ScopeIPv6Only {
		t.Errorf("alerts %+v, %v; want the ipv6-only one", alerts, err)
	}
}
