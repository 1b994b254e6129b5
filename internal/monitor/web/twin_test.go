package web

import (
	"encoding/json"
	"math"
	"mime"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
)

const twinConfig = `testbed: grid
groups:
  sites: [cern, cnaf, slac, "<b>x</b>"]
tests:
  - {name: latency, type: probe, group: sites, rate: 10/s, summary: 30s}
  - {name: bulk, type: throughput, group: sites, every: 5m, duration: 5s, streams: 2}
`

// hostileHost is the configuration's host whose name would be HTML.
const hostileHost = "<b>x</b>"

// twinService is a service over an archive holding two hours of cern <->
// cnaf, both ways (30 ms round trips, 0.5% lost cern->cnaf, a TCP test
// and a measure capacity run of cern->cnaf), three probe summaries of
// slac -> cnaf (too little for most of a twin), and probes of the hostile
// host and cern. more adds to the configuration (access:, say).
func twinService(t *testing.T, more string) (*service, time.Time) {
	t0 := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	var pts []archive.Point
	add := func(at time.Time, src, dst, test string, m core.Name, v float64) {
		pts = append(pts, archive.Point{T: at, Src: src, Dst: dst, Test: test, Metric: string(m), Value: v})
	}
	for i := range 100 {
		at := t0.Add(time.Duration(i) * time.Minute)
		for _, w := range [][2]string{{"cern", "cnaf"}, {"cnaf", "cern"}} {
			fwd, back := 0.005, 0.0
			if w[0] == "cnaf" {
				fwd, back = back, fwd
			}
			add(at, w[0], w[1], "latency", core.RTTMin, 0.030)
			add(at, w[0], w[1], "latency", core.Jitter, 0.0002)
			add(at, w[0], w[1], "latency", core.LossRatio, 0.005)
			add(at, w[0], w[1], "latency", core.LossForward, fwd)
			add(at, w[0], w[1], "latency", core.LossBack, back)
		}
		add(at, hostileHost, "cern", "latency", core.RTTMin, 0.010)
		add(at, hostileHost, "cern", "latency", core.LossRatio, 0)
	}
	for i := range 3 {
		at := t0.Add(time.Duration(30+i) * time.Minute)
		add(at, "cern", "cnaf", "bulk", core.ThroughputRate, 17e6)
		add(at, "slac", "cnaf", "latency", core.RTTMin, 0.150)
		add(at, "slac", "cnaf", "latency", core.LossRatio, 0)
	}
	s, _ := viewing(t, twinConfig+more, pts)
	ar := s.Archive()
	run, err := ar.StartRun(archive.NewRun{Kind: "measure capacity", Name: "cern->cnaf", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	smp := archive.Sample{T: t0.Add(10 * time.Minute), Metric: results.BandwidthCapacity, Subject: results.PathSubject("cern", "cnaf"), Value: 20e6, Unit: "bit/s"}
	if err := ar.AddSamples(run, 0, []archive.Sample{smp}); err != nil {
		t.Fatal(err)
	}
	return s, t0
}

// twinJSON is what format=json answers, in part.
type twinJSON struct {
	A, B             string
	Forward, Reverse struct {
		RateBPS    float64 `json:"rate_bps"`
		DelayS     float64 `json:"delay_s"`
		QueueBytes int64   `json:"queue_bytes"`
		Loss       float64 `json:"loss"`
		LossModel  string  `json:"loss_model"`
		CrossBPS   float64 `json:"cross_bps"`
		Unknown    []struct{ Name, Why, Default string }
	}
	History TwinHistory
}

func (f twinJSON) unknown(forward bool) string {
	us := f.Reverse.Unknown
	if forward {
		us = f.Forward.Unknown
	}
	var names []string
	for _, u := range us {
		names = append(names, u.Name)
	}
	return strings.Join(names, " ")
}

func getTwin(t *testing.T, s *service, target string) *httptest.ResponseRecorder {
	t.Helper()
	return call{method: "GET", path: target}.do(s.api.Handler())
}

// TestTwinDownload: the path's twin is a scenario to download, named by
// its hosts, that loads with wanlab's parser and whose values follow the
// archive's points; format=json gives the fitted values.
func TestTwinDownload(t *testing.T) {
	s, t0 := twinService(t, "")
	w := getTwin(t, s, "/api/v1/paths/cern/cnaf/twin")
	if w.Code != 200 {
		t.Fatalf("answered %d: %s", w.Code, w.Body)
	}
	_, params, err := mime.ParseMediaType(w.Header().Get("Content-Disposition"))
	if err != nil || !strings.HasPrefix(w.Header().Get("Content-Disposition"), "attachment;") || params["filename"] != "twin-cern-cnaf.yaml" {
		t.Errorf("Content-Disposition %q (%v), want an attachment twin-cern-cnaf.yaml", w.Header().Get("Content-Disposition"), err)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/yaml") || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("Content-Type %q, nosniff %q", ct, w.Header().Get("X-Content-Type-Options"))
	}
	text := w.Body.Bytes()
	f, err := scenario.Parse("twin.yaml", text, false)
	if err != nil {
		t.Fatalf("the twin does not load: %v\n%s", err, text)
	}
	if len(f.Testbed.Links) != 1 || f.Testbed.Links[0].A != "cern" || f.Testbed.Links[0].B != "cnaf" {
		t.Fatalf("links %+v, want one joining cern and cnaf", f.Testbed.Links)
	}
	l := f.Testbed.Links[0]
	// 20 Mbit/s measured by the capacity run; the 30 ms round trip split
	// evenly; 0.5% lost cern->cnaf only.
	if l.Forward.Rate != 20e6 || math.Abs(l.Forward.Delay.Seconds()-0.015) > 5e-4 || math.Abs(l.Reverse.Delay.Seconds()-0.015) > 5e-4 ||
		math.Abs(l.Forward.Loss.Mean()-0.005) > 1e-4 || l.Reverse.Loss.Mean() > 1e-4 {
		t.Errorf("forward %+v, reverse %+v; want 20 Mbit/s, 15 ms each way, 0.5%% lost forward only", l.Forward, l.Reverse)
	}
	for _, want := range []string{"# Fitted by wanlab serve from the history of the path from ", "# Unknown (forward queue_bytes)", "# Unknown (reverse rate_bps)"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the twin lacks %q:\n%s", want, text)
		}
	}

	w = getTwin(t, s, "/api/v1/paths/cern/cnaf/twin?format=json")
	var got twinJSON
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != 200 || err != nil {
		t.Fatalf("format=json: %d, %v: %s", w.Code, err, w.Body)
	}
	if got.A != "cern" || got.B != "cnaf" || got.Forward.RateBPS != 20e6 || math.Abs(got.Forward.Loss-0.005) > 1e-4 || got.Forward.LossModel != "bernoulli" || got.Reverse.Loss > 1e-4 {
		t.Errorf("json %+v", got)
	}
	if h := got.History; h.Cut || h.ProbesFrom != nil || h.Points < 1000 || h.Summaries != 200 || !h.From.Before(t0) || time.Since(h.To) > time.Minute {
		t.Errorf("history %+v, want all of the last 7 days", h)
	}
	for _, want := range []string{"queue_bytes", "loss_model"} {
		if !strings.Contains(got.unknown(true), want) {
			t.Errorf("forward unknowns %q lack %s", got.unknown(true), want)
		}
	}

	// A range: the capacity run (10 minutes in) and the TCP tests (30) are
	// outside the last hour: the rate rests on the default, and says so.
	q := url.Values{"from": {t0.Add(40 * time.Minute).Format(time.RFC3339)}, "to": {t0.Add(100 * time.Minute).Format(time.RFC3339)}, "format": {"json"}}
	w = getTwin(t, s, "/api/v1/paths/cern/cnaf/twin?"+q.Encode())
	got = twinJSON{}
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != 200 || err != nil {
		t.Fatalf("a range: %d, %v: %s", w.Code, err, w.Body)
	}
	if !strings.Contains(got.unknown(true), "rate_bps") || got.History.Points != 2*5*60 {
		t.Errorf("a range: forward unknowns %q, %d points; want the rate unknown, 600 points", got.unknown(true), got.History.Points)
	}
}

// TestTwinOfLittleHistory: a path with three probe summaries gives a twin
// that names what it does not know, with the default it uses.
func TestTwinOfLittleHistory(t *testing.T) {
	s, _ := twinService(t, "")
	w := getTwin(t, s, "/api/v1/paths/slac/cnaf/twin?format=json")
	var got twinJSON
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != 200 || err != nil {
		t.Fatalf("%d, %v: %s", w.Code, err, w.Body)
	}
	for _, want := range []string{"rate_bps", "queue_bytes", "loss_model", "cross_bps", "mtu"} {
		if !strings.Contains(got.unknown(true), want) {
			t.Errorf("forward unknowns %q lack %s", got.unknown(true), want)
		}
	}
	for _, u := range got.Forward.Unknown {
		if u.Why == "" || u.Default == "" {
			t.Errorf("unknown %+v: no reason or no default", u)
		}
	}
	// No summary of cnaf->slac: nothing of the reverse way is known.
	if !strings.Contains(got.unknown(false), "rate_bps") || !strings.Contains(got.unknown(false), "loss") {
		t.Errorf("reverse unknowns %q", got.unknown(false))
	}
	w = getTwin(t, s, "/api/v1/paths/slac/cnaf/twin")
	if w.Code != 200 || !strings.Contains(w.Body.String(), "# Unknown (forward rate_bps)") || !strings.Contains(w.Body.String(), "DEFAULT: ") {
		t.Errorf("%d: the scenario does not name its unknowns:\n%s", w.Code, w.Body)
	}
	if _, err := scenario.Parse("twin.yaml", w.Body.Bytes(), false); err != nil {
		t.Errorf("the twin of little history does not load: %v", err)
	}
}

// TestTwinRefuses: unknown hosts, bad ranges and formats, a span with
// nothing, and a host name a scenario cannot take.
func TestTwinRefuses(t *testing.T) {
	s, t0 := twinService(t, "")
	hostile := "/api/v1/paths/" + url.PathEscape(hostileHost) + "/cern/twin"
	for _, c := range []struct {
		name, target string
		code         int
		says         string
	}{
		{"an unknown host", "/api/v1/paths/cern/mars/twin", 404, `no host \"mars\"`},
		{"an unknown source", "/api/v1/paths/%3Cscript%3E/cnaf/twin", 404, `no host \"\u003cscript\u003e\"`},
		{"one host", "/api/v1/paths/cern/cern/twin", 400, "two different hosts"},
		{"a bad time", "/api/v1/paths/cern/cnaf/twin?from=yesterday", 400, "from and to"},
		{"from after to", "/api/v1/paths/cern/cnaf/twin?from=" + url.QueryEscape(t0.Format(time.RFC3339)) + "&to=" + url.QueryEscape(t0.Add(-time.Hour).Format(time.RFC3339)), 400, "from before to"},
		{"over 31 days", "/api/v1/paths/cern/cnaf/twin?from=" + url.QueryEscape(t0.Add(-32*24*time.Hour).Format(time.RFC3339)), 400, "at most 31d apart"},
		{"a bad format", "/api/v1/paths/cern/cnaf/twin?format=xml", 400, "format"},
		{"nothing in the range", "/api/v1/paths/cern/cnaf/twin?to=" + url.QueryEscape(t0.Add(-time.Hour).Format(time.RFC3339)), 404, "holds no results of the path between cern and cnaf"},
		{"a hostile name: no scenario", hostile, 422, "format=json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := getTwin(t, s, c.target)
			if w.Code != c.code || !strings.Contains(w.Body.String(), c.says) {
				t.Errorf("%s: %d %s, want %d saying %q", c.target, w.Code, w.Body, c.code, c.says)
			}
			if w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Content-Disposition") != "" {
				t.Errorf("Content-Type %q, Content-Disposition %q", w.Header().Get("Content-Type"), w.Header().Get("Content-Disposition"))
			}
			if strings.Contains(w.Body.String(), "<") {
				t.Errorf("a name unescaped: %s", w.Body)
			}
		})
	}
	// Its values, as JSON, escaped.
	w := getTwin(t, s, hostile+"?format=json")
	var got twinJSON
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != 200 || err != nil || got.A != hostileHost || strings.Contains(w.Body.String(), "<") {
		t.Errorf("the hostile host's twin as JSON: %d, %v, a %q:\n%s", w.Code, err, got.A, w.Body)
	}
}

