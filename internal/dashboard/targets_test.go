package dashboard

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
)

// A target is a column of the grid, never a row: its header says it runs
// no agent and shows its kind, and its cells hold the hosts' figures
// toward it.
func TestGridTargetColumns(t *testing.T) {
	cfg := `testbed: grid
targets:
  refl: {stamp: "192.0.2.7:862"}
  gw: {ping: 192.0.2.1}
groups:
  far: [cern, cnaf, refl, gw]
tests:
  - {name: latency, type: probe, group: far, rate: 10/s, summary: 30s}
`
	now := time.Now()
	var pts []archive.Point
	for _, src := range []string{"cern", "cnaf"} {
		for _, dst := range []string{"refl", "gw", "cern", "cnaf"} {
			if src != dst {
				pts = append(pts, archive.Point{T: now, Src: src, Dst: dst, Test: "latency", Metric: "rtt_median_seconds", Value: 0.012})
			}
		}
	}
	_, base := viewer(t, t.TempDir(), cfg, pts, nil)
	code, _, body := get(t, base+"/")
	if code != 200 {
		t.Fatalf("/: %d", code)
	}
	rows := regexp.MustCompile(`<tr><th scope="row" title="([^"]*)"`).FindAllStringSubmatch(body, -1)
	if len(rows) != 2 || rows[0][1] != "cern" || rows[1][1] != "cnaf" {
		t.Errorf("rows %q: the hosts, not the targets", rows)
	}
	cols := regexp.MustCompile(`<th class="dst( target)?" scope="col" title="([^"]*)"><span>([^<]*)(<small class="kind">([^<]*)</small>)?`).FindAllStringSubmatch(body, -1)
	var got []string
	for _, c := range cols {
		got = append(got, c[2]+"|"+c[5])
	}
	want := []string{"cern|", "cnaf|", "gw: a ping target, no agent|ping", "refl: a stamp target, no agent|stamp"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("columns %q, want %q", got, want)
	}
	if !strings.Contains(body, "4 destinations") || !strings.Contains(body, `title="cern → refl: ok"`) {
		t.Error("the grid has no cell of cern toward refl, or counts its destinations wrong")
	}
	code, _, body = get(t, base+"/path/cern/refl")
	if code != 200 || !strings.Contains(body, `id="target"`) || !strings.Contains(body, "refl is a stamp target") {
		t.Errorf("/path/cern/refl: %d, says it is a target: %v", code, strings.Contains(body, `id="target"`))
	}
}
