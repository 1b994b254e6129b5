package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/examples"
	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/realhosts"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

func newRunCmd() *cobra.Command {
	var db, reportDir, inventory, captureDir string
	var asJSON, quick bool
	var resume int64
	var fam addrFamily
	c := &cobra.Command{
		Use:   "run SCENARIO [--inventory FILE] [-4|-6]",
		Short: "Run a scenario's workloads and sweeps on its test-bed or on real hosts, storing every step",
		Long: `Run a scenario: bring up its test-bed, run each step of each workload's sweep while
sampling host CPU, link counters (10 Hz) and the test-bed's own load, store every step in
the archive as soon as it ends, tear the test-bed down and print a summary table
(--json: docs/run-json.md). SCENARIO is a file or the name of a built-in scenario
(wanlab scenarios lists them). --quick uses each workload's quick: settings, for demos
and CI. Ctrl-C stops the run: finished steps stay in the archive, the run is marked
interrupted, and --resume RUN continues it from its first unfinished step.

With --inventory FILE the same scenario runs on real hosts instead: each of its host
names is bound to an agent of the inventory, nothing is built, and the scenario's links
are the expected path that every measurement is compared with (README, real hosts). A
scenario whose hosts name their agents (agent: host:port) runs on them without one. A
resumed run of real hosts needs --inventory again.

On a dual-stack test-bed (family: dual) the workloads test over IPv4 unless -6 is given;
on one of IPv6 alone they test over IPv6, and -4 is refused. On real hosts -4 or -6 asks
every host for a test address of that family (default: the inventory's family:). The
run's params, its events and --json's "family" say which family its workloads used.`,
		Example: `  wanlab run objectivity-lan-100m --quick
  wanlab run examples/diane-sla.yaml --db results.db
  PGPASSWORD=... wanlab run alice-mesh --db postgres://wanlab@db.example.org/wanlab
  wanlab run --resume 7
  wanlab run slac-cern --inventory sites.yaml
  wanlab run my-dual-stack.yaml -6          # a scenario with subnet6:, its workloads over IPv6`,
		Args: args(func(c *cobra.Command, a []string) error {
			if resume != 0 {
				return cobra.NoArgs(c, a)
			}
			return cobra.ExactArgs(1)(c, a)
		}),
		RunE: func(c *cobra.Command, a []string) error {
			if resume < 0 {
				return usagef("--resume %d: give a run number, as wanlab runs lists them", resume)
			}
			opts := controller.Options{Quick: quick, Resume: resume, Version: Version, CaptureDir: captureDir}
			asked, err := fam.value()
			if err != nil {
				return err
			}
			var inv *realhosts.Inventory
			var p *plan
			if resume == 0 {
				// A scenario that cannot run is refused before anything else,
				// root or not.
				var err error
				if p, err = loadPlan(a[0], quick); err != nil {
					return err
				}
				if err := emulable(p); err != nil {
					return err
				}
				opts.Source, opts.Text = p.source, p.text
				if inventory == "" && p.file.Testbed.RealHosts() {
					if inv, err = realhosts.FromScenario(opts.Source, p.file.Testbed); err != nil {
						return err
					}
				}
			} else if c.Flags().Changed("quick") {
				return usagef("--quick cannot change a resumed run: it keeps the setting it started with")
			} else if asked != "" {
				return usagef("%s cannot change a resumed run: it keeps the address family it started with", flagOf(asked))
			}
			if inventory != "" {
				var err error
				if inv, err = realhosts.LoadHosts(inventory); err != nil {
					return err
				}
				if p != nil {
					if err := inventoryHolds(inv, p); err != nil {
						return err
					}
				}
			}
			if opts.Family, err = runFamily(p, inventory, inv, asked); err != nil {
				return err
			}
			if inv != nil {
				if inv, err = withFamily(inv, opts.Family); err != nil {
					return err
				}
			}
			ctx := c.Context()
			if inv == nil {
				if err := testbed.CheckEnvironment(); err != nil {
					return err
				}
				opts.Backend = "emulated"
				opts.Start = func(ctx context.Context, source string, text []byte) (backend.Bed, error) {
					up := newProgress(c.ErrOrStderr(), 0, "test-bed").terminalOnly()
					defer up.done()
					return testbed.Start(ctx, source, text, up.upStep)
				}
			} else {
				ctx = measure.WithWait(ctx, inv.Wait)
				opts.Backend = "real hosts: " + inv.Source
				opts.Start = func(ctx context.Context, source string, text []byte) (backend.Bed, error) {
					bed, err := realhosts.Start(inv, source, text)
					if err != nil {
						return nil, err
					}
					return bed, nil
				}
			}
			ar, err := archive.Open(db)
			if err != nil {
				return err
			}
			defer ar.Close()
			opts.Archive = ar
			bar := newRunProgress(c.ErrOrStderr())
			opts.Progress = bar.update
			res, err := controller.Run(ctx, opts)
			bar.finish()
			if res == nil {
				return err
			}
			return showRun(c, ar, res, err, asJSON, reportDir)
		},
	}
	c.Flags().StringVar(&db, "db", defaultDB, "the archive: a SQLite file or a postgres:// URL")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&quick, "quick", false, "use the workloads' quick: settings (short steps)")
	c.Flags().Int64Var(&resume, "resume", 0, "continue run `RUN` from its first unfinished step")
	c.Flags().StringVar(&reportDir, "report", "", "also write the HTML report into `DIR`")
	c.Flags().StringVar(&captureDir, "captures", ".", "where the pcapng files of workloads' capture: go (`DIR`)")
	c.Flags().StringVar(&inventory, "inventory", "", "run on the real hosts of this inventory, not on an emulated test-bed")
	fam.flags(c)
	return c
}

