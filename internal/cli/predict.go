package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/predict"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// predictedWords mark a run of backend simulated wherever a run is shown.
const predictedWords = "predicted (simulated on SimGrid)"

// predictedMark is what follows a run's test-bed where it is shown: ",
// predicted (simulated on SimGrid)" for a prediction, else nothing.
func predictedMark(backend string) string {
	if backend == controller.BackendSimulated {
		return ", " + predictedWords
	}
	return ""
}

// simulator runs one program on bin/wanlab-sim; tests replace it.
var simulator = struct {
	run       func(context.Context, *sim.Program) (*sim.Output, error)
	available func() error
}{sim.Run, sim.Available}

func newPredictCmd() *cobra.Command {
	var db, reportDir string
	var asJSON, quick bool
	var check, calibrate int64
	var sets []string
	c := &cobra.Command{
		Use:   "predict SCENARIO|BUILTIN [--calibrate RUN] [--check RUN] [--set KEY=VALUE ...]",
		Short: "Simulate a scenario's workloads on SimGrid instead of emulating them, storing a predicted run",
		Long: `Predict what wanlab run would measure: simulate each step of each workload's sweep on
SimGrid (bin/wanlab-sim), on the scenario's test-bed as a platform (hosts with their CPU
quotas and disks, each link direction with its rate less its cross traffic and its delay,
the routes through routers), and store the steps in the archive as a run of backend
simulated, which runs, analyze, report and export read as they read a measured run,
marked "predicted (simulated on SimGrid)". It prints the same summary table and findings
as wanlab run (--json: the same document). Nothing is brought up and no root is needed,
so a scenario larger than this machine can emulate can still be predicted. The run's
events list every assumption the prediction makes and what of the scenario it leaves
out (jitter, timelines, captures); a workload whose kind has no simulation model, or a
path across a trace-driven link, is refused step by step with the reason.

--set KEY=VALUE sets one of the models' parameters (the models of the scenario's kinds
list them) for this prediction, in place of the scenario's declared cost.

--check RUN simulates the scenario of archived run RUN (its stored scenario and quick
setting) and prints, step by step, predicted against measured for the step's main
figures (throughput, mean job wall-clock, CPU of each role, the step's seconds), the
error of each as a fraction, the median and worst error over the steps the test-bed did
not limit (those it did are shown and left out), and whether the analysis' findings
agree (the bottleneck where the measured sweep peaks, the efficient-running boundary). The prediction
records RUN in its params (checked_against): wanlab report RUN and wanlab analyze RUN
show the newest such prediction beside what RUN measured.

--calibrate RUN fits the models' parameters from archived run RUN (emulated or on real
hosts) and predicts with them: each step that is done and that the test-bed did not
limit gives its kind's estimates (the server's CPU per page, the clients' CPU per
event, the tasks' CPU, a path's TCP efficiency, a probe's overhead, ...), and each
parameter is the median of its estimates. The prediction's events and params say what
was fitted and from which run; --set wins over a fitted value. RUN must be a measured
run of a scenario of the same shape (the same hosts, links with their rates and
delays, routers, workloads and kinds; its sweeps and quick setting may differ): another
is refused with the differences named, as is a prediction. With --check, calibrate
from one run and check against another.

Needs SimGrid: apt-get install -y libsimgrid-dev nlohmann-json3-dev, then make build.`,
		Example: `  wanlab predict objectivity-lan-100m --quick
  wanlab predict examples/diane-sla.yaml --db results.db --report reports/
  wanlab predict objectivity-demo --check 1
  wanlab predict objectivity-demo --calibrate 1 --check 2
  wanlab predict --check 1 --json`,
		Args: args(func(c *cobra.Command, a []string) error {
			if check != 0 {
				return cobra.RangeArgs(0, 1)(c, a)
			}
			return cobra.ExactArgs(1)(c, a)
		}),
		RunE: func(c *cobra.Command, a []string) error {
			switch {
			case calibrate < 0:
				return usagef("--calibrate %d: give a run number, as wanlab runs lists them", calibrate)
			case check < 0:
				return usagef("--check %d: give a run number, as wanlab runs lists them", check)
			case check != 0 && c.Flags().Changed("quick"):
				return usagef("--quick cannot change a checked run: --check simulates it as it ran")
			}
			var measured *archive.Run
			var ar *archive.Archive
			var p *plan
			var err error
			if check != 0 {
				if ar, measured, p, err = checkedRun(c.Context(), db, check, a); err != nil {
					return err
				}
			} else if p, err = loadPlan(a[0], quick); err != nil {
				return err
			}
			if ar != nil {
				defer ar.Close()
			}
			if err := simulable(p); err != nil {
				return err
			}
			params, err := modelParams(p, sets)
			if err != nil {
				return err
			}
			if ar == nil && calibrate != 0 {
				if ar, err = openRead(db, "--calibrate", calibrate); err != nil {
					return err
				}
				defer ar.Close()
			}
			var cal *predict.Calibration
			if calibrate != 0 {
				if cal, err = calibration(c.Context(), ar, calibrate, p); err != nil {
					return err
				}
				params = calibrated(cal, params)
			}
			if err := simulator.available(); err != nil {
				return err
			}
			if ar == nil {
				if ar, err = archive.Open(db); err != nil {
					return err
				}
				defer ar.Close()
			}
			runParams := map[string]any{}
			if cal != nil {
				runParams["calibrated_from"], runParams["calibrated"] = cal.Run, cal.Params()
			}
			if measured != nil {
				runParams[checkedAgainst] = measured.ID // for the report of the run to find it
			}
			bar := newRunProgress(c.ErrOrStderr())
			res, err := controller.Run(c.Context(), controller.Options{Source: p.source, Text: p.text, Quick: p.file.Quick, Version: Version, Archive: ar,
				Simulate: &predict.Predictor{Run: simulator.run, Params: params, Calibration: cal}, Progress: bar.update, RunParams: runParams})
			bar.finish()
			if res == nil {
				return err
			}
			if measured == nil {
				return showRun(c, ar, res, err, asJSON, reportDir)
			}
			return showCheck(c, ar, res, measured, err, asJSON, reportDir)
		},
	}
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&quick, "quick", false, "use the workloads' quick: settings (short steps)")
	c.Flags().StringVar(&reportDir, "report", "", "also write the HTML report of the prediction into `DIR`")
	c.Flags().StringArrayVar(&sets, "set", nil, "set a model parameter for this prediction (`KEY=VALUE`; repeat for more)")
	c.Flags().Int64Var(&check, "check", 0, "simulate the scenario of run `RUN` and compare, step by step, with what it measured")
	c.Flags().Int64Var(&calibrate, "calibrate", 0, "fit the models' parameters from measured run `RUN` of a scenario of the same shape")
	return c
}

