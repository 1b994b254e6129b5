package analysis

// What a prediction shows of the steps of a measured run that the
// test-bed limited (wanlab predict --check, issue 34): the scenario
// without this machine's limit, which a larger machine can later confirm.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/results"
)

// PredictionFinding is the kind of the findings on a measured workload's
// steps that the test-bed limited: what a prediction shows of them, or
// how to get one.
const PredictionFinding = "prediction"

// Prediction is a prediction of a measured run (a run of backend
// simulated, as wanlab predict stores it), for the findings on the
// measured run's steps that the test-bed limited.
type Prediction struct {
	// Run is the prediction's number.
	Run int64
	// Workloads are its steps, as Load reads them, and Report their
	// analysis (Of).
	Workloads []Workload
	Report    *Report
}

// Unlimited are the findings (PredictionFinding) on the steps of measured
// workloads that the test-bed limited, one per workload that has any:
// what prediction p shows of those steps, simulated without the machine's
// limit (each one's throughput, mean job wall-clock and bottleneck, and
// where the predicted sweep stops growing and efficient running ends in
// it); with no prediction (p nil), that command would make one.
func Unlimited(measured []Workload, p *Prediction, command string) []Finding {
	var out []Finding
	for _, w := range measured {
		var limited []Step
		var labels []string
		for _, s := range w.Steps {
			if s.TestbedLimited {
				limited, labels = append(limited, s), append(labels, orStep(s))
			}
		}
		if len(limited) == 0 {
			continue
		}
		f := Finding{Kind: PredictionFinding, Workload: w.Name, Values: map[string]float64{"steps": float64(len(limited))}}
		if p == nil {
			f.Text = fmt.Sprintf("What the scenario would show at %s without this machine's limit can be predicted on SimGrid, for a larger machine to confirm: %s.",
				strings.Join(labels, ", "), command)
		} else {
			f.Values["prediction_run"] = float64(p.Run)
			f.Text = p.shows(w, limited, f.Values)
		}
		out = append(out, f)
	}
	return out
}

// shows says what the prediction shows of measured workload w's steps
// that the test-bed limited, and adds the concurrencies it names to values.
func (p *Prediction) shows(w Workload, limited []Step, values map[string]float64) string {
	head := fmt.Sprintf("Without this machine's limit, prediction run %d (simulated on SimGrid; a larger machine can confirm it) shows", p.Run)
	i := slices.IndexFunc(p.Workloads, func(x Workload) bool { return x.Name == w.Name && x.Kind == w.Kind })
	if i < 0 || p.Report == nil || i >= len(p.Report.Workloads) {
		return head + " nothing of this workload: it has none of its steps."
	}
	pw, verdicts := p.Workloads[i], p.Report.Workloads[i].Steps
	var steps []string
	for _, s := range limited {
		j := slices.IndexFunc(pw.Steps, func(x Step) bool { return x.Index == s.Index })
		if j < 0 {
			steps = append(steps, orStep(s)+": not simulated")
			continue
		}
		steps = append(steps, orStep(s)+": "+stepShows(pw.Steps[j], verdicts[j]))
	}
	text := head + " " + strings.Join(steps, "; ") + "."
	var sweep []string
	if f, ok := p.finding("saturation", pw.Name); ok {
		sweep = append(sweep, saturationShows(pw, f, values))
	}
	if f, ok := p.finding("efficient_running", pw.Name); ok {
		c := f.Values["boundary_concurrency"]
		values["boundary_concurrency"] = c
		s := "efficient running holds up to " + concurrencyWord(pw, c)
		if c == Concurrency(sortedByConcurrency(pw)[len(pw.Steps)-1]) {
			s += ", the largest step tried"
		}
		sweep = append(sweep, s)
	}
	if len(sweep) > 0 {
		text += " In the prediction, " + strings.Join(sweep, ", and ") + "."
	}
	return text
}

// stepShows is what a predicted step shows: its throughput, its mean job
// wall-clock and its bottleneck, as it has them.
func stepShows(s Step, v StepVerdict) string {
	var parts []string
	if t := throughputText(s.Metrics); t != "" {
		parts = append(parts, t)
	}
	if wct, ok := s.Metrics.Get(results.Named(results.MeanWallclockS)); ok {
		parts = append(parts, fmt.Sprintf("mean job wall-clock %.1f s", wct))
	}
	if v.Bottleneck != "" {
		parts = append(parts, "bottleneck "+v.Bottleneck)
	}
	if len(parts) == 0 {
		if s.Reason != "" {
			return "no figure (" + s.Reason + ")"
		}
		return "no figure"
	}
	return strings.Join(parts, ", ")
}

// saturationShows says where a predicted sweep stops growing, from its
// saturation finding f, and adds the concurrencies to values.
func saturationShows(w Workload, f Finding, values map[string]float64) string {
	knee, peak := f.Values["knee_concurrency"], f.Values["peak_concurrency"]
	values["knee_concurrency"], values["peak_concurrency"] = knee, peak
	top := sortedByConcurrency(w)[len(w.Steps)-1]
	peakStep := stepAt(w, peak)
	if knee == peak && peak == Concurrency(top) && len(w.Steps) > 1 {
		return fmt.Sprintf("throughput still grows at the largest step tried (%s: %s)", concurrencyWord(w, peak), throughputText(peakStep.Metrics))
	}
	return fmt.Sprintf("throughput stops growing from %s (its peak: %s with %s)", concurrencyWord(w, knee), throughputText(peakStep.Metrics), concurrencyWord(w, peak))
}

// finding is the prediction's finding of a kind on a workload.
func (p *Prediction) finding(kind, workload string) (Finding, bool) {
	i := slices.IndexFunc(p.Report.Findings, func(f Finding) bool { return f.Kind == kind && f.Workload == workload })
	if i < 0 {
		return Finding{}, false
	}
	return p.Report.Findings[i], true
}

// stepAt is workload w's step of concurrency c (its first step if none).
func stepAt(w Workload, c float64) Step {
	for _, s := range w.Steps {
		if Concurrency(s) == c {
			return s
		}
	}
	return w.Steps[0]
}

// concurrencyWord says concurrency c of workload w in words, as the
// other findings do ("20 jobs").
func concurrencyWord(w Workload, c float64) string { return jobsWord(w, stepAt(w, c)) }

// throughputText is a step's throughput with its unit: Mbit/s, or tasks
// a second for a farm; "" when it has none.
func throughputText(m results.Metrics) string {
	if hz, ok := m.Get(results.Named(results.TaskRateHz)); ok {
		if _, mbps := m.First(results.Named(results.ThroughputMbps), results.Named(results.AggregateMbps)); !mbps {
			return fmt.Sprintf("%.2f tasks/s", hz)
		}
	}
	if v, ok := throughputOf(m); ok {
		return fmt.Sprintf("%.1f Mbit/s", v)
	}
	return ""
}

// AddUnlimited adds findings of Unlimited to the report, each after the
// finding that says the test-bed limited its workload's steps (at the
// end when there is none).
func (r *Report) AddUnlimited(fs []Finding) {
	for _, f := range fs {
		at := slices.IndexFunc(r.Findings, func(x Finding) bool { return x.Kind == "testbed" && x.Workload == f.Workload })
		if at < 0 {
			r.Findings = append(r.Findings, f)
			continue
		}
		r.Findings = slices.Insert(r.Findings, at+1, f)
	}
}