// runFamily is the address family a run's workloads test over: on an
// emulated test-bed, or real hosts named by the scenario itself, the one
// asked for (-4, -6) that its hosts have, else the scenario's preference
// (controller.Family; asking for one its hosts lack is a usage error;
// of real hosts, only -4 of a scenario of IPv6 alone); on an
// inventory's hosts, the one asked for or "" (the inventory's
// family:). A resumed run (p nil) keeps its own.
func runFamily(p *plan, inventory string, inv *realhosts.Inventory, asked string) (string, error) {
	switch {
	case p == nil:
		return "", nil
	case inventory != "":
		return asked, nil
	case inv != nil && asked == "":
		return inv.Family, nil // a scenario of real hosts: "" or ipv6
	case inv != nil && (asked == measure.IPv6 || p.file.Testbed.HasIPv4()):
		// Its family: says no more of real hosts than IPv6 alone.
		return asked, nil
	}
	f, err := controller.Family(p.source, p.file.Testbed, asked)
	if errors.Is(err, backend.ErrFamily) {
		return "", usagef("%s: %w", flagOf(asked), err)
	}
	return f, err
}

// showRun shows a run that ended (wanlab run, wanlab predict), also one
// cut short: its analysis, its report if reportDir is set, and its
// summary table and findings, or all of them as JSON. It returns runErr,
// with whatever failed on the way.
func showRun(c *cobra.Command, ar *archive.Archive, res *controller.Result, runErr error, asJSON bool, reportDir string) error {
	ctx := c.Context()
	err := runErr
	// The analysis of what was measured, even of a run cut short.
	var rep *analysis.Report
	if len(res.Steps) > 0 {
		var aerr error
		if rep, aerr = analysis.Analyze(context.WithoutCancel(ctx), ar, res.Run, analysis.DefaultOptions); aerr != nil {
			fmt.Fprintf(c.ErrOrStderr(), "wanlab: analysing run %d: %v\n", res.Run, aerr)
		}
	}
	var report string
	if reportDir != "" && len(res.Steps) > 0 {
		var rerr error
		if report, rerr = writeReport(context.WithoutCancel(ctx), ar, res.Run, reportDir); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if asJSON {
		doc := struct {
			*controller.Result
			Analysis *analysis.Report `json:"analysis,omitempty"`
			Report   string           `json:"report,omitempty"`
		}{res, rep, report}
		if werr := writeJSON(c.OutOrStdout(), doc); werr != nil {
			return werr
		}
		return err
	}
	printRun(c.OutOrStdout(), res)
	if rep != nil {
		fmt.Fprintln(c.OutOrStdout())
		printAnalysis(c.OutOrStdout(), rep, false)
		fmt.Fprintf(c.OutOrStdout(), "(per-step bottlenecks: wanlab analyze %d --db %s)\n", res.Run, res.Archive)
	}
	if report != "" {
		fmt.Fprintf(c.OutOrStdout(), "\nreport: %s\n", report)
	}
	return err
}

// readScenario reads a scenario file, or a built-in scenario by name. A
// name that is neither, or a folder, is a usage error.
func readScenario(name string) (source string, text []byte, err error) {
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		return "", nil, usagef("%s is a directory: give a scenario file, or a built-in scenario's name (wanlab scenarios)", name)
	}
	text, err = os.ReadFile(name)
	if err == nil {
		return name, text, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", nil, fmt.Errorf("reading scenario: %w", err)
	}
	if s, ok := examples.Lookup(name); ok {
		return s.Name, s.Text, nil
	}
	return "", nil, usagef("no scenario file or built-in scenario %q (built-ins: %s)", name, builtinNames())
}

