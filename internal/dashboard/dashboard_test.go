package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/monitor"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/tokens"
	"github.com/wanlab/wanlab/internal/monitor/web"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

// hostile is a host name that would run script if it reached the page as
// HTML, and breaks paths if not escaped.
const hostile = `<img src=x onerror="document.title='pwned'">/../x`

// site is a service over an archive of a few days of results among four
// hosts, one of them hostile: cern -> cnaf alerting, taipei never measured.
func site(t *testing.T) (*monitor.Service, string) {
	svc, base, _ := siteWithToken(t)
	return svc, base
}

// siteWithToken is site, whose tokens file admits "ops" with the token it
// returns.
func siteWithToken(t *testing.T) (*monitor.Service, string, string) {
	dir := t.TempDir()
	token, line, err := tokens.New("ops")
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte(line+"\n"), 0o600)
	cfgText := fmt.Sprintf(`access: {tokens: tokens}
testbed: grid
groups:
  sites: [cern, cnaf, %q, taipei]
tests:
  - {name: latency, type: probe, group: sites, rate: 10/s, summary: 30s}
  - {name: bulk, type: throughput, group: sites, every: 1h, duration: 5s}
  - {name: route, type: trace, group: sites, every: 10m}
`, hostile)
	now := time.Now()
	var pts []archive.Point
	measured := []string{"cern", "cnaf", hostile}
	for _, src := range measured {
		for _, dst := range measured {
			if src == dst {
				continue
			}
			// Three days of 30 s summaries, and a throughput test an hour.
			for i := range 3 * 24 * 120 {
				at := now.Add(-time.Duration(i) * 30 * time.Second)
				rtt := 0.012 + 0.001*float64(i%7)
				pts = append(pts, archive.Point{T: at, Src: src, Dst: dst, Test: "latency", Metric: "rtt_min_seconds", Value: rtt},
					archive.Point{T: at, Src: src, Dst: dst, Test: "latency", Metric: "rtt_median_seconds", Value: rtt + 0.001},
					archive.Point{T: at, Src: src, Dst: dst, Test: "latency", Metric: "loss_ratio", Value: float64(i%50) / 5000})
				if i%120 == 0 {
					pts = append(pts, archive.Point{T: at, Src: src, Dst: dst, Test: "bulk", Metric: "throughput_bits_per_second", Value: 90e6 + float64(i%11)*1e6},
						archive.Point{T: at, Src: src, Dst: dst, Test: "bulk", Metric: "src_cpu_percent", Value: 30},
						archive.Point{T: at, Src: src, Dst: dst, Test: "bulk", Metric: "dst_cpu_percent", Value: 25})
				}
			}
		}
	}
	// A router's uplink, polled by SNMP every minute for 40 days, a
	// working day's traffic each day.
	for i := range 40 * 24 * 60 {
		at := now.Add(-time.Duration(i) * time.Minute)
		day := 0.5 + 0.5*math.Sin(float64(at.Hour())/24*2*math.Pi)
		pts = append(pts, archive.Point{T: at, Src: "border", Dst: "xe-0/0/1", Test: "snmp", Metric: "in_bits_per_second", Value: 4e9 * day},
			archive.Point{T: at, Src: "border", Dst: "xe-0/0/1", Test: "snmp", Metric: "out_bits_per_second", Value: 1.5e9 * day})
	}
	svc, base := viewer(t, dir, cfgText, pts, func(ar *archive.Archive) {
		if _, err := ar.OpenAlert(archive.Alert{Ref: "a1", Rule: "rtt_step", Src: "cern", Dst: "cnaf", Test: "latency", Started: now.Add(-2 * time.Hour),
			Value: 0.05, Baseline: 0.012, Threshold: 0.005, Message: "minimum RTT 50 ms is 38 ms off its baseline <script>document.title='pwned'</script>"}); err != nil {
			t.Fatal(err)
		}
		if err := ar.AddChange(archive.Change{T: now.Add(-90 * time.Minute), What: "cern<->cnaf: delay=<b>25ms</b>", Dirs: []string{"cern->cnaf", "cnaf->cern"}}); err != nil {
			t.Fatal(err)
		}
		for i, hops := range [][]string{{"10.0.0.1", "10.9.0.1", "10.0.0.2"}, {"10.0.0.1", "10.0.0.2"}} {
			tr := probe.TraceResult{From: "cern", To: "cnaf", Reached: true}
			for j, h := range hops {
				tr.Hops = append(tr.Hops, probe.Hop{TTL: j + 1, Addr: h})
			}
			res, _ := json.Marshal(tr)
			at := now.Add(-time.Duration(2-i) * time.Hour)
			if err := ar.AddTest(archive.TestRecord{Test: "route", Kind: "trace", Src: "cern", Dst: "cnaf", Started: at, Ended: at.Add(time.Second), Status: "ok", Result: res}); err != nil {
				t.Fatal(err)
			}
		}
	})
	return svc, base, token
}

