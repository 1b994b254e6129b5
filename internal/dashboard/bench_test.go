package dashboard

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// mesh50 is a viewer of an archive holding a result of every path of a
// 50-host probe mesh, and 30 days of 30 s summaries of one path.
func mesh50(b *testing.B) string {
	var hosts []string
	for i := range 50 {
		hosts = append(hosts, fmt.Sprintf("h%02d", i))
	}
	cfgText := fmt.Sprintf("testbed: m\ngroups: {all: [%s]}\ntests:\n  - {name: latency, type: probe, group: all, rate: 1/s, summary: 30s}\n", strings.Join(hosts, ", "))
	now := time.Now()
	var pts []archive.Point
	for _, s := range hosts {
		for _, d := range hosts {
			if s != d {
				pts = append(pts, archive.Point{T: now, Src: s, Dst: d, Test: "latency", Metric: "rtt_median_seconds", Value: 0.01})
			}
		}
	}
	for i := range 30 * 24 * 120 {
		at := now.Add(-time.Duration(i) * 30 * time.Second)
		for _, m := range []string{"rtt_min_seconds", "rtt_median_seconds", "rtt_max_seconds", "loss_ratio", "jitter_seconds"} {
			pts = append(pts, archive.Point{T: at, Src: "h00", Dst: "h01", Test: "latency", Metric: m, Value: 0.01 + float64(i%13)*1e-4})
		}
	}
	_, base := viewer(b, b.TempDir(), cfgText, pts, nil)
	return base
}

// BenchmarkGrid50x50 is the server's time to render a 50x50 mesh grid.
func BenchmarkGrid50x50(b *testing.B) {
	base := mesh50(b)
	for b.Loop() {
		if code, _, body := get(b, base+"/"); code != 200 || strings.Count(body, `<td class="ok"`) != 2450 {
			b.Fatalf("grid: %d, %d cells ok", code, strings.Count(body, `<td class="ok"`))
		}
	}
}

// BenchmarkInBrowser times, in headless Chromium, a 50x50 grid from the
// request to its last cell on screen, and a path's 30 days of series (five
// metrics of 86,400 points each, reduced by the server) from the click on
// "30 d" to every chart drawn. Target: well under a second each.
func BenchmarkInBrowser(b *testing.B) {
	base := mesh50(b)
	ctx := testsupport.Browser(b, 5*time.Minute)
	var grid, series time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible("#grid tr:last-child td:last-child")); err != nil {
			b.Fatal(err)
		}
		grid += time.Since(t0)
		if err := chromedp.Do(ctx, chromedp.Navigate(base+pathURL("h00", "h01")), chromedp.WaitVisible("body[data-drawn]")); err != nil {
			b.Fatal(err)
		}
		before, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.drawn`))
		t0 = time.Now()
		if err := chromedp.Do(ctx, chromedp.Click(`button[data-range="2592000"]`), chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.body.dataset.drawn !== %q`, before))); err != nil {
			b.Fatal(err)
		}
		series += time.Since(t0)
	}
	b.ReportMetric(float64(grid.Milliseconds())/float64(b.N), "grid50x50_ms")
	b.ReportMetric(float64(series.Milliseconds())/float64(b.N), "series30d_ms")
}
