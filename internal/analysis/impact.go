package analysis

// What a load does to others, and steps the test-bed itself limited.

import (
	"fmt"
	"strings"

	"github.com/wanlab/wanlab/internal/results"
)

// impact reports what a load did to the others' round trips and loss.
func impact(w Workload) []Finding {
	var out []Finding
	for _, s := range w.Steps {
		m := s.Metrics
		if _, ok := m[results.Phase("loaded", results.RTTP50Ms)]; !ok {
			continue
		}
		i := s.Config.Impact
		out = append(out, Finding{Kind: "impact", Workload: w.Name, Values: map[string]float64{
			"idle_rtt_p50_ms": m[results.Phase("idle", results.RTTP50Ms)], "loaded_rtt_p50_ms": m[results.Phase("loaded", results.RTTP50Ms)], "rtt_inflation_ms": m[results.RTTInflationMs],
			"idle_lost_percent": m[results.Phase("idle", results.LostPercent)], "loaded_lost_percent": m[results.Phase("loaded", results.LostPercent)], "loss_increase_points": m[results.LossIncreasePts], "load_mbps": m[results.LoadMbps]},
			Text: fmt.Sprintf("A %s load %s->%s (%.1f Mbit/s) raised the round trip %s->%s from %.1f to %.1f ms (+%.1f ms) and its loss from %.1f%% to %.1f%%.",
				plural(float64(i.Streams), "stream"), i.From, i.To, m[results.LoadMbps], i.ProbeFrom, i.ProbeTo, m[results.Phase("idle", results.RTTP50Ms)], m[results.Phase("loaded", results.RTTP50Ms)],
				m[results.RTTInflationMs], m[results.Phase("idle", results.LostPercent)], m[results.Phase("loaded", results.LostPercent)])})
	}
	return out
}

// testbedLimited warns of steps whose figures describe the machine.
func testbedLimited(w Workload, ws WorkloadSteps) []Finding {
	var labels []string
	for _, s := range w.Steps {
		if s.TestbedLimited {
			labels = append(labels, orStep(s))
		}
	}
	if len(labels) == 0 {
		return nil
	}
	return []Finding{{Kind: "testbed", Workload: w.Name, Bottleneck: Testbed, Confidence: "high",
		Values: map[string]float64{"steps": float64(len(labels)), "of": float64(len(w.Steps))},
		Text: fmt.Sprintf("%d of %d steps were limited by the test-bed itself (%s): their figures describe this machine, not the scenario.",
			len(labels), len(w.Steps), strings.Join(labels, ", "))}}
}