// builtinNames lists the built-in scenarios' names.
func builtinNames() string {
	var names []string
	for _, s := range examples.Builtins() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// plan is a scenario read by name, checked, and its test-bed resolved.
type plan struct {
	source string
	text   []byte
	file   *scenario.File
	topo   *topology.Topology
}

// loadPlan reads a scenario file or built-in (readScenario), checks it and
// resolves its test-bed. Whatever is wrong with it is a usage error: the
// scenario's own problems (*scenario.Error), and a test-bed one machine
// cannot hold (every error of topology.New is about the scenario).
func loadPlan(name string, quick bool) (*plan, error) {
	source, text, err := readScenario(name)
	if err != nil {
		return nil, err
	}
	return planOf(source, text, quick)
}

// planOf checks a scenario's text and resolves its test-bed, as loadPlan.
func planOf(source string, text []byte, quick bool) (*plan, error) {
	f, err := scenario.Parse(source, text, quick)
	if err != nil {
		return nil, err
	}
	topo, err := topology.New(f.Testbed)
	if err != nil {
		return nil, usageError{err}
	}
	return &plan{source: source, text: text, file: f, topo: topo}, nil
}

// emulable refuses, as a usage error, a scenario that is only simulated
// (backend: simulated): it is larger than one machine emulates.
func emulable(p *plan) error {
	if !p.file.Testbed.Simulated() {
		return nil
	}
	return usagef("scenario %s has backend: simulated: it says it is past what one machine emulates (%d hosts); predict it on the simulator instead: wanlab predict %s", p.source, len(p.file.Testbed.Hosts), p.source)
}

// inventoryHolds refuses, as a usage error, an inventory that has no agent
// for some host of the scenario: the run would fail only once started.
func inventoryHolds(inv *realhosts.Inventory, p *plan) error {
	var missing []string
	for _, h := range p.file.Testbed.Hosts {
		if _, ok := inv.Host(h.Name); !ok {
			missing = append(missing, h.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	noun := "host"
	if len(missing) > 1 {
		noun = "hosts"
	}
	hint := "name the scenario's hosts as the inventory does, or bind them in its hosts:"
	if _, ok := examples.Lookup(p.source); ok {
		hint = "a built-in's hosts are its study's: write a scenario for the inventory's hosts (wanlab scenarios show " + p.source + " prints this one), or bind its names in the inventory's hosts:"
	}
	return usagef("the inventory %s has no agent for %s %s of scenario %s: %s", inv.Source, noun, strings.Join(missing, ", "), p.source, hint)
}

// runProgress shows a run's steps through a progress.
type runProgress struct {
	*progress
	step int
}

func newRunProgress(w io.Writer) *runProgress {
	return &runProgress{progress: newProgress(w, 1, "run")}
}

func (p *runProgress) update(pr controller.Progress) {
	label := fmt.Sprintf("%s %s", pr.Workload, pr.Label)
	if pr.Step != p.step {
		p.setTotal(pr.Steps)
		p.progress.step(label)
		p.step = pr.Step
	}
	if pr.Expected == 0 {
		return // a measurement, not jobs
	}
	jobs := fmt.Sprintf("%d/%d jobs done", pr.Finished, pr.Expected)
	if running := pr.Expected - pr.Finished; running > 0 {
		jobs += fmt.Sprintf(", %d running", running)
	}
	if pr.Failed > 0 {
		jobs += fmt.Sprintf(", %d failed", pr.Failed)
	}
	p.note(label + ": " + jobs)
}

func (p *runProgress) finish() { p.done() }

// printRun prints a run's summary: a table per workload like the seeds'.
func printRun(w io.Writer, res *controller.Result) {
	quick := ""
	if res.Quick {
		quick = " (quick)"
	}
	over := ""
	switch res.Family {
	case measure.IPv4:
		over = " over IPv4"
	case measure.IPv6:
		over = " over IPv6"
	}
	fmt.Fprintf(w, "run %d: %s%s on test-bed %s%s%s: %s", res.Run, res.Scenario, quick, res.Testbed, predictedMark(res.Backend), over, res.Status)
	if res.Reason != "" {
		fmt.Fprintf(w, " (%s)", res.Reason)
	}
	fmt.Fprintf(w, " in %s\n", time.Duration(res.Seconds*float64(time.Second)).Round(time.Second))
	var limited, quotaCPU bool
	for i := 0; i < len(res.Steps); {
		name := res.Steps[i].Workload
		kind := res.Steps[i].Kind
		fmt.Fprintf(w, "\n%s (%s)\n", name, kind)
		t := table(w)
		head := "STEP\tSTATUS"
		cols := kinds.TraitsOf(kind).Columns
		for _, col := range cols {
			head += "\t" + col.Head
			quotaCPU = quotaCPU || col.Shows(results.CPUQuotaPct)
		}
		fmt.Fprintln(t, head)
		for ; i < len(res.Steps) && res.Steps[i].Workload == name; i++ {
			s := res.Steps[i]
			label := orDash(s.Label)
			if s.TestbedLimited {
				label += " !"
				limited = true
			}
			row := label + "\t" + s.Status
			for _, col := range cols {
				cell := "-"
				if v, ok := col.Value(s.Metrics); ok {
					cell = fmt.Sprintf(col.Format, v)
				}
				row += "\t" + cell
			}
			fmt.Fprintln(t, row)
		}
		t.Flush()
		for _, s := range res.Steps {
			if s.Workload == name && s.Reason != "" {
				fmt.Fprintf(w, "  step %s: %s\n", orDash(s.Label), s.Reason)
			}
		}
	}
	if quotaCPU {
		fmt.Fprintln(w, "\nCPU% is of the host's cpus quota where it has one, else of one core.")
	}
	if limited {
		fmt.Fprintln(w, "! the test-bed itself was saturated in the steps marked ! (see limited_by in --json): their figures describe this machine, not the scenario")
	}
	fmt.Fprintf(w, "\nstored in %s as run %d: %d samples, about %s; see wanlab export %d\n",
		res.Archive, res.Run, res.Samples, units.Size(res.StoredBytes).String(), res.Run)
}

func newScenariosCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "scenarios [show NAME]",
		Short: "List the built-in scenarios that wanlab run takes by name, or print one",
		Long: `List the built-in scenarios: each reproduces one of the studies wanlab grew from, and
is also in examples/ with comments that cite the study's figures. Every verb that takes
a scenario file takes a built-in's name too (run, testbed validate, up and check);
wanlab scenarios show NAME prints one, to read or to start a scenario of your own from.`,
		Example: "  wanlab scenarios\n  wanlab run objectivity-wan-2m --quick\n  wanlab scenarios show alice-streams > mine.yaml",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			list := examples.Builtins()
			if asJSON {
				return writeJSON(c.OutOrStdout(), list)
			}
			t := table(c.OutOrStdout())
			fmt.Fprintln(t, "NAME\tWHAT")
			for _, s := range list {
				fmt.Fprintf(t, "%s\t%s\n", s.Name, s.Title)
			}
			return t.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	c.AddCommand(newScenariosShowCmd())
	return c
}

func newScenariosShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in scenario's YAML, comments and all",
		Long: `Print a built-in scenario as it is shipped (examples/NAME.yaml), with the comments that
cite its study: to read what wanlab run NAME does, or to start a scenario of your own,
for instance one whose host names are those of an inventory of real hosts.`,
		Example: "  wanlab scenarios show alice-streams > sites-streams.yaml",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			s, ok := examples.Lookup(a[0])
			if !ok {
				return usagef("no built-in scenario %q (built-ins: %s)", a[0], builtinNames())
			}
			_, err := c.OutOrStdout().Write(s.Text)
			return err
		},
	}
}
