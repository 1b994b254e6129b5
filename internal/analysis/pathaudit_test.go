package analysis

import (
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// On real hosts, each measured path is set against the scenario's, and
// the TCP model of the scenario's path is not fitted.
func TestPathAudit(t *testing.T) {
	tb := testbedOf(t, "name: t\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b], rate: 100Mbit, delay: 10ms, loss: 1%}\n")
	thr := Workload{Name: "thr", Kind: "throughput", Testbed: tb, RealHosts: true, Steps: []Step{
		{Index: 0, Status: "done", Metrics: map[string]float64{"throughput_mbps": 50}, Config: scenario.Step{Spec: &throughput.Step{From: "a", To: "b", Streams: 1, Protocol: "tcp"}}},
		{Index: 1, Status: "done", Metrics: map[string]float64{"throughput_mbps": 80}, Config: scenario.Step{Spec: &throughput.Step{From: "a", To: "b", Streams: 4, Protocol: "tcp"}}},
		{Index: 2, Status: "failed", Metrics: map[string]float64{"throughput_mbps": 999}, Config: scenario.Step{Spec: &throughput.Step{From: "a", To: "b", Streams: 8, Protocol: "tcp"}}},
	}}
	prb := Workload{Name: "rtt", Kind: "probe", Testbed: tb, RealHosts: true, Steps: []Step{
		{Index: 3, Status: "done", Metrics: map[string]float64{"rtt_p50_ms": 23.5, "lost_percent": 2}, Config: scenario.Step{Spec: &probe.Step{From: "a", To: "b"}}},
	}}
	r := Of([]Workload{thr, prb}, DefaultOptions)
	var audits []Finding
	for _, f := range r.Findings {
		switch f.Kind {
		case "path_audit":
			audits = append(audits, f)
		case "model_fit":
			t.Errorf("a model fit on real hosts: %q", f.Text)
		}
	}
	if len(audits) != 1 {
		t.Fatalf("%d path audits, want 1 (a->b): %+v", len(audits), audits)
	}
	v := audits[0].Values
	want := map[string]float64{"expected_mbps": 100, "expected_rtt_ms": 20, "measured_mbps": 80, "measured_rtt_ms": 23.5, "measured_loss_pct": 2}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("%s = %v, want %v (%+v)", k, v[k], w, v)
		}
	}
	if !strings.Contains(audits[0].Text, "80.0 Mbit/s (best of thr), 80% of the expected rate") || !strings.Contains(audits[0].Text, "+3.5 ms against the expected") {
		t.Errorf("text %q", audits[0].Text)
	}
	thr.RealHosts, prb.RealHosts = false, false
	for _, f := range Of([]Workload{thr, prb}, DefaultOptions).Findings {
		if f.Kind == "path_audit" {
			t.Errorf("a path audit of an emulated run: %q", f.Text)
		}
	}
}
