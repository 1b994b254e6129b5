package monitor

import (
	"slices"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// recorder is an appender that keeps what it is given.
type recorder struct{ got []record }

func (r *recorder) Put(rec record) { r.got = append(r.got, rec) }

// What the runners find goes through the service's appender alone: a
// recorder in the Store's place sees the points and the alerts, as a
// Prometheus scrape loop's Appendable would.
func TestObserveWritesThroughTheAppender(t *testing.T) {
	s := testService(t, "")
	rec := &recorder{}
	s.out = rec
	k := core.PathKey{Src: "cern", Dst: "cnaf", Test: "latency"}
	at := time.Now()
	pt := core.Point{T: at, Src: k.Src, Dst: k.Dst, Test: k.Test, Metric: string(core.RTTMin), Value: 0.012}
	s.Observe(core.Observation{Key: k, Type: core.Probe, At: at, Points: []core.Point{pt}}, nil)
	if len(rec.got) != 1 || len(rec.got[0].Points) != 1 || rec.got[0].Points[0] != pt {
		t.Fatalf("after one summary the appender has %+v, want its point", rec.got)
	}
	for i := range 5 {
		s.Observe(core.Observation{Key: k, Type: core.Probe, At: at.Add(time.Duration(i+1) * time.Minute), Failed: "cnaf does not answer"}, nil)
	}
	if !slices.ContainsFunc(rec.got, func(r record) bool { return r.Open != nil && r.Open.Rule == core.RuleNoData }) {
		t.Errorf("five failed summaries opened no %s alert through the appender: %+v", core.RuleNoData, rec.got)
	}
	if got := s.Snapshot(); !slices.ContainsFunc(got.Alerts, func(a core.Alert) bool { return a.Rule == core.RuleNoData }) {
		t.Errorf("the alert is not in the service's state: %+v", got.Alerts)
	}
}
