package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/analysis"
)

func newAnalyzeCmd() *cobra.Command {
	var db, prediction string
	var asJSON bool
	opts := analysis.DefaultOptions
	c := &cobra.Command{
		Use:   "analyze RUN",
		Short: "Find a run's bottlenecks, saturation point, failures and other findings",
		Long: `Analyse a stored run of wanlab run: where throughput peaks and stops growing, what
limited each step (client_cpu, server_cpu, network, disk, latency, or the test-bed
itself), the "efficient running" boundary (the largest concurrency whose mean job
wall-clock stays under k x the single job's), where jobs start failing and why, the best
streams and window of a path against its bandwidth-delay product, asymmetry between
directions (Welch's t-test), what a load does to others, the latency cost of a task
farm, and TCP throughput against the Mathis bound. wanlab run prints this at its end.
--json gives every finding with its figures (docs/analysis-json.md).

Of a measured run, it shows the newest prediction checked against it (wanlab predict
--check RUN; --prediction P picks another, none none) under "Predicted beside measured":
per step, each main figure predicted and measured with the prediction's error, the median
and worst error, whether the findings agree, and what the prediction assumes. The
findings say what the prediction shows of the steps the test-bed limited, or the command
that makes one.`,
		Example: "  wanlab analyze 3\n  wanlab analyze 3 --json --k 5\n  wanlab analyze 3 --prediction none",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			id, err := runNumber(a[0])
			if err != nil {
				return err
			}
			if opts.EfficientFactor <= 1 {
				return usagef("--k %g: the efficient-running factor must be more than 1", opts.EfficientFactor)
			}
			if opts.Saturated <= 0 || opts.Saturated > 100 {
				return usagef("--saturated %g: give a percentage from 1 to 100", opts.Saturated)
			}
			ar, err := openExisting(db)
			if err != nil {
				return err
			}
			defer ar.Close()
			rep, err := analysis.Analyze(c.Context(), ar, id, opts)
			if err != nil {
				return err
			}
			b, found, err := besideRun(c.Context(), ar, id, prediction, opts)
			if err != nil {
				return err
			}
			rep.AddUnlimited(found)
			if asJSON {
				return writeJSON(c.OutOrStdout(), struct {
					*analysis.Report
					Prediction *beside `json:"prediction,omitempty"`
				}{rep, b})
			}
			if err := printPredicted(c.Context(), c.OutOrStdout(), ar, id); err != nil {
				return err
			}
			printAnalysis(c.OutOrStdout(), rep, true)
			if b != nil {
				printBeside(c.OutOrStdout(), b)
			}
			return nil
		},
	}
	c.Flags().StringVar(&prediction, "prediction", "", predictionFlagDoc)
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().BoolVar(&asJSON, "json", false, "print the analysis as JSON")
	c.Flags().Float64Var(&opts.EfficientFactor, "k", opts.EfficientFactor, "efficient running: mean job wall-clock under k x the single job's")
	c.Flags().Float64Var(&opts.Saturated, "saturated", opts.Saturated, "utilisation (%) from which a CPU or link counts as full")
	return c
}

// printAnalysis prints the findings first, in sentences, then (if steps)
// what limited each step.
func printAnalysis(w io.Writer, rep *analysis.Report, steps bool) {
	fmt.Fprintf(w, "Findings")
	if rep.Bottleneck != "" {
		fmt.Fprintf(w, " (bottleneck: %s)", rep.Bottleneck)
	}
	fmt.Fprintln(w, ":")
	if len(rep.Findings) == 0 {
		fmt.Fprintln(w, "  none: no step measured a throughput to judge")
	}
	for _, f := range rep.Findings {
		who := ""
		if f.Workload != "" {
			who = f.Workload + ": "
		}
		fmt.Fprintf(w, "  - %s%s\n", who, f.Text)
	}
	if !steps {
		return
	}
	for _, ws := range rep.Workloads {
		if !slices.ContainsFunc(ws.Steps, func(v analysis.StepVerdict) bool { return v.Bottleneck != "" }) {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s)\n", ws.Name, ws.Kind)
		t := table(w)
		fmt.Fprintln(t, "STEP\tBOTTLENECK\tCONFIDENCE\tWHY")
		for _, v := range ws.Steps {
			fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", orDash(v.Label), orDash(v.Bottleneck), orDash(v.Confidence), strings.TrimSpace(v.Why))
		}
		t.Flush()
	}
}

// runNumber reads the argument RUN: a run's number, as wanlab runs lists
// them.
func runNumber(arg string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("RUN must be a run number, as wanlab runs lists them")
	}
	return id, nil
}
