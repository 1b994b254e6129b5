package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/endpoints"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/twin"
	"github.com/wanlab/wanlab/internal/twinrun"
	"github.com/wanlab/wanlab/internal/units"
)

// twinVerb is wanlab twin's flags.
type twinVerb struct {
	hosts
	db, fromTime, toTime string
	from, to, out, name  string
	check, asJSON        bool
	budget               time.Duration
	// since and until are --from-time and --to-time parsed (zero: open).
	since, until time.Time
}

func newTwinCmd() *cobra.Command {
	var v twinVerb
	c := &cobra.Command{
		Use:   "twin (--testbed NAME | --inventory FILE | --db ARCHIVE) --from A --to B -o FILE",
		Short: "Fit an emulated path (a scenario) to measurements of a real one, and check it by replay",
		Long: `Write a scenario whose one link between A and B behaves like the measured path, each way
(forward: A to B, reverse: B to A): bottleneck rate, base delay and jitter, the bottleneck
queue, the loss model (Bernoulli or Gilbert-Elliott, chosen by the runs of losses),
cross traffic (mean and pattern) and MTU, every value with a comment giving its evidence
and 95% interval, and what could not be fitted listed as unknown with the default used.

With --testbed or --inventory, twin runs a campaign through the agents first: the plan
(traces, capacity, probes, available bandwidth, a UDP load at 1.25x the capacity with probes,
1- and 8-stream TCP, each way) is printed to stderr, sized to --budget (default 110s) and to 1% of a day's
bytes_per_day of the agents' policy; a budget too small for the least campaign is refused
(exit 2). Ctrl-C stops it: the twin is written from what was measured, the rest unknown
(exit 1). A step the agents' policy refuses is named with its rule, and the campaign
goes on. With --db, twin reads the history a wanlab serve archive holds of the path
(--from-time, --to-time) and needs no agents; a history has no loaded test and no
per-probe series, so the queue and the loss model are unknown. Of a path measured over
both address families, it fits the family with the most probe summaries, or -4 or -6's.

--check then brings the twin up as a test-bed (torn down after, also on Ctrl-C), runs the
same plan on it and prints measured against twin for each figure (1- and 8-stream TCP
throughput, RTT under load, loss rate and mean burst, available bandwidth) with the
error of each; for a miss, the knob of the model that cannot match it. Needs root.
--json prints the fitted values ({"forward": {"rate_bps", "delay_s", "queue_bytes",
"loss", "loss_model", "cross_bps", ...}, "reverse": {...}}) and the check.`,
		Example: `  wanlab twin --testbed wan-lan --from wanclient --to server -o twin.yaml
  wanlab twin --inventory sites.yaml --from cern --to taipei -o taipei.yaml --budget 90s
  wanlab twin --db wanlab.db --from cern --to taipei --from-time 2026-11-01 --to-time 2026-11-08 -o taipei.yaml
  wanlab twin --testbed wan-lan --from wanclient --to server -o twin.yaml --check --json`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := v.validate(time.Now()); err != nil {
				return err
			}
			return v.run(c.Context(), c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	v.hosts.flags(c)
	c.Flags().StringVar(&v.db, "db", "", "fit the history a wanlab serve archive holds of the path instead (a SQLite file or postgres:// URL)")
	c.Flags().StringVar(&v.fromTime, "from-time", "", "with --db: the history from this time (RFC 3339, a date, or a duration ago such as 24h)")
	c.Flags().StringVar(&v.toTime, "to-time", "", "with --db: the history up to this time (as --from-time; default now)")
	c.Flags().BoolVarP(&v.family.v4, "ipv4", "4", false, "with --db: fit the path's IPv4 measurements (default: the address family with the most probe summaries)")
	c.Flags().BoolVarP(&v.family.v6, "ipv6", "6", false, "with --db: fit the path's IPv6 measurements")
	c.Flags().StringVar(&v.from, "from", "", "host A: the link's forward direction leaves it (required)")
	c.Flags().StringVar(&v.to, "to", "", "host B (required)")
	c.Flags().StringVarP(&v.out, "output", "o", "", "write the twin's scenario to this `FILE` (required)")
	c.Flags().StringVar(&v.name, "name", "twin", "the twin scenario's name (its test-bed's, for --check)")
	c.Flags().BoolVar(&v.check, "check", false, "bring the twin up, replay the campaign on it and compare (root)")
	c.Flags().BoolVar(&v.asJSON, "json", false, "print the fitted values (and the check) as JSON")
	v.budget = twin.DefaultDuration
	c.Flags().Var(seconds{&v.budget}, "budget", "the campaign's time, e.g. 90s")
	return c
}

// validate checks the flags before anything is measured: every mistake
// is a usage error.
func (v *twinVerb) validate(now time.Time) error {
	n := 0
	for _, s := range []string{v.testbed, v.inventory, v.db} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return usagef("give one of --testbed NAME (an emulated test-bed), --inventory FILE (real hosts) or --db ARCHIVE (a wanlab serve history)")
	}
	if v.db == "" && (v.fromTime != "" || v.toTime != "") {
		return usagef("--from-time and --to-time choose a history's span: they go with --db")
	}
	if v.db == "" && (v.family.v4 || v.family.v6) {
		return usagef("-4 and -6 choose the address family of a history's measurements fitted: they go with --db")
	}
	if _, err := v.family.value(); err != nil {
		return err
	}
	if v.from == "" || v.to == "" {
		return usagef("give --from A and --to B, the path's hosts")
	}
	if v.from == v.to {
		return usagef("--from and --to are the same host %q", v.from)
	}
	for _, n := range []struct{ flag, name string }{{"--from", v.from}, {"--to", v.to}, {"--name", v.name}} {
		if !scenario.ValidName(n.name) {
			return usagef("%s %q: the twin is a scenario, whose names are 1-32 letters, digits, '-' or '_', starting with a letter or digit", n.flag, n.name)
		}
	}
	if v.out == "" {
		return usagef("give -o FILE, where the twin's scenario goes")
	}
	if fi, err := os.Stat(filepath.Dir(v.out)); err != nil || !fi.IsDir() {
		return usagef("-o %s: no directory %s to write it in", v.out, filepath.Dir(v.out))
	}
	if fi, err := os.Stat(v.out); err == nil && fi.IsDir() {
		return usagef("-o %s is a directory: give a file", v.out)
	}
	if v.budget <= 0 || v.budget > time.Hour {
		return usagef("--budget %v: give a duration above 0 and at most 1h", v.budget)
	}
	if v.check && v.testbed == v.name {
		return usagef("--name %s is the test-bed being measured: the twin's test-bed needs another --name", v.name)
	}
	var err error
	if v.since, err = parseWhen(v.fromTime, now); err != nil {
		return usagef("--from-time: %v", err)
	}
	if v.until, err = parseWhen(v.toTime, now); err != nil {
		return usagef("--to-time: %v", err)
	}
	if !v.since.IsZero() && !v.until.IsZero() && !v.since.Before(v.until) {
		return usagef("--from-time %s is not before --to-time %s", v.fromTime, v.toTime)
	}
	return nil
}

// parseWhen reads a time flag: RFC 3339, a date (UTC midnight), or a
// duration ago; "" is zero.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := units.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q: give an RFC 3339 time (2026-11-26T03:00:00Z), a date (2026-11-26) or a duration ago (24h)", s)
}

