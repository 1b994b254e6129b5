package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/units"
)

// bandwidthVerb is what measure capacity and measure available share:
// the hosts, the packet size, --json and --db.
type bandwidthVerb struct {
	pair   hostPair
	size   int
	asJSON bool
	db     string
}

func (v *bandwidthVerb) flags(c *cobra.Command) {
	v.pair.flags(c)
	v.size = 1472
	c.Flags().VarP(bytesFlag{&v.size}, "size", "s", "UDP payload of each packet in bytes (1472 fills a 1500-byte MTU)")
	c.Flags().BoolVar(&v.asJSON, "json", false, "print the result as JSON")
	c.Flags().StringVar(&v.db, "db", "", "also store the estimate in this archive (e.g. wanlab.db)")
}

// run checks the flags, runs estimate with both hosts connected, stores
// its figure as a sample of metric, and prints it.
func bandwidthRun[T any](c *cobra.Command, v *bandwidthVerb, kind, metric string, estimate func(ctx context.Context, from, to measure.Endpoint, spec measure.BandwidthSpec) (T, error), figure func(T) float64, print func(io.Writer, T)) error {
	spec := measure.BandwidthSpec{Size: v.size}
	if err := spec.Validate(); err != nil {
		return usagef("--size: %v", err)
	}
	return v.pair.session(c.Context(), func(ctx context.Context, from, to measure.Endpoint) error {
		rec, err := startRecord(v.db, kind, from.Host+"->"+to.Host, v.pair.testbed, spec)
		if err != nil {
			return err
		}
		res, err := estimate(ctx, from, to, spec)
		var samples []archive.Sample
		var kept any
		if err == nil {
			samples = []archive.Sample{{T: time.Now().UTC(), Metric: metric, Subject: results.PathSubject(from.Host, to.Host), Value: figure(res), Unit: "bit/s"}}
			kept = res
		}
		if rerr := rec.Finish(samples, kept, err); rerr != nil {
			return rerr
		}
		if err != nil {
			return err
		}
		return report(c.OutOrStdout(), v.asJSON, res, print, nil)
	})
}

// bandwidthCmd makes c a command that runs bandwidthRun with the verb's
// flags (the arguments after c are bandwidthRun's).
func bandwidthCmd[T any](c *cobra.Command, kind, metric string, estimate func(ctx context.Context, from, to measure.Endpoint, spec measure.BandwidthSpec) (T, error), figure func(T) float64, print func(io.Writer, T)) *cobra.Command {
	var v bandwidthVerb
	c.Args = args(cobra.NoArgs)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		return bandwidthRun(cmd, &v, kind, metric, estimate, figure, print)
	}
	v.flags(c)
	return c
}

func newCapacityCmd() *cobra.Command {
	return bandwidthCmd(&cobra.Command{
		Use:   "capacity --testbed NAME|--inventory FILE --from A --to B",
		Short: "Estimate a path's capacity (its narrowest link's rate) from packet-train dispersion",
		Long: `Send trains of back-to-back UDP packets from A to B and time their arrival in B's
kernel: the narrowest link spaces them by its packet time, so a train's dispersion gives
its rate, as pathrate did (NMWG bandwidth.capacity). A pilot of five short trains gives
a first figure; then 10-30 trains about 3 ms long at that rate. Prints the highest
cluster of the trains' estimates that holds a tenth of them (capacity_bps: trains that
cross traffic joined read below it), their interquartile range, and the mode of single packet pairs, which timer and interrupt
resolution blur at high rates (above ~200 Mbit/s on an emulated test-bed, whose engine
delivers packets in bursts). Rates are of the
IP layer, as link rates are counted. Light on the path: a few hundred packets.`,
		Example: `  wanlab measure capacity --testbed wan-lan --from wanclient --to server
  wanlab measure capacity --testbed wan-lan --from wanclient --to server --json`,
	}, "measure capacity", results.BandwidthCapacity, measure.Capacity,
		func(r *measure.CapacityResult) float64 { return r.CapacityBPS }, printCapacity)
}

func newAvailableCmd() *cobra.Command {
	return bandwidthCmd(&cobra.Command{
		Use:   "available --testbed NAME|--inventory FILE --from A --to B",
		Short: "Estimate a path's available bandwidth with self-loading periodic streams (pathload's method)",
		Long: `Measure the path's capacity first (as measure capacity), then send fleets of six
periodic UDP streams from A to B at a rate, about 100 ms each: a stream faster than what
the path has spare fills its queue, so its one-way delays rise. Each stream is judged
increasing, non-increasing or grey by pathload's two trend tests, and the rate moves by
binary search until the bounds are within 4% of the capacity (at most ten fleets). Prints
the estimate (available_bps), the bounds, and every fleet. Its streams briefly load the
path up to the capacity: it measures spare room by using it.`,
		Example: `  wanlab measure available --testbed wan-lan --from wanclient --to server
  wanlab measure available --testbed wan-lan --from wanclient --to server --json`,
	}, "measure available", results.BandwidthAvailable, measure.Available,
		func(r *measure.AvailableResult) float64 { return r.AvailableBPS }, printAvailable)
}

func printCapacity(w io.Writer, r *measure.CapacityResult) {
	fmt.Fprintf(w, "%s -> %s: capacity %s\n", r.From, r.To, units.Rate(r.CapacityBPS))
	t := table(w)
	fmt.Fprintf(t, "trains\t%d of %d packets of %d bytes, %d lost; estimates p25 %s, p75 %s\n", r.Trains, r.TrainLength, r.Size, r.Lost, units.Rate(r.LowBPS), units.Rate(r.HighBPS))
	fmt.Fprintf(t, "packet pairs\tmode %s\n", units.Rate(r.PairModeBPS))
	fmt.Fprintf(t, "sent\t%s in %.1f s\n", units.Size(r.Bytes), r.Seconds)
	t.Flush()
}

func printAvailable(w io.Writer, r *measure.AvailableResult) {
	fmt.Fprintf(w, "%s -> %s: available bandwidth %s (between %s and %s; capacity %s)\n", r.From, r.To,
		units.Rate(r.AvailableBPS), units.Rate(r.LowBPS), units.Rate(r.HighBPS), units.Rate(r.CapacityBPS))
	t := table(w)
	fmt.Fprintln(t, "FLEET\tRATE\tVERDICT\tINCREASING\tNON-INCREASING\tLOST")
	for i, f := range r.Fleets {
		fmt.Fprintf(t, "%d\t%s\t%s\t%d\t%d\t%.1f%%\n", i+1, units.Rate(f.RateBPS), f.Verdict, f.Increasing, f.NonIncreasing, 100*f.Lost)
	}
	t.Flush()
	fmt.Fprintf(w, "sent %s in %.1f s\n", units.Size(r.Bytes), r.Seconds)
}
