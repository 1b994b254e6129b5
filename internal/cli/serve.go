package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/dashboard"
	"github.com/wanlab/wanlab/internal/monitor"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/web"
	"github.com/wanlab/wanlab/internal/realhosts"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/units"
)

// defaultHTTP is serve's listener unless told otherwise: loopback only.
const defaultHTTP = "127.0.0.1:9474"

func newServeCmd() *cobra.Command {
	var cfgName, httpAddr, db, bufferDir string
	var dryRun, asJSON bool
	var horizon time.Duration
	c := &cobra.Command{
		Use:   "serve --config FILE [--http ADDR:PORT] [--db ARCHIVE] [--dry-run]",
		Short: "Monitor a mesh of hosts continuously: scheduled tests, archive, /metrics, alerts",
		Long: `Run wanlab as a monitoring service: a mesh of regular tests among the hosts of an
emulated test-bed (brought up and torn down by serve) or of real agents (an inventory),
as the configuration says (README, monitoring; docs/monitoring.md): continuous probes
summarised per period, throughput tests and disk-to-disk transfers every so often,
never two throughput-class tests on one host at once. Every result goes to the archive
(a SQLite file, or PostgreSQL for a shared one) as it lands, or to a local buffer while
the archive is away. Each path learns a baseline and alerts fire when it leaves it.

The HTTP listener serves /metrics (Prometheus) and the API under /api/v1/. SIGHUP
reloads the configuration without losing state; Ctrl-C or SIGTERM stops the service,
the running tests and the test-bed. --dry-run prints the schedule of --horizon and the
load it puts on each host and link, and starts nothing.`,
		Example: `  wanlab serve --config examples/monitor-lab.yaml
  wanlab serve --config monitor-lab --dry-run
  wanlab serve --config sites.yaml --db postgres://wanlab@db.example.org/wanlab --http 0.0.0.0:9474`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			if cfgName == "" {
				return usagef("give --config FILE (or --config monitor-lab, the shipped example)")
			}
			cfg, err := monitor.LoadNamed(cfgName)
			if errors.Is(err, os.ErrNotExist) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if dryRun {
				return dryRunServe(c.OutOrStdout(), cfg, horizon, asJSON)
			}
			if _, _, err := net.SplitHostPort(httpAddr); err != nil {
				return usagef("--http %q: give ADDR:PORT, as 127.0.0.1:9474", httpAddr)
			}
			return serve(c.Context(), c.ErrOrStderr(), c.OutOrStdout(), cfg, httpAddr, db, bufferDir)
		},
	}
	c.Flags().StringVar(&cfgName, "config", "", "the monitoring configuration: a file, or monitor-lab (shipped)")
	c.Flags().StringVar(&httpAddr, "http", defaultHTTP, "where to serve the dashboard, /metrics and /api/v1")
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().StringVar(&bufferDir, "buffer", "", "where results wait while the archive is away (default: the configuration's buffer.dir, else ~/.local/state/wanlab/buffer)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print the schedule and the load on each host and link, and exit")
	c.Flags().DurationVar(&horizon, "horizon", 24*time.Hour, "how far ahead --dry-run plans")
	c.Flags().BoolVar(&asJSON, "json", false, "with --dry-run: print the plan as JSON")
	return c
}

// expected is the topology a configuration's hosts are expected to have:
// the test-bed's, or the inventory's hosts with no known links.
func expected(cfg *core.Config) (*topology.Topology, error) {
	if cfg.Testbed != "" {
		f, _, _, err := monitor.TestbedFile(cfg)
		if err != nil {
			return nil, err
		}
		return topology.New(f.Testbed)
	}
	inv, err := realhosts.LoadHosts(cfg.Inventory)
	if err != nil {
		return nil, err
	}
	t := &topology.Topology{Name: inv.Name}
	for _, h := range inv.Hosts {
		t.Hosts = append(t.Hosts, topology.Host{Name: h.Name})
	}
	return t, nil
}

