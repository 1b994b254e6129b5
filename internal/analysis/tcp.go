package analysis

// Throughput tests against the path: the best streams and window, and the
// TCP model.

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/units"
)

// path returns the path between two hosts of a workload's test-bed (none
// for an imported test on a real path).
func path(tb *scenario.Testbed, from, to string) (p topology.Path, ok bool) {
	if tb == nil {
		return p, false
	}
	t, err := topology.New(tb)
	if err != nil {
		return p, false
	}
	return t.Path(from, to)
}

// tuning finds the best streams and window of a throughput sweep; of a
// single test it reports what it achieved.
func tuning(w Workload) []Finding {
	if len(w.Steps) == 1 && w.Steps[0].Config.Throughput != nil {
		s := w.Steps[0]
		t := s.Config.Throughput
		return []Finding{{Kind: "throughput", Workload: w.Name, Values: map[string]float64{"throughput_mbps": s.Metrics[results.ThroughputMbps], "streams": float64(t.Streams), "retransmits": s.Metrics[results.Retransmits]},
			Text: fmt.Sprintf("%s->%s: %.2f Mbit/s with %s (%.0f retransmits).", t.From, t.To, s.Metrics[results.ThroughputMbps], plural(float64(t.Streams), "stream"), s.Metrics[results.Retransmits])}}
	}
	if len(w.Steps) < 2 {
		return nil
	}
	best, base := -1, -1
	for i, s := range w.Steps {
		if best < 0 || s.Metrics[results.ThroughputMbps] > w.Steps[best].Metrics[results.ThroughputMbps] {
			best = i
		}
		if base < 0 || s.Config.Throughput.Streams < w.Steps[base].Config.Throughput.Streams {
			base = i
		}
	}
	b, one := w.Steps[best], w.Steps[base]
	t := b.Config.Throughput
	if _, swept := b.Params["streams"]; !swept {
		if _, swept := b.Params["window"]; !swept {
			return nil // repeats of one setting: see asymmetry
		}
	}
	values := map[string]float64{"best_mbps": b.Metrics[results.ThroughputMbps], "best_streams": float64(t.Streams), "best_window_bytes": float64(t.Window),
		"baseline_mbps": one.Metrics[results.ThroughputMbps], "baseline_streams": float64(one.Config.Throughput.Streams)}
	if one.Metrics[results.ThroughputMbps] > 0 {
		values["gain"] = b.Metrics[results.ThroughputMbps] / one.Metrics[results.ThroughputMbps]
	}
	window := "autotuned windows"
	if t.Window > 0 {
		window = units.Size(t.Window).String() + " windows"
	}
	text := fmt.Sprintf("%s->%s: best %.2f Mbit/s with %s and %s, %.1fx the %.2f Mbit/s of %s.", t.From, t.To, values["best_mbps"],
		plural(float64(t.Streams), "stream"), window, values["gain"], values["baseline_mbps"], plural(values["baseline_streams"], "stream"))
	if p, ok := path(w.Testbed, t.From, t.To); ok && p.Bottleneck > 0 {
		bdp := p.Bottleneck * p.BaseRTTms / 1000 / 8
		values["bdp_bytes"], values["bottleneck_mbps"], values["base_rtt_ms"] = bdp, p.Bottleneck/1e6, p.BaseRTTms
		text += fmt.Sprintf(" The path's bandwidth-delay product is %s (%.1f Mbit/s x %.0f ms).", units.Size(int64(bdp)).String(), p.Bottleneck/1e6, p.BaseRTTms)
	}
	return []Finding{{Kind: "tuning", Workload: w.Name, Text: text, Values: values}}
}

// MathisC is the constant of the Mathis et al. bound for periodic loss with
// delayed ACKs off: throughput <= MSS/RTT x sqrt(3/2)/sqrt(p).
var MathisC = math.Sqrt(1.5)

// modelFit compares TCP throughput with the Mathis bound and the window
// limit of each step's path.
func modelFit(w Workload) []Finding {
	var residuals []float64
	var worst Finding
	for _, s := range w.Steps {
		t := s.Config.Throughput
		if t == nil || t.Protocol != "tcp" || s.Metrics[results.ThroughputMbps] <= 0 {
			continue
		}
		p, ok := path(w.Testbed, t.From, t.To)
		if !ok || p.BaseRTTms <= 0 {
			continue
		}
		loss := p.Loss
		rtt := p.BaseRTTms / 1000
		mss := float64(p.MTU - topology.TCPIPHeader)
		perStream := math.Inf(1)
		if t.Window > 0 {
			perStream = float64(t.Window) * 8 / rtt
		}
		if loss > 0 {
			perStream = min(perStream, mss*8/rtt*MathisC/math.Sqrt(loss))
		}
		predicted := perStream * float64(t.Streams)
		if c := p.TCPCeiling(); c > 0 {
			predicted = min(predicted, c)
		}
		if math.IsInf(predicted, 1) {
			continue
		}
		measured := s.Metrics[results.ThroughputMbps] * 1e6
		res := (measured - predicted) / predicted
		residuals = append(residuals, math.Abs(res))
		if worst.Values == nil || math.Abs(res) > math.Abs(worst.Values["residual"]) {
			worst = Finding{Values: map[string]float64{"predicted_mbps": predicted / 1e6, "measured_mbps": measured / 1e6, "residual": res, "loss": loss, "rtt_ms": p.BaseRTTms}}
			worst.Text = s.Label
		}
	}
	if len(residuals) == 0 {
		return nil
	}
	mean := stat.Mean(residuals, nil)
	label := worst.Text
	worst.Kind, worst.Workload = "model_fit", w.Name
	worst.Values["mean_abs_residual"] = mean
	worst.Values["steps"] = float64(len(residuals))
	worst.Text = fmt.Sprintf("Against the TCP model (window / RTT, the Mathis bound MSS/RTT x 1.22/sqrt(p) for Reno-like TCP at the path's loss, and the link ceiling), the mean absolute residual over %d steps is %.0f%%; the largest is %+.0f%% at %s (%.2f measured, %.2f predicted Mbit/s).",
		len(residuals), 100*mean, 100*worst.Values["residual"], orDash(label), worst.Values["measured_mbps"], worst.Values["predicted_mbps"])
	return []Finding{worst}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
