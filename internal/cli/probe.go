package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/binomial"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

func newProbeCmd() *cobra.Command {
	var (
		pair              hostPair
		count, size       int
		interval, timeout time.Duration
		asJSON            bool
		db                string
	)
	c := &cobra.Command{
		Use:   "probe --testbed NAME|--inventory FILE --from A --to B",
		Short: "Round-trip and one-way delay, jitter and loss with UDP probes (TWAMP-light style)",
		Long: `Send --count UDP probes from A, --interval apart, to a reflector on B, which returns each
with its receive and send times. Reports the round trip (without the reflector's
turnaround) as min/avg/max/p50/p99, jitter (mean difference of consecutive round trips),
loss, and the one-way delay in each direction. Loss is given each way too where B's reflector
numbers the probes it receives (probes of 44 bytes or more, agents of this version): the
probes that never reached B, and the replies lost on the way back, each with its 95%
binomial interval (Wilson's); otherwise the output says why it is round trip only. Hosts of one test-bed share the machine's
clock, so one-way delays are exact; between machines they include the clocks' offset,
and the output says which.`,
		Example: `  wanlab measure probe --testbed wan-lan --from wanclient --to server
  wanlab measure probe --testbed wan-lan --from wanclient --to server -c 1000 -i 5ms --json`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			spec := probe.Spec{Count: count, Interval: interval, Size: size, Timeout: timeout}
			if err := spec.Validate(limits.Default); err != nil {
				return usagef("%v", err)
			}
			return pair.session(c.Context(), func(ctx context.Context, from, to measure.Endpoint) error {
				rec, err := startRecord(db, "measure probe", from.Host+"->"+to.Host, pair.testbed, spec)
				if err != nil {
					return err
				}
				res, err := probe.Measure(ctx, from, to, spec)
				var samples []archive.Sample
				var kept any
				if res != nil {
					samples, kept = res.Samples(), res
				}
				if rerr := rec.Finish(samples, kept, err); rerr != nil {
					return rerr
				}
				if res == nil {
					return err
				}
				return report(c.OutOrStdout(), asJSON, res, printProbe, err)
			})
		},
	}
	pair.flags(c)
	c.Flags().IntVarP(&count, "count", "c", 100, "number of probes")
	interval = 20 * time.Millisecond
	c.Flags().VarP(seconds{&interval}, "interval", "i", "time between probes, e.g. 20ms or 0.02")
	size = 64
	c.Flags().VarP(bytesFlag{&size}, "size", "s", fmt.Sprintf("probe payload in bytes (%d-%d)", probe.HeaderLen, probe.MaxSize))
	timeout = 2 * time.Second
	c.Flags().Var(seconds{&timeout}, "timeout", "how long to wait for the last reply")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().StringVar(&db, "db", "", "also store every probe and the result in this archive (e.g. wanlab.db)")
	return c
}