// TestTwinOneAtATime: while a twin is being fitted another request is
// told to come back, not queued.
func TestTwinOneAtATime(t *testing.T) {
	s, _ := twinService(t, "")
	fitting <- struct{}{}
	w := getTwin(t, s, "/api/v1/paths/cern/cnaf/twin")
	<-fitting
	if w.Code != 503 || w.Header().Get("Retry-After") == "" || w.Header().Get("Content-Disposition") != "" {
		t.Errorf("while another is fitted: %d, Retry-After %q: %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := getTwin(t, s, "/api/v1/paths/cern/cnaf/twin"); w.Code != 200 {
		t.Errorf("after: %d: %s", w.Code, w.Body)
	}
}

// TestTwinAccess: reading the twin is a read like any other: anonymous
// where reading is open, a token where it needs one, and never through
// a Host the service is not.
func TestTwinAccess(t *testing.T) {
	_, h, tok := accessService(t, "token")
	for _, c := range []struct {
		name   string
		header map[string]string
		code   int
	}{
		{"anonymous", nil, 401},
		{"a wrong token", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"a token", map[string]string{"Authorization": "Bearer " + tok}, 200},
		{"a token, another Host", map[string]string{"Authorization": "Bearer " + tok, "Host": "evil.example"}, 421},
	} {
		w := call{method: "GET", path: "/api/v1/paths/cern/cnaf/twin", header: c.header}.do(h)
		if w.Code != c.code {
			t.Errorf("%s: %d, want %d: %s", c.name, w.Code, c.code, w.Body)
		}
		if w.Code != 200 && w.Header().Get("Content-Disposition") != "" {
			t.Errorf("%s: refused, yet a download", c.name)
		}
	}
	if w := (call{method: "POST", path: "/api/v1/paths/cern/cnaf/twin", header: map[string]string{"Authorization": "Bearer " + tok}}).do(h); w.Code != 405 && w.Code != 404 {
		t.Errorf("POST: %d, want it not served", w.Code)
	}
}

// TestCostNamesItsTwin: a cost answer of a path with a measured rate and
// round trip names the twin of the same history, which downloads; one of
// probes alone names none.
func TestCostNamesItsTwin(t *testing.T) {
	s, _ := twinService(t, "")
	var p struct {
		Twin *struct {
			Href       string    `json:"href"`
			FittedFrom time.Time `json:"fitted_from"`
			To         time.Time `json:"to"`
		} `json:"twin"`
	}
	w := getTwin(t, s, "/api/v1/cost?src=cern&dst=cnaf&bytes=1GB&mode=memory")
	if err := json.Unmarshal(w.Body.Bytes(), &p); w.Code != 200 || err != nil || p.Twin == nil {
		t.Fatalf("cost: %d, %v, twin %v: %s", w.Code, err, p.Twin, w.Body)
	}
	window := s.Config().Baseline.Window
	if d := p.Twin.To.Sub(p.Twin.FittedFrom); d < window || d > window+2*time.Second || time.Since(p.Twin.To) > time.Minute {
		t.Errorf("twin fitted from %s to %s, want the %s baseline window up to now", p.Twin.FittedFrom, p.Twin.To, window)
	}
	if !strings.HasPrefix(p.Twin.Href, TwinURL("cern", "cnaf")+"?") {
		t.Errorf("href %q", p.Twin.Href)
	}
	w = getTwin(t, s, p.Twin.Href)
	if _, err := scenario.Parse("twin.yaml", w.Body.Bytes(), false); w.Code != 200 || err != nil {
		t.Errorf("the cost's twin %s: %d, %v", p.Twin.Href, w.Code, err)
	}
	p.Twin = nil
	w = getTwin(t, s, "/api/v1/cost?src=slac&dst=cnaf&bytes=1GB&mode=memory")
	if err := json.Unmarshal(w.Body.Bytes(), &p); w.Code != 200 || err != nil || p.Twin != nil {
		t.Errorf("probes only: %d, %v, twin %+v; want none", w.Code, err, p.Twin)
	}
}

// TestTwinURLEscapes: the dashboard's link keeps a host name one segment.
func TestTwinURLEscapes(t *testing.T) {
	if got, want := TwinURL(`<img src=x>/../y`, "a b"), "/api/v1/paths/%3Cimg%20src=x%3E%2F..%2Fy/a%20b/twin"; got != want {
		t.Errorf("TwinURL = %q, want %q", got, want)
	}
}
