package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/impact"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

func newImpactCmd() *cobra.Command {
	var (
		pair, load         hostPair
		phase, interval    time.Duration
		loadDur            time.Duration
		streams            int
		window, congestion string
		asJSON             bool
	)
	c := &cobra.Command{
		Use:   "impact --testbed NAME|--inventory FILE --from A --to B",
		Short: "What a bulk load does to others: probe RTT and loss before, during and after it",
		Long: `Probe from A to B for --phase, then start a bulk TCP load (by default also from A to B;
--load-from and --load-to put it elsewhere) and keep probing through it, then probe
again for --phase after it. Prints RTT (min/avg/max, p50, p99) and loss per phase, how
much the load inflated them, and the load's own throughput: the "impact on others"
test of a bulk transfer.`,
		Example: `  wanlab measure impact --testbed wan-lan --from wanclient --to server --load-streams 15
  wanlab measure impact --testbed t --from c1 --to server --load-from c2 --load-to server --json`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			spec := impact.Spec{Phase: phase, Interval: interval, Size: 64,
				Load: throughput.Spec{Protocol: throughput.TCP, Streams: streams, Duration: loadDur, Congestion: congestion, Interval: time.Second}}
			if window != "" {
				w, err := units.ParseSize(window)
				if err != nil {
					return usagef("--window: %v", err)
				}
				spec.Load.Window = int(w)
			}
			if err := spec.Load.Validate(limits.Default); err != nil {
				return usagef("load: %v", err)
			}
			if phase <= 0 || interval < time.Millisecond || loadDur < 2*time.Second {
				return usagef("--phase must be positive, --interval at least 1ms and --load-duration at least 2s")
			}
			if load.from == "" {
				load.from = pair.from
			}
			if load.to == "" {
				load.to = pair.to
			}
			load.hosts = pair.hosts
			if err := errors.Join(pair.check(), load.check()); err != nil {
				return err
			}
			ctx, eps, err := connect(c.Context(), pair.hosts, pair.from, pair.to, load.from, load.to)
			if err != nil {
				return err
			}
			defer measure.CloseAll(eps)
			res, err := impact.Measure(ctx, eps[pair.from], eps[pair.to], eps[load.from], eps[load.to], spec)
			return report(c.OutOrStdout(), asJSON, res, printImpact, err)
		},
	}
	pair.flags(c)
	c.Flags().StringVar(&load.from, "load-from", "", "the host that sends the load (default: --from)")
	c.Flags().StringVar(&load.to, "load-to", "", "the host that receives the load (default: --to)")
	c.Flags().IntVar(&streams, "load-streams", 8, "TCP streams of the load")
	loadDur, phase, interval = 10*time.Second, 5*time.Second, 20*time.Millisecond
	c.Flags().Var(seconds{&loadDur}, "load-duration", "how long the load runs")
	c.Flags().StringVar(&window, "load-window", "", "socket buffer of the load's streams")
	c.Flags().StringVar(&congestion, "load-congestion", "", "congestion control of the load")
	c.Flags().Var(seconds{&phase}, "phase", "how long to probe before and after the load")
	c.Flags().Var(seconds{&interval}, "interval", "time between probes")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func printImpact(w io.Writer, r *impact.Result) {
	t := table(w)
	fmt.Fprintln(t, "PHASE\tPROBES\tRTT min/avg/max ms\tp50\tp99\tLOSS")
	for _, p := range []struct {
		name string
		r    *probe.Summary
	}{{"before", r.Before}, {"during load", r.During}, {"after", r.After}} {
		if p.r == nil {
			fmt.Fprintf(t, "%s\t-\t-\t-\t-\t-\n", p.name)
			continue
		}
		s := p.r.RTTms
		fmt.Fprintf(t, "%s\t%d\t%s/%s/%s\t%s\t%s\t%d (%.3g%%)\n", p.name, p.r.Sent, trim(s.Min), trim(s.Avg), trim(s.Max), trim(s.P50), trim(s.P99), p.r.Lost, p.r.LostPercent)
	}
	t.Flush()
	if l := r.Load; l != nil {
		fmt.Fprintf(w, "load: %d TCP streams %s -> %s: %s received, %d retransmits\n", l.Start.Streams, l.Start.From, l.Start.To,
			units.Rate(l.End.SumReceived.BitsPerSecond), deref(l.End.SumSent.Retransmits))
	}
	fmt.Fprintf(w, "the load raised the median RTT by %s ms and the loss by %.3g percentage points\n", trim(r.RTTInflationMS), r.LossIncreasePoints)
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.Error)
	}
}