// checkedRun opens the archive of a --check and reads run id: a scenario
// run that was measured, not predicted. Its stored scenario and quick
// setting are what is simulated; a SCENARIO given too must be that one.
func checkedRun(ctx context.Context, db string, id int64, a []string) (*archive.Archive, *archive.Run, *plan, error) {
	ar, err := openRead(db, "--check", id)
	if err != nil {
		return nil, nil, nil, err
	}
	p, r, err := checkedPlan(ctx, ar, id, a)
	if err != nil {
		ar.Close()
		return nil, nil, nil, err
	}
	return ar, r, p, nil
}

// openRead opens the archive db that flag (--check, --calibrate) reads
// run id of: a file that is not there is a usage error.
func openRead(db, flag string, id int64) (*archive.Archive, error) {
	if !archive.IsPostgres(db) {
		if _, err := statFile(db); err != nil {
			return nil, usagef("%s %d: no archive at %s (give --db PATH): %v", flag, id, db, err)
		}
	}
	return archive.Open(db)
}

func checkedPlan(ctx context.Context, ar *archive.Archive, id int64, a []string) (*plan, *archive.Run, error) {
	r, params, err := measuredRun(ctx, ar, id, "--check", "can be checked", "check against a run that was measured")
	if err != nil {
		return nil, nil, err
	}
	if len(a) == 1 {
		source, text, err := readScenario(a[0])
		if err != nil {
			return nil, nil, err
		}
		if string(text) != r.Scenario {
			return nil, nil, usagef("--check %d: run %d ran scenario %s, whose text differs from %s: give the scenario it ran, or none to simulate its stored text", id, id, params.Source, source)
		}
	}
	p, err := planOf(params.Source, []byte(r.Scenario), params.Quick)
	if err != nil {
		return nil, nil, fmt.Errorf("run %d: its stored scenario: %w", id, err)
	}
	return p, &r, nil
}

// runParams are the params of a scenario run that predict reads.
type runParams struct {
	Source  string `json:"source"`
	Quick   bool   `json:"quick"`
	Backend string `json:"backend"`
}

// measuredRun reads run id for flag (--check, --calibrate): a scenario
// run that was measured; another is a usage error that says what the
// flag takes (can, "can be checked") and what to do instead (instead).
func measuredRun(ctx context.Context, ar *archive.Archive, id int64, flag, can, instead string) (archive.Run, runParams, error) {
	var params runParams
	r, err := ar.GetRun(ctx, id)
	if err != nil {
		return r, params, err
	}
	json.Unmarshal(r.Params, &params)
	switch {
	case r.Kind != "run":
		return r, params, usagef("%s %d: run %d is a %q: only scenario runs (wanlab run) %s", flag, id, id, r.Kind, can)
	case params.Backend == controller.BackendSimulated:
		return r, params, usagef("%s %d: run %d is itself a prediction: %s", flag, id, id, instead)
	}
	return r, params, nil
}

