package predict

import (
	"math"
	"slices"
	"strconv"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/results"
)

// Check is a prediction set against a measured run of the same scenario,
// step by step (wanlab predict --check; the JSON is the issue's).
type Check struct {
	Steps []Row `json:"steps"`
	// MedianError and WorstError are over the rows of steps the test-bed
	// did not limit, with an error; nil when there is none.
	MedianError *float64 `json:"median_error"`
	WorstError  *float64 `json:"worst_error"`
	// FindingsAgree is the share of sweeps (workloads found in both runs)
	// whose findings agree: the same bottleneck at the step where the
	// measured sweep peaks (the analysis' bottleneck finding; not compared
	// where the test-bed limited that step) and the same efficient-running
	// boundary; nil when no sweep was compared.
	FindingsAgree *float64 `json:"findings_agree"`
	// StepBottlenecksAgree is the stricter share of steps, over the steps
	// both ran and the test-bed did not limit, whose bottleneck agrees;
	// nil when there is none.
	StepBottlenecksAgree *float64 `json:"step_bottlenecks_agree"`
	// Sweeps say, per sweep, whether its findings agree and why not.
	Sweeps []Sweep `json:"-"`
}

// Row is one figure of one step, predicted and measured.
type Row struct {
	Workload  string  `json:"workload"`
	Step      string  `json:"step"`
	Figure    string  `json:"figure"`
	Predicted float64 `json:"predicted"`
	Measured  float64 `json:"measured"`
	// Error is |predicted - measured| / measured, nil when the measured
	// figure is 0 and the predicted one is not.
	Error *float64 `json:"error"`
	// LimitedByTestbed says the test-bed limited the measured step: the
	// row is shown, and left out of the errors.
	LimitedByTestbed bool `json:"limited_by_testbed"`
}

// Sweep is whether one sweep's findings agree.
type Sweep struct {
	Workload string
	Agree    bool
	// Differences say what differs, one sentence each.
	Differences []string
	// Steps and StepsAgree count the steps whose bottlenecks were
	// compared and those that agree; StepDifferences say which differ.
	Steps, StepsAgree int
	StepDifferences   []string
}

// mainFigures are the plain figures of a step that a check compares,
// beside its roles' CPU and its length.
var mainFigures = []string{results.ThroughputMbps, results.AggregateMbps, results.TaskRateHz, results.MeanWallclockS}

// SecondsFigure is the name of a step's length among a check's figures.
const SecondsFigure = "seconds"

// Compare sets predicted workloads against measured ones (both as
// analysis.Load reads a run): for every step both ran, the main figures
// (throughput, mean job wall-clock, each role's CPU in % of one core, the
// step's seconds) with their errors; the median and worst error over the
// steps the test-bed did not limit; and whether the analysis' findings
// agree, sweep by sweep (o as the analysis takes it).
func Compare(predicted, measured []analysis.Workload, o analysis.Options) *Check {
	c := &Check{Steps: []Row{}}
	var errs []float64
	pr, mr := analysis.Of(predicted, o), analysis.Of(measured, o)
	agreeing, compared, steps, stepsAgree := 0, 0, 0, 0
	for mi, mw := range measured {
		pi := slices.IndexFunc(predicted, func(w analysis.Workload) bool { return w.Name == mw.Name && w.Kind == mw.Kind })
		if pi < 0 {
			continue
		}
		pw := predicted[pi]
		for _, ms := range mw.Steps {
			i := slices.IndexFunc(pw.Steps, func(s analysis.Step) bool { return s.Index == ms.Index })
			if i < 0 {
				continue
			}
			for _, r := range stepRows(mw.Name, pw.Steps[i], ms) {
				c.Steps = append(c.Steps, r)
				if !r.LimitedByTestbed && r.Error != nil {
					errs = append(errs, *r.Error)
				}
			}
		}
		sw := agree(mw, pw, mr, pr, mi, pi)
		c.Sweeps = append(c.Sweeps, sw)
		compared++
		if sw.Agree {
			agreeing++
		}
		steps += sw.Steps
		stepsAgree += sw.StepsAgree
	}
	if len(errs) > 0 {
		med := median(errs) // sorts errs
		worst := errs[len(errs)-1]
		c.MedianError, c.WorstError = &med, &worst
	}
	if compared > 0 {
		share := float64(agreeing) / float64(compared)
		c.FindingsAgree = &share
	}
	if steps > 0 {
		share := float64(stepsAgree) / float64(steps)
		c.StepBottlenecksAgree = &share
	}
	return c
}

