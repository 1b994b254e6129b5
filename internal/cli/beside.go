package cli

// A measured run's prediction beside it (issue 34): wanlab report and
// analyze of a measured run find the newest prediction checked against it
// (wanlab predict --check RUN) and show "Predicted beside measured", and
// say in the findings what the prediction shows of the steps the test-bed
// limited, or how to get one.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/predict"
	htmlreport "github.com/wanlab/wanlab/internal/report"
)

// checkedAgainst is the param of a prediction made with --check RUN that
// names RUN, the measured run it was checked against.
const checkedAgainst = "checked_against"

// noPrediction is the value of --prediction that shows none.
const noPrediction = "none"

// predictionFlagDoc is the help of report's and analyze's --prediction.
const predictionFlagDoc = "show prediction run `P` beside the measured run (default: the newest prediction checked against it; none: no prediction)"

// beside is a prediction set beside the measured run it was checked
// against; its JSON is analyze --json's "prediction": the prediction's
// run, the comparison (predict.Check: steps, median_error, worst_error,
// findings_agree), its calibration and its assumptions.
type beside struct {
	Run int64 `json:"run"`
	*predict.Check
	Calibration string   `json:"calibration"`
	Assumptions []string `json:"assumptions"`
}

// predictionParams are the params of a prediction that beside reads.
type predictionParams struct {
	Backend        string             `json:"backend"`
	Quick          bool               `json:"quick"`
	CheckedAgainst int64              `json:"checked_against"`
	CalibratedFrom int64              `json:"calibrated_from"`
	Calibrated     map[string]float64 `json:"calibrated"`
}

// besideRun reads measured run id of ar and the prediction to show beside
// it, as flag (--prediction) names it: "" the newest prediction checked
// against the run, "none" none, else a prediction's number. It returns
// the prediction set against the run (nil for none, and for a run that
// is not a measured scenario run) and the findings on the run's steps
// that the test-bed limited: what the prediction shows of them, or, with
// none at hand, the command that makes one.
func besideRun(ctx context.Context, ar *archive.Archive, id int64, flag string, o analysis.Options) (*beside, []analysis.Finding, error) {
	pid, err := predictionFlag(flag)
	if err != nil {
		return nil, nil, err
	}
	r, err := ar.GetRun(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if r.Kind != "run" || backendOf(r) == controller.BackendSimulated {
		if pid > 0 {
			return nil, nil, usagef("--prediction %d: run %d is not a measured scenario run (wanlab run): only those have a prediction beside them", pid, id)
		}
		return nil, nil, nil
	}
	if flag == noPrediction {
		return nil, nil, nil
	}
	_, measured, err := analysis.Load(ctx, ar, id)
	if err != nil {
		return nil, nil, err
	}
	if pid == 0 {
		if pid, err = newestPrediction(ctx, ar, id); err != nil {
			return nil, nil, err
		}
	}
	if pid == 0 {
		var params runParams
		json.Unmarshal(r.Params, &params)
		command := fmt.Sprintf("wanlab predict %s --check %d --db %s", shellWord(params.Source), id, shellWord(ar.Location()))
		return nil, analysis.Unlimited(measured, nil, command), nil
	}
	p, err := ar.GetRun(ctx, pid)
	if errors.Is(err, archive.ErrNoRun) {
		return nil, nil, usagef("--prediction %d: no such run in %s", pid, ar.Location())
	} else if err != nil {
		return nil, nil, err
	}
	var pp predictionParams
	json.Unmarshal(p.Params, &pp)
	var mp runParams
	json.Unmarshal(r.Params, &mp)
	switch {
	case p.Kind != "run" || pp.Backend != controller.BackendSimulated:
		return nil, nil, usagef("--prediction %d: run %d is not a prediction (wanlab predict)", pid, pid)
	case p.Scenario != r.Scenario || pp.Quick != mp.Quick:
		return nil, nil, usagef("--prediction %d: run %d predicted another scenario (or quick setting) than run %d ran: predict it with wanlab predict --check %d", pid, pid, id, id)
	}
	_, predicted, err := analysis.Load(ctx, ar, pid)
	if err != nil {
		return nil, nil, err
	}
	notes, err := predictionNotes(ctx, ar, pid)
	if err != nil {
		return nil, nil, err
	}
	b := &beside{Run: pid, Check: predict.Compare(predicted, measured, o), Calibration: calibrationText(pp), Assumptions: notes}
	found := analysis.Unlimited(measured, &analysis.Prediction{Run: pid, Workloads: predicted, Report: analysis.Of(predicted, o)}, "")
	return b, found, nil
}

// predictionFlag reads --prediction: 0 for the default (the newest
// prediction) and for none, else a run's number.
func predictionFlag(flag string) (int64, error) {
	if flag == "" || flag == noPrediction {
		return 0, nil
	}
	id, err := strconv.ParseInt(flag, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("--prediction %q: give a prediction's run number, or none", flag)
	}
	return id, nil
}

// newestPrediction is the newest prediction of ar checked against run
// id that ran (0 if none).
func newestPrediction(ctx context.Context, ar *archive.Archive, id int64) (int64, error) {
	runs, err := ar.Runs(ctx) // newest first
	if err != nil {
		return 0, err
	}
	for _, r := range runs {
		if r.Kind != "run" || r.Status == archive.StatusRunning || r.Status == archive.StatusFailed {
			continue
		}
		var pp predictionParams
		if json.Unmarshal(r.Params, &pp) == nil && pp.Backend == controller.BackendSimulated && pp.CheckedAgainst == id {
			return r.ID, nil
		}
	}
	return 0, nil
}

// calibrationText says what a prediction was calibrated from, as its
// params record it, or that it was not.
func calibrationText(pp predictionParams) string {
	if pp.CalibratedFrom == 0 {
		return "uncalibrated: the scenario's declared costs and the models' defaults"
	}
	var fitted []string
	for _, k := range slices.Sorted(maps.Keys(pp.Calibrated)) {
		fitted = append(fitted, fmt.Sprintf("%s=%.4g", k, pp.Calibrated[k]))
	}
	return fmt.Sprintf("calibrated from run %d: %s", pp.CalibratedFrom, strings.Join(fitted, ", "))
}

// plainWord is a word a shell takes as it is.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellWord is s as one word of a shell command: as it is, or quoted.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printBeside prints a prediction beside the measured run, as analyze
// shows it: the comparison, the calibration and the assumptions.
func printBeside(w io.Writer, b *beside) {
	fmt.Fprintf(w, "\nPredicted beside measured: run %d, %s; %s\n", b.Run, predictedWords, b.Calibration)
	printPrediction(w, b.Check)
	if len(b.Assumptions) > 0 {
		fmt.Fprintln(w, "The prediction assumes:")
		for _, a := range b.Assumptions {
			fmt.Fprintf(w, "  - %s\n", a)
		}
	}
}

// view is the prediction as the HTML report shows it.
func (b *beside) view() *htmlreport.Beside {
	v := &htmlreport.Beside{Run: b.Run, MedianError: b.MedianError, WorstError: b.WorstError, Calibration: b.Calibration, Assumptions: b.Assumptions}
	for _, r := range b.Steps {
		v.Steps = append(v.Steps, htmlreport.BesideRow(r))
	}
	for _, s := range b.Sweeps {
		v.Sweeps++
		if s.Agree {
			v.Agreeing++
		}
		for _, d := range s.Differences {
			v.Differences = append(v.Differences, s.Workload+": "+d)
		}
	}
	return v
}
