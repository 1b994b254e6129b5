package analysis

// The path audit of a run on real hosts: the scenario's links are not
// built there but are what the paths were expected to be; each measured
// pair of hosts is set against its expected rate, round trip and loss.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// measured is what a run measured of one path.
type measured struct {
	mbps, rttMs, lostPct float64 // -1: not measured
	what                 string  // the workload that gave the rate
}

// pathAudit sets every measured path of a real-hosts run against the
// path its scenario describes.
func pathAudit(workloads []Workload) []Finding {
	seen := map[[2]string]*measured{}
	var order [][2]string
	at := func(from, to string) *measured {
		k := [2]string{from, to}
		if m, ok := seen[k]; ok {
			return m
		}
		m := &measured{mbps: -1, rttMs: -1, lostPct: -1}
		seen[k] = m
		order = append(order, k)
		return m
	}
	rate := func(m *measured, v float64, what string) {
		if v > m.mbps {
			m.mbps, m.what = v, what
		}
	}
	rtt := func(m *measured, rtt, lost float64, ok bool) {
		if !ok {
			return
		}
		if m.rttMs < 0 || rtt < m.rttMs {
			m.rttMs = rtt
		}
		m.lostPct = max(m.lostPct, lost)
	}
	var tb = workloads[0].Testbed
	for _, w := range workloads {
		for _, s := range w.Steps {
			m, ok := spec[kind.Measurer](s)
			if !ok || s.Status != "done" {
				continue
			}
			for _, f := range m.Measures() {
				if f.Rate != (results.Figure{}) {
					rate(at(f.From, f.To), s.Metrics.Value(f.Rate), w.Name)
				}
				if f.RTT != (results.Figure{}) {
					v, ok := s.Metrics.Get(f.RTT)
					rtt(at(f.From, f.To), v, s.Metrics.Value(f.Loss), ok)
				}
			}
		}
	}
	slices.SortStableFunc(order, func(a, b [2]string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]))
	})
	var out []Finding
	for _, k := range order {
		m := seen[k]
		p, ok := path(tb, k[0], k[1])
		if !ok {
			continue
		}
		v := map[string]float64{"expected_mbps": p.Bottleneck / 1e6, "expected_rtt_ms": p.BaseRTTms, "expected_loss_pct": 100 * p.Loss,
			"measured_mbps": m.mbps, "measured_rtt_ms": m.rttMs, "measured_loss_pct": m.lostPct}
		text := fmt.Sprintf("%s->%s: expected %s, %.4g ms, %s loss (the scenario's links); measured %s, %s, %s.",
			k[0], k[1], rateText(p.Bottleneck), p.BaseRTTms, units.FormatPercent(p.Loss),
			measuredRate(m, p.Bottleneck), measuredRTT(m, p.BaseRTTms), measuredLoss(m))
		out = append(out, Finding{Kind: "path_audit", Text: text, Values: v})
	}
	return out
}

func rateText(bps float64) string {
	if bps <= 0 {
		return "an unlimited rate"
	}
	if bps >= 1e9 {
		return fmt.Sprintf("%.3g Gbit/s", bps/1e9)
	}
	return fmt.Sprintf("%.4g Mbit/s", bps/1e6)
}

func measuredRate(m *measured, expected float64) string {
	if m.mbps < 0 {
		return "no rate (no throughput, transfer or load step)"
	}
	s := fmt.Sprintf("%.1f Mbit/s (best of %s)", m.mbps, m.what)
	if expected > 0 {
		s += fmt.Sprintf(", %s of the expected rate", ratio(m.mbps*1e6/expected))
	}
	return s
}

func measuredRTT(m *measured, expected float64) string {
	if m.rttMs < 0 {
		return "no round trip (no probe step)"
	}
	s := fmt.Sprintf("a round trip of %.4g ms", m.rttMs)
	if expected > 0 {
		s += fmt.Sprintf(" (%+.4g ms against the expected)", m.rttMs-expected)
	}
	return s
}

func measuredLoss(m *measured) string {
	if m.lostPct < 0 {
		return "no loss figure"
	}
	return fmt.Sprintf("%.3g%% loss", m.lostPct)
}

// ratio says how a measured figure compares with the expected one: as a
// percentage near it, as a multiple far above it.
func ratio(r float64) string {
	switch {
	case math.IsInf(r, 0) || math.IsNaN(r):
		return "-"
	case r >= 10:
		return fmt.Sprintf("%.0fx", r)
	case r >= 2:
		return fmt.Sprintf("%.1fx", r)
	}
	return fmt.Sprintf("%.0f%%", 100*r)
}
