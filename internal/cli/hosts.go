package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/realhosts"
	"github.com/wanlab/wanlab/internal/units"
)

func newHostsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "hosts",
		Short: "Real hosts' agents: check that they answer and what they grant",
		Args:  args(cobra.NoArgs),
	}
	c.AddCommand(newHostsCheckCmd())
	return c
}

func newHostsCheckCmd() *cobra.Command {
	var (
		asJSON  bool
		timeout time.Duration
	)
	c := &cobra.Command{
		Use:   "check INVENTORY|SCENARIO",
		Short: "Say hello to every agent of an inventory: reachable, version, identity, limits granted, clock",
		Long: `Connect to every agent of the inventory at once, over TLS 1.3 with the inventory's
controller certificate, and show for each: whether it answers and accepts this controller
(or why not, in words: its certificate, its refusal of ours, its policy), its version, the
identity it sees, what its policy grants this controller (rule, test kinds, peers, limits,
bytes used today) and its clock's synchronisation (one-way delays need both ends
synchronised). A scenario whose hosts name their agents (agent: host:port) may stand
for the inventory. Exits 1 if any agent is not usable.`,
		Example: `  wanlab hosts check sites.yaml`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			inv, err := realhosts.LoadHosts(a[0])
			if err != nil {
				return err
			}
			bed, err := realhosts.Open(inv, nil)
			if err != nil {
				return err
			}
			sts := realhosts.Check(c.Context(), bed, timeout)
			bad := 0
			for _, st := range sts {
				if !st.Reachable {
					bad++
				}
			}
			if asJSON {
				if err := writeJSON(c.OutOrStdout(), sts); err != nil {
					return err
				}
			} else {
				printHosts(c, sts)
			}
			if bad > 0 {
				return exitError{exitFailure, fmt.Errorf("%d of %d agents are not usable", bad, len(sts))}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	c.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for each agent")
	return c
}

func printHosts(c *cobra.Command, sts []realhosts.Status) {
	t := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(t, "HOST\tAGENT\tSTATE\tVERSION\tIDENTITY\tTEST ADDRESS\tCLOCK")
	for _, st := range sts {
		if !st.Reachable {
			fmt.Fprintf(t, "%s\t%s\tFAILED\t\t\t\t\n", st.Host, st.Agent)
			continue
		}
		clock := "not synchronised: one-way delays unreliable"
		if st.Clock != nil && st.Clock.Synchronised {
			clock = fmt.Sprintf("synchronised, ±%.3g ms", st.Clock.EstimatedErrorMs)
		}
		addr := st.TestAddress
		if st.TestAddress6 != "" && st.TestAddress6 != addr {
			addr += " " + st.TestAddress6
		}
		fmt.Fprintf(t, "%s\t%s\tok (%.1f ms)\t%s\t%s\t%s\t%s\n", st.Host, st.Agent, st.HelloMs, st.Version, st.Identity, addr, clock)
	}
	t.Flush()
	for _, st := range sts {
		w := c.OutOrStdout()
		switch {
		case !st.Reachable:
			fmt.Fprintf(w, "\n%s: %s\n", st.Host, st.Error)
		case st.Grant != nil:
			g := st.Grant
			peers := "any wanlab test listener"
			if len(g.Peers) > 0 {
				peers = strings.Join(g.Peers, ", ")
			}
			fmt.Fprintf(w, "\n%s grants rule %q: %s; toward %s\n  per test: %s, %d streams, %s paced, %s; %d tests at once; %s a day (%s used today)%s\n",
				st.Host, g.Rule, strings.Join(g.Kinds, ", "), peers, g.MaxDuration, g.MaxStreams, units.Rate(g.MaxRateBps), units.Size(g.MaxBytes),
				g.MaxTests, units.Size(g.BytesPerDay), units.Size(g.BytesToday), map[bool]string{true: "; may share the host", false: ""}[g.Share])
		}
	}
}