func dryRunServe(w io.Writer, cfg *core.Config, horizon time.Duration, asJSON bool) error {
	if horizon < time.Minute || horizon > 31*24*time.Hour {
		return usagef("--horizon %s: give 1m to 744h", horizon)
	}
	topo, err := expected(cfg)
	if err != nil {
		return err
	}
	var known []string
	for _, h := range topo.Hosts {
		known = append(known, h.Name)
	}
	if err := cfg.CheckHosts(known); err != nil {
		return usageError{err}
	}
	if err := core.Impossible(cfg); err != nil {
		return usageError{err}
	}
	paths := map[[2]string]core.Path{}
	for _, p := range topo.Paths {
		paths[[2]string{p.From, p.To}] = core.Path{Via: p.Via, Bottleneck: p.Bottleneck}
	}
	rates := map[string]float64{}
	for _, d := range topo.Dirs {
		rates[d.Name] = float64(d.Config.Rate)
	}
	plan := core.DryRun(cfg, time.Now().Truncate(time.Minute), horizon, paths, rates)
	if asJSON {
		return writeJSON(w, plan)
	}
	fmt.Fprintf(w, "%s: %d tests over %d hosts, planned for %s from %s\n\n", cfg.Source, len(cfg.Tests), len(known), horizon, plan.Start.Local().Format(time.DateTime))
	t := table(w)
	fmt.Fprintln(t, "TEST\tTYPE\tGROUP\tPAIRS\tEVERY\tEACH RUN")
	for _, tt := range cfg.Tests {
		each := fmt.Sprintf("%g probes a second, summarised", tt.Rate)
		switch tt.Type {
		case core.Throughput:
			each = fmt.Sprintf("%s, %d streams", tt.Duration, tt.Streams)
		case core.Transfer:
			each = fmt.Sprintf("%s disk to disk, %d streams", units.Size(tt.Bytes), tt.Streams)
		case core.Trace:
			each = fmt.Sprintf("up to %d hops, %s each", tt.MaxHops, tt.Wait)
		case core.Disk:
			each = fmt.Sprintf("%s written and read on each host", units.Size(tt.Bytes))
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%s\t%s\n", tt.Name, tt.Type, tt.Group, len(cfg.Pairs(tt)), tt.Period(), each)
	}
	t.Flush()
	fmt.Fprintln(w)
	t = table(w)
	fmt.Fprintln(t, "HOST\tTHROUGHPUT-CLASS TIME\tRUNS\tPROBES/S (SENT+REFLECTED)")
	for _, h := range plan.Hosts {
		fmt.Fprintf(t, "%s\t%.1f%%\t%d\t%g\n", h.Host, 100*h.ExclusiveFraction, h.Runs, h.ProbePackets)
	}
	t.Flush()
	if len(plan.Links) > 0 {
		fmt.Fprintln(w)
		t = table(w)
		fmt.Fprintln(t, "LINK DIRECTION\tTEST TRAFFIC/DAY\tOF CAPACITY")
		for _, l := range plan.Links {
			fmt.Fprintf(t, "%s\t%.2f GB\t%.2f%%\n", l.Direction, l.BytesPerDay/1e9, 100*l.Fraction)
		}
		t.Flush()
	}
	fmt.Fprintf(w, "\n%d throughput-class runs in %s, %d later than their slip allows; the first:\n", len(plan.Runs), horizon, plan.Late)
	t = table(w)
	fmt.Fprintln(t, "START\tTEST\tPATH\tUNTIL")
	for _, r := range plan.Runs[:min(len(plan.Runs), 20)] {
		fmt.Fprintf(t, "%s\t%s\t%s->%s\t%s\n", r.Start.Local().Format(time.TimeOnly), r.Test, r.Src, r.Dst, r.End.Local().Format(time.TimeOnly))
	}
	t.Flush()
	return nil
}

func defaultBufferDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "wanlab", "buffer")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "wanlab", "buffer")
	}
	return filepath.Join(os.TempDir(), "wanlab-buffer")
}

func serve(ctx context.Context, logTo, out io.Writer, cfg *core.Config, httpAddr, db, bufferDir string) error {
	logger := log.New(logTo, "wanlab serve: ", log.LstdFlags)
	logf := func(format string, args ...any) { logger.Printf(format, args...) }
	// Ask before anything is built: the listener's port may be taken.
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", httpAddr, err)
	}
	defer ln.Close()
	bed, err := openMonitored(ctx, logTo, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := bed.Close(); cerr != nil {
			logf("tearing down: %v", cerr)
		}
	}()
	if bufferDir == "" {
		bufferDir = cfg.Buffer.Dir
	}
	if bufferDir == "" {
		bufferDir = defaultBufferDir()
	}
	store, err := monitor.OpenStore(db, bufferDir, cfg.Buffer.Max, logf)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	svc, err := monitor.New(cfg, monitor.Options{Bed: bed, Store: store, Logf: logf, Webhook: monitor.NewWebhook(ctx, cfg.Webhook, logf), Seed: uint64(time.Now().UnixNano())})
	if err != nil {
		return err
	}
	api, err := web.New(svc, web.ListenerNames(ctx, httpAddr))
	if err != nil {
		return err
	}
	go api.Run(ctx)
	srv := &http.Server{Handler: dashboard.Handler(svc, api), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	go srv.Serve(ln)
	defer srv.Close()
	hangupReloads.Store(true)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			next, err := monitor.LoadNamed(cfg.Source)
			if err == nil {
				err = svc.Reload(ctx, next, api.Reload)
			}
			if err != nil {
				logf("SIGHUP: %v (the running configuration stays)", err)
			}
		}
	}()
	fmt.Fprintf(out, "monitoring %d hosts of %s: dashboard at http://%s/ (metrics: /metrics, API: /api/v1/); archive %s; Ctrl-C stops\n",
		len(cfg.Hosts()), bed.Topology().Name, ln.Addr(), store.Location())
	err = svc.Run(ctx)
	logf("stopped")
	return err
}

// openMonitored brings up the configuration's test-bed, or opens its
// inventory of real agents.
func openMonitored(ctx context.Context, logTo io.Writer, cfg *core.Config) (backend.Bed, error) {
	if cfg.Inventory != "" {
		inv, err := realhosts.LoadHosts(cfg.Inventory)
		if err != nil {
			return nil, err
		}
		return realhosts.Open(inv, nil)
	}
	if err := testbed.CheckEnvironment(); err != nil {
		return nil, err
	}
	f, source, text, err := monitor.TestbedFile(cfg)
	if err != nil {
		return nil, err
	}
	// A test-bed already up (testbed up, or for several service processes
	// sharing one archive) is used as it is and left up.
	if testbed.Alive(f.Testbed.Name) {
		bed, err := testbed.Attach(f.Testbed.Name)
		if err == nil {
			fmt.Fprintf(logTo, "wanlab serve: test-bed %s is already up: monitoring it, and leaving it up\n", f.Testbed.Name)
		}
		return bed, err
	}
	up := newProgress(logTo, 0, "test-bed").terminalOnly()
	defer up.done()
	bed, err := testbed.Start(ctx, source, text, up.upStep)
	if errors.Is(err, context.Canceled) {
		return nil, err
	}
	return bed, err
}