// stepRows are the rows of one step: each main figure both steps have.
func stepRows(workload string, p, m analysis.Step) []Row {
	label := m.Label
	if label == "" {
		label = "step " + strconv.Itoa(m.Index+1)
	}
	var rows []Row
	add := func(figure string, pv, mv float64) {
		r := Row{Workload: workload, Step: label, Figure: figure, Predicted: pv, Measured: mv, LimitedByTestbed: m.TestbedLimited}
		switch {
		case mv != 0:
			e := math.Abs(pv-mv) / math.Abs(mv)
			r.Error = &e
		case pv == 0:
			e := 0.0
			r.Error = &e
		}
		rows = append(rows, r)
	}
	figures := slices.Clone(mainFigures)
	if m.Config.Spec != nil {
		roles := m.Config.Spec.RoleHosts()
		for _, role := range slices.Sorted(func(yield func(string) bool) {
			for r := range roles {
				if !yield(r) {
					return
				}
			}
		}) {
			figures = append(figures, results.Role(role, results.CPUPct))
		}
	}
	for _, f := range figures {
		pv, pok := p.Metrics[f]
		mv, mok := m.Metrics[f]
		if pok && mok {
			add(f, pv, mv)
		}
	}
	if p.Seconds > 0 && m.Seconds > 0 {
		add(SecondsFigure, p.Seconds, m.Seconds)
	}
	return rows
}

// agree says whether the findings of a sweep agree: the bottleneck at
// the measured sweep's peak (unless the test-bed limited that step) and
// the efficient-running boundary (or its absence); and, as a stricter
// figure beside them, how many steps both ran and the test-bed did not
// limit have the same bottleneck.
func agree(mw, pw analysis.Workload, mr, pr *analysis.Report, mi, pi int) Sweep {
	sw := Sweep{Workload: mw.Name, Agree: true}
	differ := func(s string) { sw.Agree, sw.Differences = false, append(sw.Differences, s) }
	pv := map[int]analysis.StepVerdict{}
	for _, v := range pr.Workloads[pi].Steps {
		pv[v.Index] = v
	}
	for i, mv := range mr.Workloads[mi].Steps {
		p, ok := pv[mv.Index]
		if !ok || mw.Steps[i].TestbedLimited {
			continue
		}
		sw.Steps++
		if p.Bottleneck == mv.Bottleneck {
			sw.StepsAgree++
			continue
		}
		sw.StepDifferences = append(sw.StepDifferences, "step "+orDash(mv.Label)+": bottleneck "+orDash(p.Bottleneck)+" predicted, "+orDash(mv.Bottleneck)+" measured")
	}
	// The bottleneck at the measured peak, in both runs: on a flat curve
	// the prediction may peak at another step than the measurement, whose
	// verdict says less about the sweep.
	if peak, ok := analysis.PeakStep(mw); ok && !peak.TestbedLimited {
		mb := ""
		for _, v := range mr.Workloads[mi].Steps {
			if v.Index == peak.Index {
				mb = v.Bottleneck
			}
		}
		pb := pv[peak.Index].Bottleneck
		if mb != pb {
			differ("the bottleneck at the measured peak (" + orDash(peak.Label) + "): " + orDash(pb) + " predicted, " + orDash(mb) + " measured")
		}
	}
	pb, pok := boundary(pr, pw.Name)
	mb, mok := boundary(mr, mw.Name)
	switch {
	case pok != mok:
		differ("efficient running: a boundary found in one run only")
	case pok && pb != mb:
		differ("efficient running holds up to " + strconv.FormatFloat(pb, 'g', -1, 64) + " predicted, " + strconv.FormatFloat(mb, 'g', -1, 64) + " measured")
	}
	return sw
}

// finding is a workload's first finding of a kind, nil if the analysis
// found none.
func finding(r *analysis.Report, kind, workload string) *analysis.Finding {
	for i, f := range r.Findings {
		if f.Kind == kind && f.Workload == workload {
			return &r.Findings[i]
		}
	}
	return nil
}

// boundary is a workload's efficient-running boundary, if the analysis
// found one.
func boundary(r *analysis.Report, workload string) (float64, bool) {
	if f := finding(r, "efficient_running", workload); f != nil {
		v, ok := f.Values["boundary_concurrency"]
		return v, ok
	}
	return 0, false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
