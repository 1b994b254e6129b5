package analysis

// Throughput tests against the path: the best streams and window, and the
// TCP model.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/kind"
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

// sender is a step that sends from one host to another (a throughput
// test): what tuning and the TCP model read.
type sender interface {
	kind.Directed
	kind.Sender
}

// tuning finds the best streams and window of a throughput sweep; of a
// single test it reports what it achieved.
func tuning(w Workload) []Finding {
	sends := make([]kind.Sending, len(w.Steps))
	for i, s := range w.Steps {
		t, ok := spec[sender](s)
		if !ok {
			return nil
		}
		sends[i] = t.Sending()
	}
	if len(w.Steps) == 1 {
		return []Finding{single(w.Name, w.Steps[0])}
	}
	if len(w.Steps) < 2 {
		return nil
	}
	best, base := -1, -1
	for i, s := range w.Steps {
		if best < 0 || s.value(results.ThroughputMbps) > w.Steps[best].Metrics.Value(results.Named(results.ThroughputMbps)) {
			best = i
		}
		if base < 0 || sends[i].Streams < sends[base].Streams {
			base = i
		}
	}
	b, one := w.Steps[best], w.Steps[base]
	t := sends[best]
	from, to := b.Config.Spec.(sender).Path()
	if _, swept := b.Params["streams"]; !swept {
		if _, swept := b.Params["window"]; !swept {
			return nil // repeats of one setting: see asymmetry
		}
	}
	values := map[string]float64{"best_mbps": b.value(results.ThroughputMbps), "best_streams": float64(t.Streams), "best_window_bytes": float64(t.Window),
		"baseline_mbps": one.value(results.ThroughputMbps), "baseline_streams": float64(sends[base].Streams)}
	if one.value(results.ThroughputMbps) > 0 {
		values["gain"] = b.value(results.ThroughputMbps) / one.value(results.ThroughputMbps)
	}
	window := "autotuned windows"
	if t.Window > 0 {
		window = units.Size(t.Window).String() + " windows"
	}
	text := fmt.Sprintf("%s->%s: best %.2f Mbit/s with %s and %s, %.1fx the %.2f Mbit/s of %s.", from, to, values["best_mbps"],
		plural(float64(t.Streams), "stream"), window, values["gain"], values["baseline_mbps"], plural(values["baseline_streams"], "stream"))
	if p, ok := path(w.Testbed, from, to); ok && p.Bottleneck > 0 {
		bdp := p.Bottleneck * p.BaseRTTms / 1000 / 8
		values["bdp_bytes"], values["bottleneck_mbps"], values["base_rtt_ms"] = bdp, p.Bottleneck/1e6, p.BaseRTTms
		text += fmt.Sprintf(" The path's bandwidth-delay product is %s (%.1f Mbit/s x %.0f ms).", units.Size(int64(bdp)).String(), p.Bottleneck/1e6, p.BaseRTTms)
	}
	return []Finding{{Kind: "tuning", Workload: w.Name, Text: text, Values: values}}
}

// single is what one throughput test achieved: with its retransmits over
// TCP, with its loss and jitter over UDP (an imported iperf3 -u test).
func single(workload string, s Step) Finding {
	d := s.Config.Spec.(sender)
	t := d.Sending()
	from, to := d.Path()
	mbps := s.value(results.ThroughputMbps)
	f := Finding{Kind: "throughput", Workload: workload, Values: map[string]float64{"throughput_mbps": mbps, "streams": float64(t.Streams)}}
	if t.Protocol == "udp" {
		lost, jitter := s.value(results.LostPercent), s.value(results.JitterMs)
		f.Values["lost_percent"], f.Values["jitter_ms"] = lost, jitter
		f.Text = fmt.Sprintf("%s->%s: %.2f Mbit/s of UDP with %s, %s%% lost, jitter %.3f ms.", from, to, mbps,
			plural(float64(t.Streams), "stream"), strconv.FormatFloat(lost, 'g', 3, 64), jitter)
		return f
	}
	retransmits := s.value(results.Retransmits)
	f.Values["retransmits"] = retransmits
	f.Text = fmt.Sprintf("%s->%s: %.2f Mbit/s with %s (%.0f retransmits).", from, to, mbps, plural(float64(t.Streams), "stream"), retransmits)
	return f
}

// MathisC is the constant of the Mathis et al. bound for periodic loss with
// delayed ACKs off: throughput <= MSS/RTT x sqrt(3/2)/sqrt(p).
var MathisC = math.Sqrt(1.5)

// allowance is what a TCP throughput step's path allows it, by the model:
// the link's TCP ceiling, the streams' windows over the round trip, and
// the Mathis bound at the path's loss, the least of them; by names which.
type allowance struct {
	bps  float64
	by   string // "link", "window" or "loss"
	what string // the limit in words
	path topology.Path
}

