package web

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/cost"
)

// The cost toward targets: an iperf3 server's as a host's, a STAMP
// target's the TCP model of its probes with what it cannot predict said;
// a target is never a source.
func TestCostTowardTargets(t *testing.T) {
	const text = `testbed: grid
targets:
  refl: {stamp: "192.0.2.7"}
  srv: {iperf3: "192.0.2.9:5201"}
groups:
  near: [cern, cnaf, refl]
  bulk: [cern, srv]
tests:
  - {name: latency, type: probe, group: near, rate: 10/s, summary: 30s}
  - {name: bulk, type: throughput, group: bulk, every: 5m, duration: 5s, streams: 2}
`
	now := time.Now()
	var pts []archive.Point
	for i := range 10 {
		at := now.Add(-time.Duration(i+1) * 30 * time.Second)
		pts = append(pts, archive.Point{T: at, Src: "cern", Dst: "refl", Test: "latency", Metric: "rtt_min_seconds", Value: 0.1},
			archive.Point{T: at, Src: "cern", Dst: "refl", Test: "latency", Metric: "loss_ratio", Value: 0.01})
	}
	for i, v := range []float64{88e6, 90e6, 92e6} {
		pts = append(pts, archive.Point{T: now.Add(-time.Duration(i+1) * 5 * time.Minute), Src: "cern", Dst: "srv", Test: "bulk", Metric: "throughput_bits_per_second", Value: v})
	}
	_, h := viewing(t, text, pts)
	ask := func(method, target, body string) (int, []byte) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, viaListener(httptest.NewRequest(method, target, strings.NewReader(body)), ""))
		return w.Code, w.Body.Bytes()
	}
	for _, c := range []struct {
		name, query string
		target      string
		cannot      []string
		certainty   string
	}{
		{"iperf3 in memory", "src=cern&dst=srv&bytes=1GB&mode=memory", "iperf3", nil, "high"},
		{"iperf3 to disk", "src=cern&dst=srv&bytes=1GB", "iperf3", []string{"the far end's disk"}, "medium"},
		{"stamp", "src=cern&dst=refl&bytes=1GB&mode=memory", "stamp", []string{"measured throughput", "the far end's CPU"}, "low"},
	} {
		code, body := ask("GET", "/api/v1/cost?"+c.query, "")
		var p cost.Prediction
		if err := json.Unmarshal(body, &p); code != 200 || err != nil {
			t.Errorf("%s: %d %s", c.name, code, body)
			continue
		}
		if p.Target != c.target || !slices.Equal(p.CannotPredict, c.cannot) || p.Certainty != c.certainty || p.RateBitsPerSecond <= 0 {
			t.Errorf("%s: target %q cannot %q certainty %s rate %g; want %q %q %s", c.name, p.Target, p.CannotPredict, p.Certainty, p.RateBitsPerSecond, c.target, c.cannot, c.certainty)
		}
	}
	if code, body := ask("GET", "/api/v1/cost?src=refl&dst=cern&bytes=1GB", ""); code != 404 || !strings.Contains(string(body), "never a source") {
		t.Errorf("a target as the source: %d %s", code, body)
	}
	code, body := ask("POST", "/api/v1/rank", `{"dst": "srv", "bytes": 1000000000, "sources": ["cern", "refl", "cnaf"], "mode": "memory"}`)
	var ans RankAnswer
	if err := json.Unmarshal(body, &ans); code != 200 || err != nil || len(ans.Ranking) != 1 || ans.Ranking[0].Src != "cern" ||
		!slices.ContainsFunc(ans.Refused, func(r cost.Refusal) bool { return r.Src == "refl" && strings.Contains(r.Reason, "never a source") }) {
		t.Errorf("rank toward the iperf3 server: %d %s", code, body)
	}
}
