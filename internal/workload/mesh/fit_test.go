package mesh

import (
	"testing"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// TestFit: bottleneck_efficiency is the transfers' payload, which crosses
// two link directions, over what the directions carried in the step.
func TestFit(t *testing.T) {
	ok := []job.Record{{Bytes: 4e6, Status: job.OK}, {Bytes: 6e6, Status: job.OK}}
	// 10 MB twice over the step's 10 s is 16 Mbit/s; the links carried 17.
	links := results.Metrics{"link_mbps.site a up": 8.5, "link_mbps.site b down": 8.5, "link_mbps.site a down": 0, results.Transfers: 2}
	for _, c := range []struct {
		name string
		m    kind.Measured
		want map[string]float64
	}{
		{"payload over wire", kind.Measured{Seconds: 10, Jobs: ok, Metrics: links}, map[string]float64{"bottleneck_efficiency": 16.0 / 17}},
		{"a failed transfer", kind.Measured{Seconds: 10, Jobs: append(ok, job.Record{Bytes: 1e6, Status: job.Failed}), Metrics: links}, map[string]float64{}},
		{"no links", kind.Measured{Seconds: 10, Jobs: ok, Metrics: results.Metrics{}}, map[string]float64{}},
		{"no time", kind.Measured{Jobs: ok, Metrics: links}, map[string]float64{}},
	} {
		c.m.Spec = &Spec{Hosts: []string{"a", "b"}, Streams: 1}
		got, err := model.Fit(&kindtest.ModelEnv{}, c.m)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		kindtest.CheckFit(t, c.name, got, c.want)
	}
}
