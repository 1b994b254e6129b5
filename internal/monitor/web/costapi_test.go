package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/golden"
	"github.com/wanlab/wanlab/internal/monitor"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/topology"
)

const costConfig = `testbed: grid
groups:
  sites: [cern, cnaf, slac, taipei, "<b>x</b>"]
tests:
  - {name: latency, type: probe, group: sites, rate: 10/s, summary: 30s}
  - {name: bulk, type: throughput, group: sites, every: 5m, duration: 5s, streams: 2}
  - {name: copy, type: transfer, group: sites, every: 1h, bytes: 10MB}
  - {name: disks, type: disk, group: sites, every: 6h, bytes: 32MB}
`

// costService is a service over an archive holding a few results: cern ->
// cnaf tested in memory and on disk (cnaf's disk writes 40 Mbit/s, below
// the 90 Mbit/s network), slac -> cnaf transferred disk to disk, taipei ->
// cnaf probed only, the hostile host never measured.
func costService(t testing.TB) (*service, http.Handler) { return costServiceWith(t, "") }

// service is a monitoring service and its HTTP layer.
type service struct {
	*monitor.Service
	api *API
}

// costServiceWith is costService with more configuration (access:, say)
// and alerts active in the archive.
func costServiceWith(t testing.TB, more string, active ...archive.Alert) (*service, http.Handler) {
	now := time.Now()
	var pts []archive.Point
	add := func(src, dst, test, metric string, ago time.Duration, v float64) {
		pts = append(pts, archive.Point{T: now.Add(-ago), Src: src, Dst: dst, Test: test, Metric: metric, Value: v})
	}
	for i, v := range []float64{88e6, 90e6, 92e6} {
		add("cern", "cnaf", "bulk", "throughput_bits_per_second", time.Duration(i+1)*5*time.Minute, v)
	}
	for i := range 10 {
		ago := time.Duration(i+1) * 30 * time.Second
		add("cern", "cnaf", "latency", "rtt_min_seconds", ago, 0.012)
		add("cern", "cnaf", "latency", "loss_ratio", ago, 0)
		add("slac", "cnaf", "latency", "rtt_min_seconds", ago, 0.160)
		add("slac", "cnaf", "latency", "loss_ratio", ago, 0)
		add("taipei", "cnaf", "latency", "rtt_min_seconds", ago, 0.300)
		add("taipei", "cnaf", "latency", "loss_ratio", ago, 0.01)
	}
	add("cern", "cern", "disks", "disk_read_bits_per_second", time.Hour, 800e6)
	add("cnaf", "cnaf", "disks", "disk_write_bits_per_second", time.Hour, 40e6)
	add("slac", "cnaf", "copy", "throughput_bits_per_second", 20*time.Minute, 20e6)
	add("slac", "cnaf", "copy", "throughput_bits_per_second", 80*time.Minute, 22e6)
	// A test no longer configured says nothing of streams: not used.
	add("taipei", "cnaf", "old", "throughput_bits_per_second", time.Minute, 1e9)
	return viewing(t, costConfig+more, pts, active...)
}

