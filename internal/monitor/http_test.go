package monitor

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/archive"
)

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi: %q, want 3.x", doc.OpenAPI)
	}
	s, _ := costService(t)
	served := map[string]bool{"/metrics get": true}
	for _, r := range s.HTTP().Routes() {
		key := r.Pattern + " " + strings.ToLower(r.Method)
		served[key] = true
		if doc.Paths[r.Pattern][strings.ToLower(r.Method)] == nil {
			t.Errorf("%s %s is served but not in openapi.yaml", r.Method, r.Pattern)
		}
	}
	for p, ops := range doc.Paths {
		for m := range ops {
			if !served[p+" "+m] {
				t.Errorf("openapi.yaml documents %s %s, which is not served", strings.ToUpper(m), p)
			}
		}
	}
}

func TestReduceKeepsExtremes(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var pts []archive.Point
	for i := range 86400 { // 30 days of a 30 s summary
		v := 0.1
		if i == 40000 {
			v = 9 // one spike
		}
		if i == 60000 {
			v = -1 // one dip
		}
		pts = append(pts, archive.Point{T: t0.Add(time.Duration(i) * 30 * time.Second), Test: "lat", Value: v})
	}
	got := Reduce(pts, 2000)
	if len(got) > 2000 || len(got) < 1000 {
		t.Fatalf("%d points kept, want at most 2000 and most of them", len(got))
	}
	var spike, dip bool
	for i, p := range got {
		spike = spike || p.Value == 9
		dip = dip || p.Value == -1
		if i > 0 && p.T.Before(got[i-1].T) {
			t.Fatalf("point %d is out of time order", i)
		}
	}
	if !spike || !dip {
		t.Errorf("spike kept %v, dip kept %v: both must show", spike, dip)
	}
	if short := Reduce(pts[:10], 2000); len(short) != 10 {
		t.Errorf("a short series lost points: %d of 10", len(short))
	}
}

// FuzzAPI sends what a network peer may send (any method, path, query,
// body and token) to the API behind its guard: it never panics, never
// answers 5xx, and its errors are JSON.
func FuzzAPI(f *testing.F) {
	for _, seed := range [][4]string{
		{"GET", "/api/v1/cost?src=cern&dst=cnaf&bytes=1GB", "", ""},
		{"POST", "/api/v1/rank", `{"dst": "cnaf", "bytes": 1, "sources": ["cern", "slac"]}`, ""},
		{"GET", "/api/v1/paths/cern/cnaf/series?metric=rtt_min_seconds&from=0&to=1e10&max=10", "", ""},
		{"POST", "/api/v1/alerts/r1/ack", `{"note": "x"}`, "Bearer wl_x"},
		{"POST", "/api/v1/paths/cern/cnaf/run", `{"test": "bulk"}`, ""},
		{"GET", "/api/v1/audit?limit=-1", "", "Bearer "},
		{"GET", "/api/v1/paths/%2e%2e/x/tests?limit=99999999999", "", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	_, h := costService(f)
	f.Fuzz(func(t *testing.T, method, target, body, auth string) {
		if method != "GET" && method != "POST" || !strings.HasPrefix(target, "/") {
			return
		}
		req, err := http.NewRequest(method, "http://wanlab"+target, strings.NewReader(body))
		if err != nil {
			return
		}
		req.RemoteAddr = "192.0.2.1:1"
		req = viaListener(req, "")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body)
		}
		if w.Code >= 400 && strings.HasPrefix(req.URL.Path, "/api/") && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %s: %d and not JSON: %s", method, target, w.Code, w.Body)
		}
	})
}
