package web

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// TestTwinFamily: of a path measured over both address families, the
// twin is of the one with the most probe summaries, or of ?family=.
func TestTwinFamily(t *testing.T) {
	t0 := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	var pts []archive.Point
	for _, f := range []struct {
		family string
		n      int
		rtt    float64
	}{{core.IPv4, 60, 0.030}, {core.IPv6, 30, 0.050}} {
		for i := range f.n {
			for _, w := range [][2]string{{"cern", "cnaf"}, {"cnaf", "cern"}} {
				at := t0.Add(time.Duration(i) * time.Minute)
				pts = append(pts, archive.Point{T: at, Src: w[0], Dst: w[1], Test: "latency", Metric: string(core.RTTMin), Value: f.rtt, Family: f.family},
					archive.Point{T: at, Src: w[0], Dst: w[1], Test: "latency", Metric: string(core.LossRatio), Value: 0, Family: f.family})
			}
		}
	}
	s, _ := viewing(t, twinConfig, pts)
	for _, tc := range []struct {
		query     string
		rtt       float64
		summaries int
	}{{"", 0.030, 120}, {"&family=ipv4", 0.030, 120}, {"&family=ipv6", 0.050, 60}} {
		w := getTwin(t, s, "/api/v1/paths/cern/cnaf/twin?format=json"+tc.query)
		var got twinJSON
		if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != 200 || err != nil {
			t.Fatalf("%q: %d, %v: %s", tc.query, w.Code, err, w.Body)
		}
		if rtt := got.Forward.DelayS + got.Reverse.DelayS; math.Abs(rtt-tc.rtt) > 0.05*tc.rtt || got.History.Summaries != tc.summaries {
			t.Errorf("%q: a round trip of %g s, %d summaries; want %g s, %d", tc.query, rtt, got.History.Summaries, tc.rtt, tc.summaries)
		}
	}
	if w := getTwin(t, s, "/api/v1/paths/cern/cnaf/twin?family=ipv5"); w.Code != 400 {
		t.Errorf("family=ipv5: %d, want 400: %s", w.Code, w.Body)
	}
}