func printProbe(w io.Writer, r *probe.Summary) {
	fmt.Fprintf(w, "%s -> %s: %d probes of %d bytes, %s ms apart\n", r.From, r.To, r.Count, r.Size, trim(r.Interval))
	s := r.RTTms
	t := table(w)
	fmt.Fprintf(t, "rtt\tmin %s / avg %s / max %s ms, p50 %s, p99 %s ms, mdev %s ms\n", trim(s.Min), trim(s.Avg), trim(s.Max), trim(s.P50), trim(s.P99), trim(s.Mdev))
	fmt.Fprintf(t, "jitter\t%s ms (mean difference of consecutive round trips)\n", trim(r.JitterMS))
	fmt.Fprintf(t, "loss round trip\t%s had no reply", ratioText(r.Loss.Roundtrip, "probes"))
	if r.Duplicates > 0 {
		fmt.Fprintf(t, ", %d duplicates", r.Duplicates)
	}
	fmt.Fprintln(t)
	if f, b := r.Loss.Forward, r.Loss.Back; f != nil && b != nil {
		fmt.Fprintf(t, "loss %s -> %s\t%s never reached %s\n", r.From, r.To, ratioText(*f, "probes"), r.To)
		fmt.Fprintf(t, "loss %s -> %s\t%s lost on the way back\n", r.To, r.From, ratioText(*b, "replies"))
	}
	if r.Loss.Note != "" {
		fmt.Fprintf(t, "loss each way\t%s\n", r.Loss.Note)
	}
	f, b := r.OneWay.Forward, r.OneWay.Back
	fmt.Fprintf(t, "one way %s -> %s\tmin %s / avg %s / max %s ms, p50 %s\n", r.From, r.To, trim(f.Min), trim(f.Avg), trim(f.Max), trim(f.P50))
	fmt.Fprintf(t, "one way %s -> %s\tmin %s / avg %s / max %s ms, p50 %s\n", r.To, r.From, trim(b.Min), trim(b.Avg), trim(b.Max), trim(b.P50))
	fmt.Fprintf(t, "clock\t%s\n", r.OneWay.Clock)
	t.Flush()
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.Error)
	}
}

// ratioText is a loss with its count and 95% interval.
func ratioText(l binomial.Ratio, of string) string {
	return fmt.Sprintf("%d of %d %s (%.3g%%, 95%% interval %.3g%% to %.3g%%)", l.Lost, l.Of, of, 100*l.Ratio, 100*l.Low, 100*l.High)
}

func newTraceCmd() *cobra.Command {
	var (
		pair    hostPair
		maxHops int
		wait    time.Duration
		asJSON  bool
	)
	c := &cobra.Command{
		Use:   "trace --testbed NAME|--inventory FILE --from A --to B",
		Short: "The hops from A to B, as tracepath finds them (TTL-limited probes, ICMP time exceeded)",
		Long: `Find the path from A to B hop by hop: A's agent sends probes to a reflector on B with a
TTL of 1, 2, ... and each router on the way answers with ICMP "time exceeded" (read
without privileges, from the socket's error queue), until B's reflector replies. Each TTL
is tried twice, waiting up to --wait; a hop that does not answer shows as *. On an
emulated test-bed links join hosts directly, so B is the first hop.`,
		Example: `  wanlab measure trace --inventory sites.yaml --from cern --to taipei
  wanlab measure trace --testbed wan-lan --from wanclient --to server --json`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			if maxHops < 1 || maxHops > probe.MaxHops {
				return usagef("--max-hops %d: give 1 to %d", maxHops, probe.MaxHops)
			}
			if wait < 100*time.Millisecond || wait > 5*time.Second {
				return usagef("--wait %s: give 100ms to 5s", wait)
			}
			return pair.session(c.Context(), func(ctx context.Context, from, to measure.Endpoint) error {
				res, err := probe.MeasureTrace(ctx, from, to, maxHops, wait)
				if res == nil {
					return err
				}
				return report(c.OutOrStdout(), asJSON, res, printTrace, err)
			})
		},
	}
	pair.flags(c)
	c.Flags().IntVar(&maxHops, "max-hops", 30, "the most hops to try")
	wait = time.Second
	c.Flags().Var(seconds{&wait}, "wait", "how long to wait for each hop's answer")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func printTrace(w io.Writer, r *probe.TraceResult) {
	fmt.Fprintf(w, "%s -> %s:\n", r.From, r.To)
	t := table(w)
	for _, h := range r.Hops {
		if h.Addr == "" {
			fmt.Fprintf(t, "%d\t*\n", h.TTL)
			continue
		}
		fmt.Fprintf(t, "%d\t%s\t%s ms\n", h.TTL, h.Addr, trim(ms(h.RTT)))
	}
	t.Flush()
	if !r.Reached {
		fmt.Fprintf(w, "%s not reached within %d hops\n", r.To, len(r.Hops))
	}
}
