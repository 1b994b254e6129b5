package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/archive"
	htmlreport "github.com/wanlab/wanlab/internal/report"
)

func newReportCmd() *cobra.Command {
	var db, out string
	c := &cobra.Command{
		Use:   "report RUN",
		Short: "Write a stored run as one self-contained HTML report",
		Long: `Write a run of wanlab run as one HTML file that needs nothing else to be read (plots
are inline SVG): the findings first, in sentences; per workload the summary table with
each step's bottleneck, throughput, CPU and mean job wall-clock against concurrency,
histograms of job wall-clock or task round trip, a streams x window heat map; every link
direction's traffic over time with its capacity and max/avg/current, MRTG style; and the
test-bed and scenario as configured. The file is DIR/wanlab-run-RUN.html.`,
		Example: "  wanlab report 3\n  wanlab report 3 --out reports/",
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
			path, err := writeReport(c.Context(), ar, id, out)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), path)
			return nil
		},
	}
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().StringVar(&out, "out", ".", "the directory to write the report in")
	return c
}

// writeReport writes run id's report into dir and returns its path. The
// file appears whole or not at all.
func writeReport(ctx context.Context, ar *archive.Archive, id int64, dir string) (string, error) {
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
	if err := htmlreport.Write(ctx, ar, id, Version, w); err != nil {
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
