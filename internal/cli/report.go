package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	htmlreport "github.com/wanlab/wanlab/internal/report"
)

func newReportCmd() *cobra.Command {
	var db, out, prediction string
	c := &cobra.Command{
		Use:   "report RUN",
		Short: "Write a stored run as one self-contained HTML report",
		Long: `Write a run of wanlab run as one HTML file that needs nothing else to be read (plots
are inline SVG): the findings first, in sentences; per workload the summary table with
each step's bottleneck, throughput, CPU and mean job wall-clock against concurrency,
histograms of job wall-clock or task round trip, a streams x window heat map; every link
direction's traffic over time with its capacity and max/avg/current, MRTG style; and the
test-bed and scenario as configured. The file is DIR/wanlab-run-RUN.html.

The report of a measured run shows the newest prediction checked against it (wanlab
predict --check RUN; --prediction P picks another, none none) under "Predicted beside
measured": per step, each main figure predicted and measured with the prediction's error,
the median and worst error, whether the findings agree, and the prediction's calibration
and assumptions; its findings say what the prediction shows of the steps the test-bed
limited, or the command that makes one.`,
		Example: "  wanlab report 3\n  wanlab report 3 --out reports/\n  wanlab report 3 --prediction 5",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			id, err := runNumber(a[0])
			if err != nil {
				return err
			}
			ar, err := openExisting(db)
			if err != nil {
				return err
			}
			defer ar.Close()
			path, err := writeReportWith(c.Context(), ar, id, out, prediction)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), path)
			return nil
		},
	}
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().StringVar(&out, "out", ".", "the directory to write the report in")
	c.Flags().StringVar(&prediction, "prediction", "", predictionFlagDoc)
	return c
}

// writeReport writes run id's report into dir and returns its path. The
// file appears whole or not at all. A measured run's shows the newest
// prediction checked against it.
func writeReport(ctx context.Context, ar *archive.Archive, id int64, dir string) (string, error) {
	return writeReportWith(ctx, ar, id, dir, "")
}

// writeReportWith writes run id's report as writeReport, with the
// prediction that prediction (--prediction) names beside it.
func writeReportWith(ctx context.Context, ar *archive.Archive, id int64, dir, prediction string) (string, error) {
	b, found, err := besideRun(ctx, ar, id, prediction, analysis.DefaultOptions)
	if err != nil {
		return "", err
	}
	opts := htmlreport.Options{Findings: found}
	if b != nil {
		opts.Beside = b.view()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report directory: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("wanlab-run-%d.html", id))
	tmp, err := os.CreateTemp(dir, ".wanlab-report-*")
	if err != nil {
		return "", fmt.Errorf("writing the report: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	if err := htmlreport.WriteWith(ctx, ar, id, Version, w, opts); err != nil {
		tmp.Close()
		return "", err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	os.Chmod(tmp.Name(), 0o644)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