// twinView is what --json prints: the twin (forward and reverse in their
// fixed shape, and the rest), the campaign's steps and the check.
type twinView struct {
	*twin.Twin
	Campaign *campaignView    `json:"campaign,omitempty"`
	Check    []twinrun.Figure `json:"check,omitempty"`
}

type campaignView struct {
	Steps   []stepView `json:"steps"`
	Bytes   int64      `json:"bytes"`
	Seconds float64    `json:"seconds"`
}

type stepView struct {
	Kind    string  `json:"kind"`
	From    string  `json:"from"`
	To      string  `json:"to"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
	Skipped string  `json:"skipped,omitempty"`
	Cut     string  `json:"cut,omitempty"`
}

func (v *twinVerb) run(ctx context.Context, stdout, stderr io.Writer) error {
	var (
		c       twin.Campaign
		outcome *twinrun.Outcome
		p       *twin.Plan
		took    time.Duration
		mtus    []twin.MTU
	)
	if v.db != "" {
		var err error
		if c, err = v.history(ctx); err != nil {
			return err
		}
	} else {
		started := time.Now()
		var err error
		if outcome, p, err = v.campaign(ctx, stderr); err != nil {
			return err
		}
		took = time.Since(started)
		c, mtus = outcome.Campaign, outcome.Campaign.MTUs
	}
	tw, err := twin.New(c)
	if err != nil {
		return err
	}
	if v.check && p == nil {
		// A history's check replays the campaign a fresh one would run.
		rate := max(tw.Forward.RateBPS, tw.Reverse.RateBPS)
		if p, err = twin.NewPlan(tw.A, tw.B, twin.Budget{Duration: v.budget, Bytes: twin.DefaultBudget(policy.DefaultBytesPerDay).Bytes}, rate); err != nil {
			return v.budgetRefused(stderr, p, err)
		}
	}
	if err := v.write(tw); err != nil {
		return err
	}
	view := twinView{Twin: tw}
	if outcome != nil {
		view.Campaign = viewOf(outcome, took)
	}
	var stopped error
	if outcome != nil && outcome.Interrupted != nil {
		stopped = exitError{exitFailure, fmt.Errorf("the campaign was interrupted (%v) after %d of %d steps: the twin in %s rests on what was measured, the rest is listed unknown",
			outcome.Interrupted, outcome.Ran(), len(outcome.Steps), v.out)}
	}
	if v.check && stopped == nil {
		replay, err := v.replay(ctx, stderr, p.ForCheck(), mtus, checkLoadRates(c, tw))
		if err != nil {
			return err
		}
		view.Check = twinrun.Compare(c, replay.Campaign, tw)
		if replay.Interrupted != nil {
			stopped = exitError{exitFailure, fmt.Errorf("the check was interrupted (%v): its comparison rests on what the twin measured until then", replay.Interrupted)}
		}
	}
	if v.asJSON {
		if err := writeJSON(stdout, view); err != nil {
			return err
		}
		return stopped
	}
	printTwin(stdout, tw, v.out)
	if view.Check != nil {
		fmt.Fprintf(stdout, "\nreplayed on the twin (test-bed %s):\n", v.name)
		if err := twinrun.WriteCheck(stdout, view.Check); err != nil {
			return err
		}
	}
	return stopped
}

// write writes the twin's scenario to -o.
func (v *twinVerb) write(tw *twin.Twin) error {
	var b bytes.Buffer
	if err := twin.WriteScenario(&b, tw, v.name); err != nil {
		return usageError{err}
	}
	if err := os.WriteFile(v.out, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the twin: %w", err)
	}
	return nil
}

// budgetRefused prints the plan that does not fit and refuses it (exit 2).
func (v *twinVerb) budgetRefused(stderr io.Writer, p *twin.Plan, err error) error {
	if p != nil && errors.Is(err, twin.ErrBudget) {
		if werr := twin.WritePlan(stderr, p); werr != nil {
			return werr
		}
		return usageError{fmt.Errorf("%w: give a longer --budget", err)}
	}
	return err
}

// checkLoadRates are the rates of the check's UDP loads: the path's
// campaign's, so that both see the same load; the twin's fitted rates
// times the overload where it ran none (a history).
func checkLoadRates(c twin.Campaign, tw *twin.Twin) map[[2]string]float64 {
	rates := twinrun.LoadRates(c)
	for _, w := range []struct {
		way [2]string
		bps float64
	}{{[2]string{tw.A, tw.B}, tw.Forward.RateBPS}, {[2]string{tw.B, tw.A}, tw.Reverse.RateBPS}} {
		if rates[w.way] == 0 {
			rates[w.way] = twin.Overload * w.bps
		}
	}
	return rates
}

// campaign runs the plan through the agents of the test-bed or the
// inventory, printing the plan first and the steps that failed after.
func (v *twinVerb) campaign(ctx context.Context, stderr io.Writer) (*twinrun.Outcome, *twin.Plan, error) {
	ctx, bed, err := v.hosts.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer bed.Close()
	eps, err := endpoints.Dial(ctx, bed, v.from, v.to)
	if errors.Is(err, measure.ErrNoHost) {
		return nil, nil, usageError{err}
	}
	if err != nil {
		return nil, nil, err
	}
	defer measure.CloseAll(eps)
	var mtus []twin.MTU
	rate := 0.0
	topo := bed.Topology()
	for _, w := range [][2]string{{v.from, v.to}, {v.to, v.from}} {
		path, ok := topo.Path(w[0], w[1])
		if !ok {
			continue
		}
		rate = max(rate, path.Bottleneck)
		if v.testbed != "" && path.MTU > 0 {
			mtus = append(mtus, twin.MTU{From: w[0], To: w[1], Bytes: path.MTU, Source: "the test-bed's path MTU"})
		}
	}
	if rate == 0 {
		fmt.Fprintf(stderr, "wanlab: twin: a pilot capacity estimate %s->%s sizes the plan\n", v.from, v.to)
		pilot, err := measure.Capacity(ctx, eps[v.from], eps[v.to], measure.BandwidthSpec{Size: 1472})
		if err != nil {
			return nil, nil, fmt.Errorf("the pilot capacity estimate that sizes the campaign: %w", err)
		}
		rate = pilot.CapacityBPS
	}
	budget := twin.DefaultBudget(bytesPerDay(eps))
	budget.Duration = v.budget
	p, err := twin.NewPlan(v.from, v.to, budget, rate)
	if err != nil {
		return nil, nil, v.budgetRefused(stderr, p, err)
	}
	if err := twin.WritePlan(stderr, p); err != nil {
		return nil, nil, err
	}
	o := v.measure(ctx, stderr, "twin campaign", p, twinrun.AgentMeasures(eps), twinrun.Options{MTUs: mtus, MaxLoadBPS: maxPacedRate(eps)})
	if o.Ran() == 0 && o.Interrupted == nil {
		return nil, nil, fmt.Errorf("no step of the campaign of %s<->%s measured anything (the first one: %v)", v.from, v.to, firstError(o))
	}
	if o.Ran() == 0 {
		return nil, nil, fmt.Errorf("the campaign was interrupted (%v) before it measured anything: no twin written", o.Interrupted)
	}
	return o, p, nil
}

// measure runs the plan with a progress bar and reports each step that
// failed or did not run.
func (v *twinVerb) measure(ctx context.Context, stderr io.Writer, what string, p *twin.Plan, m twinrun.Measures, opts twinrun.Options) *twinrun.Outcome {
	prog := newProgress(stderr, len(p.Steps), what)
	opts.Progress = func(i, n int, s twin.Step) {
		prog.step(fmt.Sprintf("%s %s->%s (%.0fs)", s.Kind, s.From, s.To, s.Time.Seconds()))
	}
	o := twinrun.Run(ctx, p, m, opts)
	prog.done()
	for i, s := range o.Steps {
		switch {
		case s.Err != nil && s.Cut != "":
			fmt.Fprintf(stderr, "wanlab: %s step %d (%s %s->%s) was cut short (%s); what it measured is kept\n", what, i+1, s.Step.Kind, s.Step.From, s.Step.To, s.Cut)
		case s.Err != nil:
			fmt.Fprintf(stderr, "wanlab: %s step %d (%s %s->%s) failed, the campaign went on: %v\n", what, i+1, s.Step.Kind, s.Step.From, s.Step.To, s.Err)
		case s.Skipped != "" && o.Interrupted == nil:
			fmt.Fprintf(stderr, "wanlab: %s step %d (%s %s->%s) did not run: %s\n", what, i+1, s.Step.Kind, s.Step.From, s.Step.To, s.Skipped)
		}
	}
	fmt.Fprintf(stderr, "wanlab: %s: %d of %d steps measured, %s sent\n", what, o.Ran(), len(o.Steps), units.Size(o.Bytes))
	return o
}

func firstError(o *twinrun.Outcome) error {
	for _, s := range o.Steps {
		if s.Err != nil {
			return s.Err
		}
	}
	return errors.New("none ran")
}

// bytesPerDay is the least bytes_per_day the agents' policies grant this
// controller (the default policy's where they grant nothing: a test-bed's).
func bytesPerDay(eps map[string]measure.Endpoint) int64 {
	if least := leastGrant(eps, func(g *agentpb.Grant) uint64 { return g.GetBytesPerDay() }); least > 0 {
		return int64(least)
	}
	return policy.DefaultBytesPerDay
}

// maxPacedRate is the least rate of paced (UDP) tests the agents' grants
// allow (0: none said).
func maxPacedRate(eps map[string]measure.Endpoint) float64 {
	return float64(leastGrant(eps, func(g *agentpb.Grant) uint64 { return g.GetLimits().GetMaxRateBps() }))
}

// leastGrant is the least value of the agents' grants above 0 (0: none).
func leastGrant(eps map[string]measure.Endpoint, value func(*agentpb.Grant) uint64) uint64 {
	least := uint64(0)
	for _, ep := range eps {
		if v := value(ep.Agent.Info.GetGrant()); v > 0 && (least == 0 || v < least) {
			least = v
		}
	}
	return least
}

// replay brings the written twin up as a test-bed, runs the plan on it
// and takes it down (also on an error or Ctrl-C).
func (v *twinVerb) replay(ctx context.Context, stderr io.Writer, p *twin.Plan, mtus []twin.MTU, rates map[[2]string]float64) (*twinrun.Outcome, error) {
	sp, err := loadPlan(v.out, false)
	if err != nil {
		return nil, fmt.Errorf("the twin %s: %w", v.out, err)
	}
	if err := emulable(sp); err != nil {
		return nil, err
	}
	if err := testbed.CheckEnvironment(); err != nil {
		return nil, fmt.Errorf("--check brings the twin up as a test-bed: %w", err)
	}
	up := newProgress(stderr, 0, "twin test-bed").terminalOnly()
	bed, err := testbed.Start(ctx, sp.source, sp.text, up.upStep)
	up.done()
	if err != nil {
		return nil, fmt.Errorf("bringing the twin up: %w", err)
	}
	defer func() {
		if err := bed.Close(); err != nil {
			fmt.Fprintf(stderr, "wanlab: taking the twin's test-bed down: %v\n", err)
		}
	}()
	eps, err := endpoints.Dial(ctx, bed, v.from, v.to)
	if err != nil {
		return nil, fmt.Errorf("the twin's agents: %w", err)
	}
	defer measure.CloseAll(eps)
	if len(mtus) == 0 {
		for _, w := range [][2]string{{v.from, v.to}, {v.to, v.from}} {
			if path, ok := bed.Topology().Path(w[0], w[1]); ok {
				mtus = append(mtus, twin.MTU{From: w[0], To: w[1], Bytes: path.MTU, Source: "the twin's path MTU"})
			}
		}
	}
	return v.measure(ctx, stderr, "twin check", p, twinrun.AgentMeasures(eps), twinrun.Options{MTUs: mtus, LoadRates: rates, MaxLoadBPS: maxPacedRate(eps)}), nil
}

// history builds the campaign of the path from a serve archive's points
// of both ways, and the capacity and available-bandwidth estimates its
// measure runs stored (twin.ReadHistory, which wanlab serve's twin
// download shares).
func (v *twinVerb) history(ctx context.Context) (twin.Campaign, error) {
	ar, err := openExisting(v.db)
	if err != nil && !archive.IsPostgres(v.db) {
		return twin.Campaign{}, usageError{fmt.Errorf("--db: %w", err)}
	}
	if err != nil {
		return twin.Campaign{}, fmt.Errorf("--db: %w", err)
	}
	defer ar.Close()
	family, err := v.family.value()
	if err != nil {
		return twin.Campaign{}, err
	}
	h, err := twin.ReadHistory(ctx, ar, v.from, v.to, twin.HistoryOptions{From: v.since, To: v.until, Family: family})
	if err != nil {
		return twin.Campaign{}, err
	}
	if h.Empty() {
		if family != "" {
			family = " over " + family
		}
		return h.Campaign, usagef("archive %s holds no results of the path %s<->%s%s%s: check --from, --to, the span and the family", v.db, v.from, v.to, family, spanText(v.since, v.until))
	}
	return h.Campaign, nil
}

func spanText(from, to time.Time) string {
	switch {
	case !from.IsZero() && !to.IsZero():
		return fmt.Sprintf(" from %s to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	case !from.IsZero():
		return " since " + from.Format(time.RFC3339)
	case !to.IsZero():
		return " until " + to.Format(time.RFC3339)
	}
	return ""
}

func viewOf(o *twinrun.Outcome, took time.Duration) *campaignView {
	cv := &campaignView{Bytes: o.Bytes, Seconds: took.Seconds()}
	for _, s := range o.Steps {
		sv := stepView{Kind: s.Step.Kind, From: s.Step.From, To: s.Step.To, Seconds: s.Took.Seconds(), Skipped: s.Skipped, Cut: s.Cut}
		if s.Err != nil {
			sv.Error = s.Err.Error()
		}
		cv.Steps = append(cv.Steps, sv)
	}
	return cv
}

// printTwin prints the fitted values each way, and what is unknown.
func printTwin(w io.Writer, tw *twin.Twin, file string) {
	fmt.Fprintf(w, "twin of %s <-> %s written to %s\n", tw.A, tw.B, file)
	t := table(w)
	fmt.Fprintln(t, "WAY\tRATE\tDELAY\tJITTER\tQUEUE\tLOSS\tMODEL\tCROSS\tMTU")
	for _, d := range []struct {
		way string
		f   *twin.Fit
	}{{tw.A + " -> " + tw.B, &tw.Forward}, {tw.B + " -> " + tw.A, &tw.Reverse}} {
		f := d.f
		queue := fmt.Sprintf("%s (%.2f BDP)", units.Size(f.QueueBytes), f.QueueBDP)
		if f.Evidence[twin.KeyQueue].AtLeast {
			queue = ">= " + queue
		}
		cross := "none"
		if f.Cross != nil {
			cross = units.Rate(f.CrossBPS).String() + " " + f.Cross.Pattern
		}
		fmt.Fprintf(t, "%s\t%s\t%.3fms\t%.3fms\t%s\t%s\t%s\t%s\t%d\n", d.way, units.Rate(f.RateBPS), f.DelayS*1e3, f.JitterS*1e3,
			queue, units.FormatPercent(f.Loss), f.LossModel, cross, f.MTU)
	}
	t.Flush()
	for _, c := range tw.Changes {
		fmt.Fprintf(w, "change: %s %s->%s at %s: %s\n", c.Kind, c.From, c.To, c.At.UTC().Format(time.RFC3339), c.Evidence)
	}
	if len(tw.Changes) > 0 {
		fmt.Fprintf(w, "the twin describes %s\n", tw.Segment.Why)
	}
	for _, d := range []struct {
		way string
		f   *twin.Fit
	}{{"forward", &tw.Forward}, {"reverse", &tw.Reverse}} {
		for _, u := range d.f.Unknown {
			fmt.Fprintf(w, "unknown (%s %s): %s; the twin uses %s\n", d.way, u.Name, u.Why, u.Default)
		}
	}
}
