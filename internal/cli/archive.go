package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/archive"
)

// defaultDB is the archive the archive verbs read unless told otherwise.
const defaultDB = "wanlab.db"

// startRecord records a measurement as started in the archive at path
// (nothing if path is ""), so that it is kept even if it is cut short.
func startRecord(path, kind, name, testbed string, params any) (*archive.Recording, error) {
	return archive.Record(path, archive.NewRun{Kind: kind, Name: name, Testbed: testbed, Version: Version, Params: params})
}

func newRunsCmd() *cobra.Command {
	var db string
	var asJSON bool
	c := &cobra.Command{
		Use:     "runs",
		Short:   "List the runs stored in a measurement archive",
		Example: "  wanlab runs --db wanlab.db",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			ar, err := openExisting(db)
			if err != nil {
				return err
			}
			defer ar.Close()
			// A run whose wanlab was killed shows as interrupted, not running
			// (where the archive may be written).
			if !ar.ReadOnly() {
				if _, err := ar.MarkAbandoned(c.Context()); err != nil {
					return err
				}
			}
			runs, err := ar.Runs(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if runs == nil {
					runs = []archive.Run{}
				}
				return writeJSON(c.OutOrStdout(), runs)
			}
			t := table(c.OutOrStdout())
			fmt.Fprintln(t, "RUN\tKIND\tNAME\tTEST-BED\tSTARTED\tSTATUS\tSAMPLES")
			for _, r := range runs {
				started := r.StartedAt
				if ts, err := time.Parse(time.RFC3339Nano, r.StartedAt); err == nil {
					started = ts.Local().Format(time.DateTime)
				}
				status := r.Status
				if r.Reason != "" {
					status += ": " + r.Reason
				}
				fmt.Fprintf(t, "%d\t%s\t%s\t%s\t%s\t%s\t%d\n", r.ID, r.Kind+predictedMark(backendOf(r)), r.Name, orDash(r.Testbed), started, status, r.Samples)
			}
			return t.Flush()
		},
	}
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func newExportCmd() *cobra.Command {
	var db, format string
	c := &cobra.Command{
		Use:   "export RUN",
		Short: "Write a stored run's samples as CSV or JSON lines",
		Long: `Write every sample of a run, in time order, with its metric (NMWG name), subject, value
and unit: CSV with a header line, or one JSON object per line. See docs/archive.md.`,
		Example: "  wanlab export 3 --format csv > run3.csv",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			id, err := strconv.ParseInt(a[0], 10, 64)
			if err != nil {
				return usagef("RUN must be a run number, as wanlab runs lists them")
			}
			if format != "csv" && format != "jsonl" {
				return usagef("--format %q: csv or jsonl", format)
			}
			ar, err := openExisting(db)
			if err != nil {
				return err
			}
			defer ar.Close()
			return exportSamples(c.Context(), c.OutOrStdout(), ar, id, format)
		},
	}
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().StringVar(&format, "format", "csv", "csv or jsonl")
	return c
}

func exportSamples(ctx context.Context, w io.Writer, ar *archive.Archive, id int64, format string) error {
	if format == "jsonl" {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return ar.Samples(ctx, id, func(s archive.Sample) error {
			return enc.Encode(map[string]any{"t": s.T.Format(time.RFC3339Nano), "metric": s.Metric, "subject": s.Subject, "value": s.Value, "unit": s.Unit})
		})
	}
	cw := csv.NewWriter(w)
	header := func() { cw.Write([]string{"t", "metric", "subject", "value", "unit"}) }
	wrote := false
	err := ar.Samples(ctx, id, func(s archive.Sample) error {
		if !wrote {
			header()
			wrote = true
		}
		return cw.Write([]string{s.T.Format(time.RFC3339Nano), s.Metric, s.Subject, strconv.FormatFloat(s.Value, 'g', -1, 64), s.Unit})
	})
	if err != nil {
		return err // nothing written for a run that does not exist
	}
	if !wrote {
		header()
	}
	cw.Flush()
	return cw.Error()
}

// openExisting opens an archive that must already exist, to read it:
// reading verbs never create one by mistake, and work on an archive they
// may not write.
func openExisting(path string) (*archive.Archive, error) {
	if !archive.IsPostgres(path) {
		if _, err := statFile(path); err != nil {
			return nil, fmt.Errorf("no archive at %s (give --db PATH): %w", path, err)
		}
	}
	return archive.OpenReadOnly(path)
}

func statFile(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
