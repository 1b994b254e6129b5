package monitor

import (
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
	for _, r := range s.Routes() {
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
