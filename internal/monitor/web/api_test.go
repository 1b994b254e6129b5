package web

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
	for _, r := range s.api.Routes() {
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

// The lists read from the archive (tests, alerts since a time, the audit)
// are JSON lists under their key: empty, never null, when there is nothing.
// (The access service's one alert is active, so it is in every list of alerts.)
func TestListsFromTheArchive(t *testing.T) {
	_, h, tok := accessService(t, "open")
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	earlier, later := time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		call call
		key  string
		n    int
	}{
		{call{"GET", "/api/v1/paths/cern/cnaf/tests", "", nil}, "tests", 0},
		{call{"GET", "/api/v1/alerts?since=" + earlier, "", nil}, "alerts", 1},
		{call{"GET", "/api/v1/audit?since=" + later, "", bearer}, "audit", 0},
	} {
		w := c.call.do(h)
		var doc map[string][]json.RawMessage
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || w.Code != http.StatusOK {
			t.Errorf("%s: %d %s (%v)", c.call.path, w.Code, w.Body, err)
			continue
		}
		if list, ok := doc[c.key]; !ok || list == nil || len(list) != c.n {
			t.Errorf("%s: %s, want a list of %d under %q", c.call.path, w.Body, c.n, c.key)
		}
	}
}

func TestIntParam(t *testing.T) {
	for _, c := range []struct {
		query string
		n     int
		ok    bool
	}{
		{"", 20, true},
		{"limit=1", 1, true},
		{"limit=1000", 1000, true},
		{"limit=0", 0, false},
		{"limit=1001", 0, false},
		{"limit=-1", 0, false},
		{"limit=ten", 0, false},
		{"limit=99999999999999999999", 0, false},
	} {
		r := httptest.NewRequest("GET", "/x?"+c.query, nil)
		if n, ok := intParam(r, "limit", 20, 1, 1000); n != c.n || ok != c.ok {
			t.Errorf("%q: %d, %v, want %d, %v", c.query, n, ok, c.n, c.ok)
		}
	}
}