// viewer serves the dashboard of a service that views a new archive in
// dir holding pts and what add stores: the configuration's hosts, measured
// by nobody, as wanlab ui would show them.
func viewer(t testing.TB, dir, cfgText string, pts []archive.Point, add func(*archive.Archive)) (*monitor.Service, string) {
	cfg, err := monitor.Parse(filepath.Join(dir, "monitor.yaml"), []byte(cfgText))
	if err != nil {
		t.Fatal(err)
	}
	topo := &topology.Topology{Name: "grid"}
	for _, h := range cfg.Hosts() {
		topo.Hosts = append(topo.Hosts, topology.Host{Name: h})
	}
	store, err := monitor.OpenStore(filepath.Join(dir, "a.db"), filepath.Join(dir, "buffer"), core.DefaultBufferMax, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Archive().AddPoints(pts); err != nil {
		t.Fatal(err)
	}
	if add != nil {
		add(store.Archive())
	}
	svc, err := monitor.New(cfg, monitor.Options{Bed: backend.Offline(topo), Store: store, Viewer: true})
	if err != nil {
		t.Fatal(err)
	}
	api, err := web.New(svc, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(svc, api))
	t.Cleanup(srv.Close)
	return svc, srv.URL
}

func get(t testing.TB, url string) (int, http.Header, string) {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// The pages escape what comes from host names and alerts, and say where
// scripts may come from.
func TestPagesEscape(t *testing.T) {
	_, base := site(t)
	code, h, body := get(t, base+"/")
	if code != 200 || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("/: %d, CSP %q", code, h.Get("Content-Security-Policy"))
	}
	for _, bad := range []string{"<img", "<script>"} {
		if strings.Contains(body, bad) {
			t.Errorf("the grid has %s unescaped", bad)
		}
	}
	if !strings.Contains(body, "&lt;img src=x") {
		t.Error("the hostile host is not on the grid as text")
	}
	code, _, body = get(t, base+pathURL(hostile, "cern"))
	if code != 200 || strings.Contains(body, "<img") || !strings.Contains(body, "&lt;img src=x") {
		t.Errorf("the hostile host's path page: %d, escaped %v", code, !strings.Contains(body, "<img"))
	}
	if code, _, _ := get(t, base+"/static/vendor/uplot/uPlot.iife.min.js"); code != 200 {
		t.Errorf("the embedded chart library: %d", code)
	}
	if code, _, _ := get(t, base+"/path/nowhere/cern"); code != 404 {
		t.Errorf("a path with no test: %d, want 404", code)
	}
}

// /static/ serves the embedded files and no folder: no listing, on the
// service's dashboard and on wanlab ui's.
func TestStaticServesFilesOnly(t *testing.T) {
	_, service := site(t)
	for _, base := range []string{service, labArchive(t)} {
		for _, c := range []struct {
			path string
			code int
		}{
			{"/static/app.js", 200},
			{"/static/vendor/uplot/uPlot.min.css", 200},
			{"/favicon.ico", 200},
			{"/static/", 404},
			{"/static/vendor/", 404},
			{"/static/vendor", 404},
			{"/static/vendor/uplot/", 404},
			{"/static/nothing.js", 404},
		} {
			code, _, body := get(t, base+c.path)
			if code != c.code || strings.Contains(body, "<pre>") || strings.Contains(body, `href="vendor/"`) {
				t.Errorf("%s%s: %d, want %d (and no listing): %.200s", base, c.path, code, c.code, body)
			}
		}
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		metric string
		v      float64
		want   string
	}{
		{"rtt_median_seconds", 0.0121, "12.1 ms"},
		{"rtt_median_seconds", 0.3021, "302 ms"},
		{"throughput_bits_per_second", 94.2e6, "94.2Mbit/s"},
		{"loss_ratio", 0.0125, "1.25%"},
		{"src_cpu_percent", 41.6, "42%"},
		{"hop_count", 3, "3"},
	} {
		if got := Format(c.metric, c.v); got != c.want {
			t.Errorf("Format(%s, %g) = %q, want %q", c.metric, c.v, got, c.want)
		}
	}
}

// In a real browser: the grid loads, a cell links to its path page, whose
// charts draw with data; a range can be chosen; alerts show; a hostile
// host name shows as text and runs nothing. WANLAB_SCREENSHOTS=DIR saves a
// screenshot of each page kind there (docs/ has them).
func TestInBrowser(t *testing.T) {
	_, base, token := siteWithToken(t)
	ctx := testsupport.Browser(t, 90*time.Second)
	shots := os.Getenv("WANLAB_SCREENSHOTS")
	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible("#grid")); err != nil {
		t.Fatal(err)
	}
	if n := eval(`document.querySelectorAll("#grid td").length`); n != float64(16) {
		t.Errorf("%v grid cells, want 4x4", n)
	}
	if n := eval(`document.querySelectorAll("#grid td.ok").length`); n != float64(5) {
		t.Errorf("%v healthy cells, want 5 (6 measured pairs, one alerting)", n)
	}
	if n := eval(`document.querySelectorAll("#grid td.nodata").length`); n != float64(6) {
		t.Errorf("%v cells without data, want 6 (taipei's)", n)
	}
	if txt := eval(`document.querySelector("#grid td.alert").innerText`); txt != "13 ms" {
		t.Errorf("the alerting cell says %q, want its RTT, 13 ms", txt)
	}
	if v := eval(`[document.title, document.querySelectorAll("img, script:not([src])").length, document.body.innerText.includes("<img src=x")]`); fmt.Sprint(v) != "[Mesh · wanlab 0 true]" {
		t.Errorf("title, injected elements, hostile name as text: %v", v)
	}
	if err := testsupport.Screenshot(ctx, shots, "dashboard-grid.png"); err != nil {
		t.Error(err)
	}

	// A cell leads to its path page, whose charts draw with data.
	if err := chromedp.Do(ctx, chromedp.Click("#grid td.alert a"), chromedp.WaitVisible("body[data-drawn]")); err != nil {
		t.Fatal(err)
	}
	if v := eval(`document.getElementById("title").innerText`); v != "cern → cnaf" {
		t.Errorf("path page title %q", v)
	}
	if n := eval(`document.querySelectorAll(".chart canvas").length`); n.(float64) < 4 {
		t.Errorf("%v charts drawn, want throughput, RTT, loss and CPU at least", n)
	}
	if n := eval(`+document.querySelector('[data-chart="Round-trip time"]').dataset.points`); n.(float64) < 500 {
		t.Errorf("the RTT chart has %v points over a day, want many", n)
	}
	if v := eval(`document.querySelector("ul.alerts").innerText.includes("<script>")`); v != true {
		t.Errorf("the alert's message is not shown as text: %v", v)
	}
	if v := eval(`document.querySelectorAll("#hopchanges tr.changed").length`); v != float64(1) {
		t.Errorf("%v route changes shown, want 1", v)
	}
	if v := eval(`document.querySelector("#changes").innerText.includes("cern<->cnaf: delay=<b>25ms</b>")`); v != true {
		t.Errorf("the injected change is not listed as text: %v", v)
	}
	if v := eval(`document.querySelector("#route").innerText`); v != "10.0.0.1\n10.0.0.2" {
		t.Errorf("the route now: %q, want the newest trace's hops", v)
	}
	if err := testsupport.Screenshot(ctx, shots, "dashboard-path.png"); err != nil {
		t.Error(err)
	}

	// A time range: the last hour.
	before := eval(`document.body.dataset.drawn`)
	if err := chromedp.Do(ctx, chromedp.Click(`button[data-range="3600"]`), chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.body.dataset.drawn !== %q`, before))); err != nil {
		t.Fatal(err)
	}
	if n := eval(`+document.querySelector('[data-chart="Round-trip time"]').dataset.points`); n.(float64) < 100 || n.(float64) > 130 {
		t.Errorf("the RTT chart has %v points over the last hour, want about 120", n)
	}

	// Signed in, an alert is acknowledged from the page, with a note.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(`input[name="token"]`)); err != nil {
		t.Fatal(err)
	}
	if err := testsupport.Screenshot(ctx, shots, "dashboard-login.png"); err != nil {
		t.Error(err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(`input[name="token"]`, token),
		chromedp.Submit(`input[name="token"]`), chromedp.WaitVisible("#who"),
		chromedp.Navigate(base+pathURL("cern", "cnaf")), chromedp.WaitVisible("body[data-drawn]"),
		chromedp.SendKeys("ul.alerts input.note", "on it"), chromedp.Click("ul.alerts button.act"),
		chromedp.Poll[chromedp.Void](`document.getElementById("result").innerText.startsWith("Done")`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible("body[data-drawn]")); err != nil {
		t.Fatal(err)
	}
	if v := eval(`document.querySelector("ul.alerts .acked").innerText`); v != "acknowledged by ops: on it" {
		t.Errorf("after the acknowledgement: %q", v)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`header .who button`), chromedp.WaitVisible(`header .who a[href="/login"]`)); err != nil {
		t.Errorf("signing out: %v", err)
	}

	// The hostile host's own page: its name is text, and nothing ran.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+pathURL(hostile, "cern")), chromedp.WaitVisible("body[data-drawn]")); err != nil {
		t.Fatal(err)
	}
	if v := eval(`[document.getElementById("title").innerText, document.querySelectorAll("img").length, document.title]`); fmt.Sprint(v) != fmt.Sprint([]any{hostile + " → cern", 0, hostile + " → cern · wanlab"}) {
		t.Errorf("hostile path page: %v", v)
	}
	if n := eval(`document.querySelectorAll(".chart canvas").length`); n.(float64) < 3 {
		t.Errorf("%v charts on the hostile host's page: its series did not load", n)
	}

	// The interfaces, as the archive last had them; each leads to its
	// MRTG page: a day, a week, a month and a year.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/interfaces"), chromedp.WaitVisible("#ifaces")); err != nil {
		t.Fatal(err)
	}
	if v := eval(`document.querySelector("#ifaces").innerText.includes("xe-0/0/1")`); v != true {
		t.Error("the interface list lacks border's xe-0/0/1")
	}
	if err := testsupport.Screenshot(ctx, shots, "dashboard-interfaces.png"); err != nil {
		t.Error(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/interfaces/border/"+url.PathEscape("xe-0/0/1")), chromedp.WaitVisible("body[data-drawn]")); err != nil {
		t.Fatal(err)
	}
	if v := eval(`[...document.querySelectorAll(".chart")].map(c => c.dataset.points > 100)`); fmt.Sprint(v) != "[true true true true]" {
		t.Errorf("interface charts with data: %v, want 4", v)
	}
	if err := testsupport.Screenshot(ctx, shots, "dashboard-interface.png"); err != nil {
		t.Error(err)
	}

	// On a phone's width.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	if err := testsupport.Screenshot(ctx, shots, "dashboard-grid-phone.png"); err != nil {
		t.Error(err)
	}
}

// Every metric the pages and the script ask for by name is in the
// monitoring core's registry: the grid's lists (core.Of), the charts of a
// path and of an interface, the interfaces' table.
func TestDashboardMetricsAreRegistered(t *testing.T) {
	named := regexp.MustCompile(`(?:metric: |value )"([a-z_]+)"`)
	n := 0
	for _, f := range []string{"web/app.js", "templates/interfaces.html", "templates/path.html", "templates/grid.html"} {
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(data), -1) {
			n++
			if _, ok := core.ByName(m[1]); !ok {
				t.Errorf("%s asks for metric %q, which core's registry does not have", f, m[1])
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d metric names found in the pages: the pattern misses them", n)
	}
	for _, typ := range []string{core.Probe, core.Throughput, core.Transfer, core.Trace, core.Disk} {
		if len(metricsOf(typ)) == 0 {
			t.Errorf("the grid of %s tests has no metric", typ)
		}
	}
}
