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
	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/units"
)

type checkView struct {
	Testbed string                 `json:"testbed"`
	Paths   []crosscheck.PathCheck `json:"paths"`
	// OtherDrops are the drops the link model did not decide, over the whole check.
	OtherDrops *otherDrops `json:"other_drops,omitempty"`
	Engine     *engineView `json:"engine,omitempty"`
	// TestbedLimits lists signs that the test-bed, not the scenario, limited the results.
	TestbedLimits []string `json:"testbed_limits,omitempty"`
}

func newCheckCmd() *cobra.Command {
	var asJSON bool
	var duration time.Duration
	var maxPairs int
	c := &cobra.Command{
		Use:   "check FILE.yaml | NAME",
		Short: "Measure every path of a test-bed with ping and iperf3 and compare with its configuration",
		Long: `Check that a test-bed behaves as configured. For each pair of hosts that can reach
each other, in both directions: ping's idle round trip against the configured one
(propagation plus serialisation), and one iperf3 TCP stream against the path's TCP
ceiling (the bottleneck rate less IP and TCP headers). Given a FILE (or a built-in
scenario's NAME, when no test-bed of that name runs), the test-bed is brought up for
the check and torn down after it (also on Ctrl-C); given the NAME of a running
test-bed, it is used as it is. Needs ping and iperf3.`,
		Example: `  wanlab testbed check examples/wan-lan.yaml
  wanlab testbed check wan-lan --duration 10s --json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if duration <= 0 || duration > time.Hour {
				return usagef("--duration %v: give a duration between 1s and 1h", duration)
			}
			if maxPairs < 0 {
				return usagef("--max-pairs %d: give 0 (all) or more", maxPairs)
			}
			p, err := checkPlan(a[0])
			if err != nil {
				return err
			}
			if err := testbed.CheckEnvironment(); err != nil {
				return err
			}
			if err := crosscheck.Require("ping", "iperf3"); err != nil {
				return err
			}
			ctx := c.Context()
			bed, err := checkTarget(ctx, c.ErrOrStderr(), a[0], p)
			if err != nil {
				return err
			}
			defer func() {
				if err := bed.Close(); err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "wanlab: %v\n", err)
				}
			}()
			return runCheck(ctx, c.OutOrStdout(), c.ErrOrStderr(), bed, duration, maxPairs, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	c.Flags().DurationVar(&duration, "duration", 5*time.Second, "length of each iperf3 test")
	c.Flags().IntVar(&maxPairs, "max-pairs", 10, "check at most this many host pairs (0: all)")
	return c
}

// checkPlan is the scenario a check brings up: a file, or a built-in
// whose name no running test-bed has; nil for a running test-bed.
func checkPlan(arg string) (*plan, error) {
	if _, err := os.Stat(arg); err == nil || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return loadPlan(arg, false)
	}
	if testbed.Alive(arg) {
		return nil, nil
	}
	if _, ok := examples.Lookup(arg); ok {
		return loadPlan(arg, false)
	}
	return nil, usagef("%q is neither a scenario file, a built-in scenario nor a running test-bed", arg)
}

// checkTarget brings up the plan for the check (Close takes it down), or
// reaches the running test-bed name (Close leaves it up).
func checkTarget(ctx context.Context, stderr io.Writer, name string, p *plan) (*testbed.Bed, error) {
	if p == nil {
		return testbed.Attach(name)
	}
	up := newProgress(stderr, 0, "test-bed").terminalOnly()
	bed, err := testbed.Start(ctx, p.source, p.text, up.upStep)
	up.done()
	if err != nil {
		return nil, err
	}
	for _, n := range bed.Cleaned {
		fmt.Fprintf(stderr, "wanlab: removed the leftovers of test-bed %q, whose engine had died\n", n)
	}
	return bed, nil
}

func runCheck(ctx context.Context, stdout, stderr io.Writer, bed *testbed.Bed, duration time.Duration, maxPairs int, asJSON bool) error {
	topo := bed.Topology()
	pairs := crosscheck.Pairs(topo, maxPairs)
	if len(pairs) == 0 {
		return fmt.Errorf("test-bed %q has no pair of hosts that can reach each other", topo.Name)
	}
	prog := newProgress(stderr, 2*len(pairs), "checking "+topo.Name)
	results, err := crosscheck.CheckPaths(ctx, crosscheck.Runner{Command: bed.Command}, topo,
		crosscheck.CheckOptions{Duration: duration, MaxPairs: maxPairs, Step: prog.step})
	prog.done()
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	view := checkView{Testbed: topo.Name, Paths: results}
	if s, serr := testbed.GetStatus(topo.Name); serr == nil {
		sv := newStatusView(s)
		view.OtherDrops, view.Engine, view.TestbedLimits = sv.OtherDrops, sv.Engine, sv.TestbedLimits
	}
	return report(stdout, asJSON, view, printCheck, err)
}

func printCheck(w io.Writer, v checkView) {
	t := table(w)
	fmt.Fprintln(t, "PATH\tRTT CONFIGURED\tRTT PING min/avg/max\tBOTTLENECK\tTCP CEILING\tTCP IPERF3\tSHARE\tRETRANSMITS")
	for _, p := range v.Paths {
		share := "-"
		if p.TCPShare > 0 {
			share = fmt.Sprintf("%.1f%%", 100*p.TCPShare)
		}
		fmt.Fprintf(t, "%s -> %s\t%sms\t%s/%s/%sms\t%s\t%s\t%s\t%s\t%d\n", p.From, p.To,
			trim(p.Configured.RTTms), trim(p.Ping.MinMS), trim(p.Ping.AvgMS), trim(p.Ping.MaxMS),
			rateText(p.Configured.BottleneckBPS), rateText(p.Configured.TCPCeilingBPS),
			units.Rate(p.TCP.ReceivedBPS).String(), share, p.TCP.Retransmits)
	}
	t.Flush()
	if d := v.OtherDrops; d != nil {
		fmt.Fprintf(w, "\ndrops outside the link model: TUN queues %d, engine pool %d, write %d\n", d.TUNQueue, d.EnginePool, d.Write)
	}
	if e := v.Engine; e != nil {
		fmt.Fprintf(w, "engine release lateness: p50 %sus, p99 %sus over %d releases; engine CPU %.2fs\n",
			trim(e.Lateness.P50us), trim(e.Lateness.P99us), e.Lateness.Count, e.CPUSeconds)
	}
	printLimits(w, v.TestbedLimits)
}
