package cli

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/dashboard"
	"github.com/wanlab/wanlab/internal/monitor/web"
)

// defaultUI is wanlab ui's listener unless told otherwise: loopback only,
// beside wanlab serve's.
const defaultUI = "127.0.0.1:9475"

func newUICmd() *cobra.Command {
	var db, httpAddr string
	c := &cobra.Command{
		Use:   "ui [--db ARCHIVE] [--http ADDR:PORT]",
		Short: "Browse an archive of lab runs in a web browser: runs, reports, comparisons",
		Long: `Serve the lab side of the dashboard for an archive of wanlab run: the list of runs
with their status, each run's report (findings, sweep tables and plots), and runs side by
side (the same scenario at 2, 10, 100 and 1000 Mbit/s, say), with the lowest link speed
at which the workload still runs efficiently. Everything is embedded: it works offline.
The archive is opened read-only; nothing is measured. Ctrl-C stops.`,
		Example: `  wanlab ui --db wanlab.db
  wanlab ui --db postgres://wanlab@db.example.org/wanlab --http 127.0.0.1:8080`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			if _, _, err := net.SplitHostPort(httpAddr); err != nil {
				return usagef("--http %q: give ADDR:PORT, as %s", httpAddr, defaultUI)
			}
			ar, err := openExisting(db)
			if err != nil {
				return err
			}
			defer ar.Close()
			ln, err := net.Listen("tcp", httpAddr)
			if err != nil {
				return fmt.Errorf("--http %s: %w", httpAddr, err)
			}
			logf := log.New(c.ErrOrStderr(), "wanlab ui: ", log.LstdFlags).Printf
			names := web.ListenerNames(c.Context(), httpAddr)
			srv := &http.Server{Handler: dashboard.Lab(ar, Version, names, logf), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute}
			go srv.Serve(ln)
			defer srv.Close()
			fmt.Fprintf(c.OutOrStdout(), "runs of %s: dashboard at http://%s/; Ctrl-C stops\n", ar.Location(), ln.Addr())
			<-c.Context().Done()
			return nil
		},
	}
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().StringVar(&httpAddr, "http", defaultUI, "where to serve the dashboard")
	return c
}