// simulable refuses, as a usage error, a scenario none of whose
// workloads can be simulated: their kinds have no simulation model. One
// with some that can is predicted, and the others' steps are refused
// with the reason.
func simulable(p *plan) error {
	var without []string
	for _, w := range p.file.Workloads {
		if k, ok := kinds.Lookup(w.Kind); ok && k.Model != nil {
			return nil
		}
		without = append(without, fmt.Sprintf("%s (%s)", w.Name, w.Kind))
	}
	if len(without) == 0 {
		return nil // no workloads: the controller says so
	}
	return usagef("no workload of %s can be simulated: the kinds of %s have no simulation model (emulate them with wanlab run)", p.source, strings.Join(without, ", "))
}

// modelParams reads --set KEY=VALUE: each KEY a parameter of a model of
// the scenario's kinds (or one host's or path's own of it, KEY.HOST or
// KEY.FROM->TO, as calibration fits some), each VALUE a number.
func modelParams(p *plan, sets []string) (map[string]float64, error) {
	known := map[string]bool{}
	for _, w := range p.file.Workloads {
		if k, ok := kinds.Lookup(w.Kind); ok && k.Model != nil {
			for _, prm := range k.Model.Params {
				known[prm.Name] = true
			}
		}
	}
	params := map[string]float64{}
	for _, s := range sets {
		key, value, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return nil, usagef("--set %q: give KEY=VALUE", s)
		}
		base, _, _ := strings.Cut(key, ".") // NAME.HOST, NAME.FROM->TO: a host's or a path's own
		if !known[base] {
			have := "none has any"
			if len(known) > 0 {
				have = "they have " + strings.Join(slices.Sorted(maps.Keys(known)), ", ")
			}
			return nil, usagef("--set %s: not a parameter of the models of this scenario's kinds (%s)", key, have)
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, usagef("--set %s=%s: give a number", key, value)
		}
		params[key] = v
	}
	return params, nil
}

