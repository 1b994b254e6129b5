package monitor

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// A path's view says which address family its fresh result used, as the
// result said it; a result that does not say shows none.
func TestPathViewFamily(t *testing.T) {
	s := testService(t, "")
	s.out = &recorder{}
	k := core.PathKey{Src: "cern", Dst: "cnaf", Test: "latency"}
	at := time.Now()
	for _, family := range []string{measure.IPv6, ""} {
		pt := core.Point{T: at, Src: k.Src, Dst: k.Dst, Test: k.Test, Metric: string(core.RTTMin), Value: 0.012}
		s.Observe(core.Observation{Key: k, Type: core.Probe, At: at, Points: []core.Point{pt}, Family: family}, nil)
		shown := false
		for _, p := range s.Snapshot().Paths {
			if p.Src == k.Src && p.Dst == k.Dst && p.Test == k.Test {
				shown = true
				if p.State == "no data" || p.Family != family {
					t.Errorf("after a result of family %q the path shows %+v", family, p)
				}
			}
		}
		if !shown {
			t.Fatalf("the path %v is not in the snapshot", k)
		}
		at = at.Add(time.Second)
	}
}
