package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// A test run once per family: the grid shows one family at a time, with
// a pick of the other, and the path page lists each family's run.
func TestGridFamilies(t *testing.T) {
	cfg := `testbed: grid
groups:
  sites: [cern, cnaf]
tests:
  - {name: latency, type: probe, group: sites, rate: 10/s, summary: 30s, families: [ipv4, ipv6]}
`
	now := time.Now()
	var pts []archive.Point
	for family, v := range map[string]float64{core.IPv4: 0.010, core.IPv6: 0.030} {
		pts = append(pts, archive.Point{T: now, Src: "cern", Dst: "cnaf", Test: "latency", Family: family, Metric: string(core.RTTMedian), Value: v})
	}
	_, base := viewer(t, t.TempDir(), cfg, pts, nil)
	for _, tc := range []struct{ query, title, cell string }{
		{"", "latency over ipv4", "10 ms"},
		{"?test=latency&family=ipv6", "latency over ipv6", "30 ms"},
		{"?test=latency&family=<b>", "latency over ipv4", "10 ms"},
	} {
		code, _, body := get(t, base+"/"+tc.query)
		if code != 200 || !strings.Contains(body, tc.title) || !strings.Contains(body, `<option selected>`+tc.title[len("latency over "):]+`</option>`) ||
			!strings.Contains(body, ">"+tc.cell+"</a>") || strings.Contains(body, "<b>") {
			t.Errorf("/%s: %d; want %q with a cell of %s:\n%s", tc.query, code, tc.title, tc.cell, body)
		}
	}
	code, _, body := get(t, base+"/path/cern/cnaf")
	if code != 200 || !strings.Contains(body, "latency (ipv4)") || !strings.Contains(body, "latency (ipv6)") {
		t.Errorf("/path/cern/cnaf: %d; want a row per family", code)
	}
}
