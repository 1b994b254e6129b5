package analysis

// What a load does to others, and steps the test-bed itself limited.

import (
	"fmt"
	"strings"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// loadTest is a load from one host to another with probes beside it.
type loadTest interface {
	kind.Directed
	kind.Prober
	kind.Sender
}

// impact reports what a load did to the others' round trips and loss.
func impact(w Workload) []Finding {
	var out []Finding
	rtt, lost := results.Named(results.RTTP50Ms), results.Named(results.LostPercent)
	for _, s := range w.Steps {
		m := s.Metrics
		loadedRTT, ok := m.Get(rtt.InPhase(results.Loaded))
		if !ok {
			continue
		}
		idleRTT, idleLost, loadedLost := m.Value(rtt.InPhase(results.Idle)), m.Value(lost.InPhase(results.Idle)), m.Value(lost.InPhase(results.Loaded))
		i, ok := spec[loadTest](s)
		if !ok {
			continue
		}
		from, to := i.Path()
		probeFrom, probeTo := i.Probes()
		streams := i.Sending().Streams
		out = append(out, Finding{Kind: "impact", Workload: w.Name, Values: map[string]float64{
			"idle_rtt_p50_ms": idleRTT, "loaded_rtt_p50_ms": loadedRTT, "rtt_inflation_ms": s.value(results.RTTInflationMs),
			"idle_lost_percent": idleLost, "loaded_lost_percent": loadedLost, "loss_increase_points": s.value(results.LossIncreasePts), "load_mbps": s.value(results.LoadMbps)},
			Text: fmt.Sprintf("A %s load %s->%s (%.1f Mbit/s) raised the round trip %s->%s from %.1f to %.1f ms (+%.1f ms) and its loss from %.1f%% to %.1f%%.",
				plural(float64(streams), "stream"), from, to, s.value(results.LoadMbps), probeFrom, probeTo, idleRTT, loadedRTT,
				s.value(results.RTTInflationMs), idleLost, loadedLost)})
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
