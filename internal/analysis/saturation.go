package analysis

// Where throughput saturates and where jobs stop running efficiently.

import (
	"fmt"
	"strconv"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// saturation finds where throughput peaks and where it stops growing, and
// names the bottleneck there.
func saturation(w Workload, ws WorkloadSteps, o Options) []Finding {
	steps := sortedByConcurrency(w)
	peak, peakV := peakOf(steps)
	if peak < 0 {
		return nil
	}
	knee := peak
	for i, s := range steps[:peak+1] {
		if v, _ := throughputOf(s.Metrics); v >= 0.95*peakV {
			knee = i
			break
		}
	}
	link, util := results.BusiestLink(steps[knee].Metrics)
	values := map[string]float64{
		"peak_mbps": peakV, "peak_concurrency": Concurrency(steps[peak]),
		"knee_concurrency": Concurrency(steps[knee]), "knee_mbps": must(throughputOf(steps[knee].Metrics)),
		"link_utilization_pct": util,
	}
	text := fmt.Sprintf("Throughput peaks at %.1f Mbit/s with %s and stops growing from %s (within 5%% of the peak); the busiest link (%s) is %.0f%% utilised there.",
		peakV, jobsWord(w, steps[peak]), jobsWord(w, steps[knee]), link, util)
	if peak == len(steps)-1 && knee == peak && len(steps) > 1 {
		text = fmt.Sprintf("Throughput still grows at the largest step tried: %.1f Mbit/s with %s; the busiest link (%s) is %.0f%% utilised.", peakV, jobsWord(w, steps[peak]), link, util)
	}
	out := []Finding{{Kind: "saturation", Workload: w.Name, Text: text, Values: values}}

	var pv StepVerdict
	for _, v := range ws.Steps {
		if v.Index == steps[peak].Index {
			pv = v
		}
	}
	if pv.Bottleneck != "" {
		ev := map[string]float64{"concurrency": Concurrency(steps[peak]), "throughput_mbps": peakV}
		for k, v := range pv.Evidence {
			ev[k] = v
		}
		out = append(out, Finding{Kind: "bottleneck", Workload: w.Name, Bottleneck: pv.Bottleneck, Confidence: pv.Confidence, Values: ev,
			Text: fmt.Sprintf("The bottleneck at the peak is %s: %s (confidence %s).", bottleneckWords[pv.Bottleneck], pv.Why, pv.Confidence)})
	}
	return out
}

// peakOf is the index of the first of steps with the highest throughput
// (-1 when none has one) and that throughput.
func peakOf(steps []Step) (int, float64) {
	peak, peakV := -1, 0.0
	for i, s := range steps {
		if v, ok := throughputOf(s.Metrics); ok && v > peakV {
			peak, peakV = i, v
		}
	}
	return peak, peakV
}

// PeakStep is the step where a workload's throughput peaks, as the
// saturation finding picks it (the lowest concurrency among equals);
// false when no step has a throughput.
func PeakStep(w Workload) (Step, bool) {
	steps := sortedByConcurrency(w)
	if i, _ := peakOf(steps); i >= 0 {
		return steps[i], true
	}
	return Step{}, false
}

func must(v float64, _ bool) float64 { return v }

// jobsWord says the concurrency of a step of workload w in words.
func jobsWord(w Workload, s Step) string {
	c := Concurrency(s)
	switch noun := w.Traits().Concurrency; {
	case noun != "":
		return plural(c, noun)
	case s.Params["streams"] != "":
		return plural(c, "stream")
	}
	return "step " + strconv.Itoa(s.Index+1)
}

func plural(n float64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatFloat(n, 'f', -1, 64) + " " + noun + "s"
}

// efficientRunning finds the largest concurrency whose mean job wall-clock
// stays under k x the single job's (the seed's "efficient running").
func efficientRunning(w Workload, o Options) []Finding {
	steps := sortedByConcurrency(w)
	if len(steps) < 2 {
		return nil
	}
	single := steps[0].value(results.MeanWallclockS)
	if single <= 0 {
		return nil
	}
	bound := -1
	for i, s := range steps {
		wct, ok := s.Metrics.Get(results.Named(results.MeanWallclockS))
		if ok && wct < o.EfficientFactor*single && s.Metrics.Value(results.JobsWith(job.OK)) > 0 {
			bound = i
		}
	}
	if bound < 0 {
		return nil
	}
	b := steps[bound]
	values := map[string]float64{
		"k": o.EfficientFactor, "single_wallclock_s": single, "boundary_concurrency": Concurrency(b),
		"mean_wallclock_s": b.value(results.MeanWallclockS), "throughput_mbps": b.value(results.ThroughputMbps),
		"server_cpu_pct": must(b.Metrics.First(results.RoleCPUFigures("server")...)), "client_cpu_pct": must(b.Metrics.First(results.RoleCPUFigures("client")...)),
	}
	text := fmt.Sprintf("Efficient running (mean job wall-clock under %g x the single job's %.1f s) holds up to %s: mean %.1f s, %.1f Mbit/s, server CPU %.0f%%, client CPU %.0f%%.",
		o.EfficientFactor, single, jobsWord(w, b), values["mean_wallclock_s"], values["throughput_mbps"], values["server_cpu_pct"], values["client_cpu_pct"])
	if bound == len(steps)-1 {
		text += " That is the largest step tried: the boundary lies beyond it."
	}
	return []Finding{{Kind: "efficient_running", Workload: w.Name, Text: text, Values: values}}
}