// allowed is the allowance of step s of workload w; false when the path is
// unknown or nothing bounds it.
func allowed(w Workload, s Step) (allowance, bool) {
	d, ok := spec[sender](s)
	if !ok || !w.Traits().TCPModel {
		return allowance{}, false
	}
	t := d.Sending()
	if t.Protocol != "tcp" {
		return allowance{}, false
	}
	from, to := d.Path()
	p, ok := path(w.Testbed, from, to)
	if !ok || p.BaseRTTms <= 0 {
		return allowance{}, false
	}
	rtt := p.BaseRTTms / 1000
	a := allowance{bps: math.Inf(1), path: p}
	if c := p.TCPCeiling(); c > 0 {
		a.bps, a.by = c, "link"
		a.what = "the link, " + rateText(p.Bottleneck)
	}
	if t.Window > 0 {
		if b := float64(t.Window) * 8 / rtt * float64(t.Streams); b < a.bps {
			a.bps, a.by = b, "window"
			a.what = fmt.Sprintf("the window, %s x %s over %.0f ms", plural(float64(t.Streams), "stream"), units.Size(t.Window), p.BaseRTTms)
		}
	}
	if p.Loss > 0 {
		mss := float64(p.MTU - topology.TCPIPHeader)
		if b := mss * 8 / rtt * MathisC / math.Sqrt(p.Loss) * float64(t.Streams); b < a.bps {
			a.bps, a.by = b, "loss"
			a.what = fmt.Sprintf("the Mathis bound at its %s loss", units.FormatPercent(p.Loss))
		}
	}
	return a, !math.IsInf(a.bps, 1)
}

// reachedShare is how much of its allowance a step must reach for the
// allowance to be what limited it.
const reachedShare = 0.85

// modelFit compares TCP throughput with the Mathis bound and the window
// limit of each step's path.
func modelFit(w Workload) []Finding {
	var residuals []float64
	var worst Finding
	for _, s := range w.Steps {
		a, ok := allowed(w, s)
		if !ok || s.value(results.ThroughputMbps) <= 0 {
			continue
		}
		predicted := a.bps
		measured := s.value(results.ThroughputMbps) * 1e6
		res := (measured - predicted) / predicted
		residuals = append(residuals, math.Abs(res))
		if worst.Values == nil || math.Abs(res) > math.Abs(worst.Values["residual"]) {
			worst = Finding{Values: map[string]float64{"predicted_mbps": predicted / 1e6, "measured_mbps": measured / 1e6, "residual": res, "loss": a.path.Loss, "rtt_ms": a.path.BaseRTTms}}
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

// limitingFactor says, for each step of a TCP throughput workload on an
// emulated path, what limited it: the path (its link, the window over the
// round trip, its loss) when the step reached what that allows; else the
// test-bed when the step's verdict says so; else TCP itself. A step that
// failed says why.
func limitingFactor(w Workload, ws WorkloadSteps) []Finding {
	var parts []string
	counts := map[string]int{}
	for i, s := range w.Steps {
		a, ok := allowed(w, s)
		if !ok {
			continue
		}
		label := orStep(s)
		if s.Status == "failed" {
			parts = append(parts, fmt.Sprintf("%s failed (%s)", label, s.Reason))
			counts["failed"]++
			continue
		}
		mbps := s.value(results.ThroughputMbps)
		share := mbps * 1e6 / a.bps
		part := fmt.Sprintf("%s: %s, %.0f%% of the %s the path allows (%s): ", label, rateText(mbps*1e6), 100*share, rateText(a.bps), a.what)
		switch {
		case share >= reachedShare:
			part += "the path held it"
			counts[a.by]++
		case i < len(ws.Steps) && ws.Steps[i].Bottleneck == Testbed:
			signs := s.LimitedBy
			if !s.TestbedLimited {
				signs = strainedSigns(s)
			}
			part += "the test-bed held it, not the path (" + strings.Join(signs, "; ") + ")"
			counts["testbed"]++
		default:
			part += fmt.Sprintf("TCP itself fell short (%.0f retransmits%s)", s.value(results.Retransmits), slowStartNote(s, a))
			counts["tcp"]++
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return nil
	}
	values := map[string]float64{}
	for k, n := range counts {
		values[k+"_steps"] = float64(n)
	}
	from, to := w.Steps[0].Config.Spec.(sender).Path()
	return []Finding{{Kind: "limiting_factor", Workload: w.Name, Values: values,
		Text: fmt.Sprintf("What limited %s->%s: %s.", from, to, strings.Join(parts, "; "))}}
}

// slowStartNote says how much of a short step slow start took: about one
// round trip per doubling of the window up to what the path allows.
func slowStartNote(s Step, a allowance) string {
	mss := float64(a.path.MTU - topology.TCPIPHeader)
	segments := a.bps * a.path.BaseRTTms / 1000 / 8 / mss
	d := s.Config.Length()
	if segments <= 1 || d <= 0 {
		return ""
	}
	ss := time.Duration(math.Log2(segments) * a.path.BaseRTTms * float64(time.Millisecond))
	if ss*10 < d {
		return ""
	}
	return fmt.Sprintf("; slow start alone takes about %s of this %s step", ss.Round(100*time.Millisecond), d)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
