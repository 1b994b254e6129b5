package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/tune"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

func newTuneCmd() *cobra.Command {
	var (
		pair                               hostPair
		streamsList, windowsList, size, cc string
		duration                           time.Duration
		asJSON                             bool
	)
	c := &cobra.Command{
		Use:   "tune --testbed NAME|--inventory FILE --from A --to B",
		Short: "Sweep parallel streams x TCP window and advise the best choice for the path",
		Long: `Measure the path's round trip, then one throughput test per combination of --streams and
--windows. Prints the grid (each cell beside the window limit streams x window / RTT),
the path's bottleneck (the best rate reached) and bandwidth-delay product, and the
cheapest combination within 3% of the best: fewer streams and smaller windows are
kinder to the path's other users. With --size, each cell also shows how long that
transfer would take.`,
		Example: `  wanlab measure tune --testbed wan-lan --from wanclient --to server
  wanlab measure tune --testbed t --from a --to b --streams 1,2,4,8,16 --windows 64KiB,256KiB,1MiB,auto --size 800MB`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			spec := tune.Spec{Duration: duration, Congestion: cc}
			for _, f := range strings.Split(streamsList, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil {
					return usagef("--streams %q: give numbers separated by commas", streamsList)
				}
				spec.Streams = append(spec.Streams, n)
			}
			for _, f := range strings.Split(windowsList, ",") {
				if f = strings.TrimSpace(f); f == "auto" {
					spec.Windows = append(spec.Windows, 0)
					continue
				}
				w, err := units.ParseSize(f)
				if err != nil {
					return usagef("--windows: %v (or auto)", err)
				}
				spec.Windows = append(spec.Windows, int(w))
			}
			if size != "" {
				z, err := units.ParseSize(size)
				if err != nil {
					return usagef("--size: %v", err)
				}
				spec.Size = int64(z)
			}
			for _, n := range spec.Streams {
				for _, w := range spec.Windows {
					cell := throughput.Spec{Protocol: throughput.TCP, Streams: n, Window: w, Duration: duration, Interval: time.Second}
					if err := cell.Validate(limits.Default); err != nil {
						return usagef("%v", err)
					}
				}
			}
			return pair.session(c.Context(), func(ctx context.Context, from, to measure.Endpoint) error {
				prog := newProgress(c.ErrOrStderr(), len(spec.Streams)*len(spec.Windows), "tuning")
				res, err := tune.Measure(ctx, from, to, spec, prog.step)
				prog.done()
				return report(c.OutOrStdout(), asJSON, res, func(w io.Writer, r *tune.Result) { printTune(w, r, spec) }, err)
			})
		},
	}
	pair.flags(c)
	c.Flags().StringVar(&streamsList, "streams", "1,4,16", "numbers of parallel streams to try")
	c.Flags().StringVar(&windowsList, "windows", "64KiB,256KiB,1MiB,auto", "socket buffer sizes to try; auto is the kernel's autotuning")
	duration = 4 * time.Second
	c.Flags().VarP(seconds{&duration}, "duration", "t", "length of each test")
	c.Flags().StringVar(&size, "size", "", "a transfer size to advise for, e.g. 800MB")
	c.Flags().StringVarP(&cc, "congestion", "C", "", "TCP congestion control")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func windowText(w int) string {
	if w == 0 {
		return "auto"
	}
	return units.Size(w).String()
}

func printTune(w io.Writer, r *tune.Result, spec tune.Spec) {
	fmt.Fprintf(w, "%s -> %s: round trip %s ms\n\n", r.From, r.To, trim(r.RTTms))
	t := table(w)
	head := "WINDOW \\ STREAMS"
	for _, n := range spec.Streams {
		head += fmt.Sprintf("\t%d", n)
	}
	fmt.Fprintln(t, head)
	for _, win := range spec.Windows {
		fmt.Fprint(t, windowText(win))
		for _, n := range spec.Streams {
			for _, c := range r.Cells {
				if c.Streams == n && c.Window == win {
					cell := units.Rate(c.BitsPerSecond).String()
					if c.WindowLimitBPS > 0 {
						cell += " (limit " + units.Rate(c.WindowLimitBPS).String() + ")"
					}
					if c.Error != "" {
						cell = "failed"
					}
					fmt.Fprint(t, "\t"+cell)
				}
			}
		}
		fmt.Fprintln(t)
	}
	t.Flush()
	b := r.Best
	fmt.Fprintf(w, "\nbottleneck (best rate reached) %s; bandwidth-delay product %s\n", units.Rate(r.BottleneckBPS), units.Size(r.BDPBytes))
	fmt.Fprintf(w, "advice: %s, window %s: %s, %.2fx one stream's best", count(b.Streams, "stream"), windowText(b.Window), units.Rate(b.BitsPerSecond), r.GainOverOneStream)
	if b.TransferSeconds > 0 {
		fmt.Fprintf(w, "; %s in %.1f s", units.Size(spec.Size), b.TransferSeconds)
	}
	fmt.Fprintln(w)
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.Error)
	}
}