// viewing is a viewer's service of the configuration text, over a new
// archive holding pts and the alerts active, and its HTTP layer.
func viewing(t testing.TB, text string, pts []archive.Point, active ...archive.Alert) (*service, http.Handler) {
	cfg, err := monitor.Parse(filepath.Join(t.TempDir(), "cost.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	topo := &topology.Topology{Name: "grid"}
	for _, h := range cfg.Hosts() {
		topo.Hosts = append(topo.Hosts, topology.Host{Name: h})
	}
	store, err := monitor.OpenStore(filepath.Join(t.TempDir(), "a.db"), t.TempDir(), core.DefaultBufferMax, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Archive().AddPoints(pts); err != nil {
		t.Fatal(err)
	}
	for _, a := range active {
		if _, err := store.Archive().OpenAlert(a); err != nil {
			t.Fatal(err)
		}
	}
	s, err := monitor.New(cfg, monitor.Options{Bed: backend.Offline(topo), Store: store, Viewer: true})
	if err != nil {
		t.Fatal(err)
	}
	api, err := New(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &service{s, api}, api.Handler()
}

// scrub replaces what depends on the clock, for the golden file.
func scrub(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "newest":
				x[k] = "T"
			case "age_seconds":
				x[k] = "AGE"
			case "twin":
				x[k] = "TWIN" // its href and span are the clock's
			default:
				x[k] = scrub(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = scrub(e)
		}
	}
	return v
}

func TestCostAPI(t *testing.T) {
	_, h := costService(t)
	cases := []struct {
		name, method, target, body string
		code                       int
	}{
		{"memory to memory: the network", "GET", "/api/v1/cost?src=cern&dst=cnaf&bytes=1GB&mode=memory", "", 200},
		{"disk to disk: the destination's disk", "GET", "/api/v1/cost?src=cern&dst=cnaf&bytes=1000000000", "", 200},
		{"transfers of the path", "GET", "/api/v1/cost?src=slac&dst=cnaf&bytes=100MB", "", 200},
		{"probes only: a model", "GET", "/api/v1/cost?src=taipei&dst=cnaf&bytes=100MB", "", 200},
		{"no data: refused", "GET", "/api/v1/cost?src=%3Cb%3Ex%3C%2Fb%3E&dst=cnaf&bytes=1GB", "", 404},
		{"unknown host", "GET", "/api/v1/cost?src=nowhere&dst=cnaf&bytes=1GB", "", 404},
		{"bad size", "GET", "/api/v1/cost?src=cern&dst=cnaf&bytes=lots", "", 400},
		{"bad mode", "GET", "/api/v1/cost?src=cern&dst=cnaf&bytes=1GB&mode=tape", "", 400},
		{"same host", "GET", "/api/v1/cost?src=cern&dst=cern&bytes=1GB", "", 400},
		{"rank", "POST", "/api/v1/rank", `{"dst": "cnaf", "bytes": 1000000000, "sources": ["taipei", "cern", "slac", "<b>x</b>", "mars", "cnaf"]}`, 200},
		{"rank: unknown field", "POST", "/api/v1/rank", `{"dst": "cnaf", "bytes": 1, "sources": ["cern"], "rm": "-rf"}`, 400},
		{"rank: no sources", "POST", "/api/v1/rank", `{"dst": "cnaf", "bytes": 1, "sources": []}`, 400},
		{"rank: too many sources", "POST", "/api/v1/rank", `{"dst": "cnaf", "bytes": 1, "sources": [` + strings.Repeat(`"a",`, 100) + `"a"]}`, 400},
	}
	var out strings.Builder
	for _, c := range cases {
		req := viaListener(httptest.NewRequest(c.method, c.target, strings.NewReader(c.body)), "")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.code {
			t.Errorf("%s: %s %s answered %d, want %d: %s", c.name, c.method, c.target, w.Code, c.code, w.Body)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", c.name, ct)
		}
		var v any
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s: not JSON: %v: %s", c.name, err, w.Body)
		}
		b, _ := json.MarshalIndent(scrub(v), "", "  ")
		fmt.Fprintf(&out, "# %s: %s %s -> %d\n%s\n", c.name, c.method, c.target, w.Code, b)
	}
	golden.Check(t, "testdata/cost.golden", out.String())
}

func TestRankPicksTheFastest(t *testing.T) {
	_, h := costService(t)
	req := viaListener(httptest.NewRequest("POST", "/api/v1/rank", strings.NewReader(`{"dst": "cnaf", "bytes": 1000000000, "sources": ["taipei", "cern", "slac"]}`)), "")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var ans RankAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, p := range ans.Ranking {
		order = append(order, p.Src)
	}
	// cern's 90 Mbit/s network is held to cnaf's 40 Mbit/s disk; slac's
	// transfers reach 20; taipei's probes model a 1% lossy 300 ms path.
	if strings.Join(order, " ") != "cern slac taipei" {
		t.Errorf("ranking %v, want cern slac taipei", order)
	}
}