// showCheck compares prediction res with measured run m and prints the
// comparison (--json: exactly predict.Check); a report of the prediction
// too if reportDir is set. It returns runErr, with whatever failed on the
// way.
func showCheck(c *cobra.Command, ar *archive.Archive, res *controller.Result, m *archive.Run, runErr error, asJSON bool, reportDir string) error {
	ctx := context.WithoutCancel(c.Context())
	_, predicted, err := analysis.Load(ctx, ar, res.Run)
	if err != nil {
		return errors.Join(runErr, err)
	}
	_, measured, err := analysis.Load(ctx, ar, m.ID)
	if err != nil {
		return errors.Join(runErr, err)
	}
	check := predict.Compare(predicted, measured, analysis.DefaultOptions)
	err = runErr
	var report string
	if reportDir != "" && len(res.Steps) > 0 {
		var rerr error
		if report, rerr = writeReport(ctx, ar, res.Run, reportDir); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if asJSON {
		return errors.Join(err, writeJSON(c.OutOrStdout(), check))
	}
	w := c.OutOrStdout()
	fmt.Fprintf(w, "run %d: %s simulated on SimGrid against run %d (%s): %s in %s\n", res.Run, res.Scenario, m.ID, m.Status, res.Status,
		time.Duration(res.Seconds*float64(time.Second)).Round(time.Millisecond))
	printPrediction(w, check)
	if report != "" {
		fmt.Fprintf(w, "\nreport of the prediction: %s\n", report)
	}
	fmt.Fprintf(w, "\nthe prediction is stored in %s as run %d; run %d's report and analysis show it beside what it measured (wanlab report %d --db %s)\n",
		res.Archive, res.Run, m.ID, m.ID, shellWord(res.Archive))
	return err
}

// printPrediction prints a comparison: per workload its rows, then the errors
// and whether the findings agree.
func printPrediction(w io.Writer, check *predict.Check) {
	limited := false
	for i := 0; i < len(check.Steps); {
		name := check.Steps[i].Workload
		fmt.Fprintf(w, "\n%s\n", name)
		t := table(w)
		fmt.Fprintln(t, "STEP\tFIGURE\tPREDICTED\tMEASURED\tERROR")
		for ; i < len(check.Steps) && check.Steps[i].Workload == name; i++ {
			r := check.Steps[i]
			label, e := r.Step, "-"
			if r.Error != nil {
				e = fmt.Sprintf("%.1f%%", 100**r.Error)
			}
			if r.LimitedByTestbed {
				label += " !"
				limited = true
				e = "(" + e + ")"
			}
			fmt.Fprintf(t, "%s\t%s\t%.4g\t%.4g\t%s\n", label, r.Figure, r.Predicted, r.Measured, e)
		}
		t.Flush()
	}
	fmt.Fprintln(w)
	if len(check.Steps) == 0 {
		fmt.Fprintln(w, "no step of the run has a figure the prediction has too")
	}
	if check.MedianError != nil {
		fmt.Fprintf(w, "error: median %.1f%%, worst %.1f%% (over the steps the test-bed did not limit)\n", 100**check.MedianError, 100**check.WorstError)
	}
	if check.FindingsAgree != nil {
		agree := 0
		for _, s := range check.Sweeps {
			if s.Agree {
				agree++
			}
		}
		fmt.Fprintf(w, "findings agree in %d of %d sweeps (the bottleneck where the measured sweep peaks, the efficient-running boundary)\n", agree, len(check.Sweeps))
		for _, s := range check.Sweeps {
			for _, d := range s.Differences {
				fmt.Fprintf(w, "  - %s: %s\n", s.Workload, d)
			}
		}
	}
	if check.StepBottlenecksAgree != nil {
		steps, agree := 0, 0
		for _, s := range check.Sweeps {
			steps, agree = steps+s.Steps, agree+s.StepsAgree
		}
		fmt.Fprintf(w, "step bottlenecks agree in %d of %d steps the test-bed did not limit\n", agree, steps)
		for _, s := range check.Sweeps {
			for _, d := range s.StepDifferences {
				fmt.Fprintf(w, "  - %s: %s\n", s.Workload, d)
			}
		}
	}
	if limited {
		fmt.Fprintln(w, "! the test-bed itself limited the measured steps marked !: shown, and left out of the errors")
	}
}

// backendOf is the backend a scenario run says it ran on ("" for a run of
// another kind).
func backendOf(r archive.Run) string {
	var params struct {
		Backend string `json:"backend"`
	}
	json.Unmarshal(r.Params, &params)
	return params.Backend
}

// printPredicted marks a prediction where analyze shows it, with what it
// assumes and leaves out (the run's events that say so); nothing for a
// measured run.
func printPredicted(ctx context.Context, w io.Writer, ar *archive.Archive, id int64) error {
	r, err := ar.GetRun(ctx, id)
	if err != nil || backendOf(r) != controller.BackendSimulated {
		return err
	}
	fmt.Fprintf(w, "Run %d is %s: its figures are a simulation's, not measurements.\n", id, predictedWords)
	notes, err := predictionNotes(ctx, ar, id)
	if err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "It assumes:")
	}
	for _, n := range notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
	fmt.Fprintln(w)
	return nil
}

// predictionNotes are what prediction id assumes and leaves out: the
// run's events that say so.
func predictionNotes(ctx context.Context, ar *archive.Archive, id int64) ([]string, error) {
	events, err := ar.Events(ctx, id)
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range events {
		if e.Step == 0 && (strings.HasPrefix(e.Message, predict.AssumptionPrefix) || strings.HasPrefix(e.Message, predict.LeftOutPrefix)) {
			notes = append(notes, e.Message)
		}
	}
	return notes, nil
}

// calibration fits the models' params from measured run id of archive ar
// for plan p: a run that is not a measured scenario run, of another
// shape, or with no step to fit is refused (a usage error) with why.
func calibration(ctx context.Context, ar *archive.Archive, id int64, p *plan) (*predict.Calibration, error) {
	r, params, err := measuredRun(ctx, ar, id, "--calibrate", "calibrate a prediction", "calibrate from a run that was measured")
	if err != nil {
		return nil, err
	}
	mp, err := planOf(params.Source, []byte(r.Scenario), params.Quick)
	if err != nil {
		return nil, fmt.Errorf("run %d: its stored scenario: %w", id, err)
	}
	if diff := predict.ShapeDiff(mp.file, p.file); len(diff) > 0 {
		return nil, usagef("--calibrate %d: run %d ran %s, of another shape than %s: %s", id, id, params.Source, p.source, strings.Join(diff, "; "))
	}
	_, measured, err := analysis.Load(ctx, ar, id)
	if err != nil {
		return nil, err
	}
	cal, err := predict.Calibrate(id, measured)
	if errors.Is(err, predict.ErrNothingToFit) {
		return nil, usagef("--calibrate %d: %v", id, err)
	}
	return cal, err
}

// calibrated are the params of a calibrated prediction: the fitted ones,
// with those set (--set) in their place.
func calibrated(cal *predict.Calibration, set map[string]float64) map[string]float64 {
	params := cal.Params()
	maps.Copy(params, set)
	return params
}
