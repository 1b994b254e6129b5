package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/tcpwatch"
)

func newWatchCmd() *cobra.Command {
	var (
		where              hosts
		host, peer, db     string
		cgroup             string
		port, pid          int
		interval, duration time.Duration
		asJSON             bool
	)
	c := &cobra.Command{
		Use:   "watch --testbed NAME|--inventory FILE --host H [--port P]",
		Short: "Sample the TCP state of any application's connections on a host, every 10 ms",
		Long: `Read the kernel's TCP_INFO (through sock_diag netlink, as ss does) of every TCP connection
on host H that the selection matches, every --interval, without touching the application:
bytes delivered, congestion window and slow-start threshold, smoothed RTT and its
variance, retransmits, pacing and delivery rate, segments in flight, and the share of
each interval the sender spent with nothing to send (application-limited), held by the
congestion window, the receiver's window or its send buffer (web100's SndLim times, from
the kernel's busy, rwnd_limited and sndbuf_limited, counted in jiffies: a few ms).

Select by --port (local or remote), --peer (an address or prefix), --pid (connections
that process holds open) and --cgroup (those the processes of a control group hold
open); with none, every connection. A connection is found within 100 ms of its start. Prints each active connection
once a second, then a summary per connection and how the sampling went (intervals
missed, achieved intervals, CPU used); --json prints the whole series instead. Runs
for --duration, or until Ctrl-C. --db stores every point as NMWG-named samples
(tcp HOST LOCAL->REMOTE; docs/archive.md). On real hosts the agent's policy must allow
the watch kind: it shows every user's connections.`,
		Example: `  wanlab watch --testbed wan-lan --host server --port 5201
  wanlab watch --testbed wan-lan --host server --interval 10ms --duration 30s --json
  wanlab watch --testbed wan-lan --host wanclient --peer 10.250.0.1 --db wanlab.db`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			if host == "" {
				return usagef("give --host, the host whose connections to watch")
			}
			spec := tcpwatch.Spec{Port: port, Peer: peer, PID: pid, Cgroup: cgroup, Interval: interval, Duration: duration}
			if err := spec.Validate(limits.Default); err != nil {
				return usagef("%v", err)
			}
			if err := where.check(); err != nil {
				return err
			}
			ctx, eps, err := connect(c.Context(), where, host)
			if err != nil {
				return err
			}
			defer measure.CloseAll(eps)
			rec, err := startRecord(db, "watch", host+" "+describeWatch(spec), where.testbed, spec)
			if err != nil {
				return err
			}
			out := c.OutOrStdout()
			var live func(*measure.WatchResult)
			if !asJSON {
				fmt.Fprintf(out, "watching %s's TCP connections (%s) every %v; Ctrl-C ends\n", host, describeWatch(spec), interval)
				live = liveWatch(out)
			}
			res, err := measure.Watch(ctx, eps[host], spec, live)
			if res == nil {
				return errors.Join(err, rec.Finish(nil, nil, err))
			}
			if rerr := rec.Finish(res.Samples(), res, err); rerr != nil {
				return rerr
			}
			return report(out, asJSON, res, printWatch, err)
		},
	}
	where.flags(c)
	c.Flags().StringVar(&host, "host", "", "the host whose connections to watch (required)")
	c.Flags().IntVarP(&port, "port", "p", 0, "only connections with this local or remote port")
	c.Flags().StringVar(&peer, "peer", "", "only connections to this address or prefix, e.g. 10.250.0.1 or 10.250.0.0/24")
	c.Flags().IntVar(&pid, "pid", 0, "only connections this process holds open")
	c.Flags().StringVar(&cgroup, "cgroup", "", "only connections the processes of this control group hold open, e.g. system.slice/nginx.service")
	interval = 10 * time.Millisecond
	c.Flags().Var(seconds{&interval}, "interval", "time between samples, e.g. 10ms (1ms-10s)")
	c.Flags().Var(seconds{&duration}, "duration", "how long to watch, e.g. 30s (default: until Ctrl-C)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result, with every connection's series, as JSON")
	c.Flags().StringVar(&db, "db", "", "also store every point in this archive (e.g. wanlab.db)")
	return c
}

func describeWatch(s tcpwatch.Spec) string {
	var what []string
	if s.Port != 0 {
		what = append(what, fmt.Sprintf("port %d", s.Port))
	}
	if s.Peer != "" {
		what = append(what, "peer "+s.Peer)
	}
	if s.PID != 0 {
		what = append(what, fmt.Sprintf("process %d", s.PID))
	}
	if s.Cgroup != "" {
		what = append(what, "cgroup "+s.Cgroup)
	}
	if len(what) == 0 {
		return "all"
	}
	return strings.Join(what, ", ")
}

// liveWatch prints, about once a second, each connection that moved data
// since the last print.
func liveWatch(w io.Writer) func(*measure.WatchResult) {
	printed := map[int]int{} // connection id: points already shown
	var last float64
	return func(r *measure.WatchResult) {
		now := time.Since(r.Start).Seconds()
		if now-last < 1 {
			return
		}
		last = now
		for _, c := range r.Connections {
			pts := c.Series[printed[c.ID]:]
			printed[c.ID] = len(c.Series)
			if len(pts) == 0 {
				continue
			}
			var bits, secs, idle, dt float64
			var retr uint32
			for i, p := range pts {
				dt = p.T - last + 1
				if i > 0 {
					dt = p.T - pts[i-1].T
				}
				bits += p.ThroughputBPS * dt
				secs += dt
				idle += p.Limited.App * dt
				retr += p.Retransmits
			}
			if bits == 0 {
				continue
			}
			p := pts[len(pts)-1]
			fmt.Fprintf(w, "%6.1f s  %s  %s  cwnd %s  rtt %s ms  retr %d", p.T, c.Name(), units.Rate(bits/secs), units.Size(p.Cwnd), trim(p.RTTms), retr)
			if p.Limited != (measure.Limited{}) || idle > 0 {
				fmt.Fprintf(w, "  idle %.0f%%", 100*idle/secs)
			}
			fmt.Fprintln(w)
		}
	}
}

func printWatch(w io.Writer, r *measure.WatchResult) {
	s := r.Summary
	fmt.Fprintf(w, "%s: %d connections watched every %s ms; %d samples, %d intervals missed; achieved interval p50 %s, p99 %s, max %s ms; sampling used %.2f%% of a core\n",
		r.Host, len(r.Connections), trim(r.IntervalMS), s.Ticks, s.Missed, trim(s.IntervalP50), trim(s.IntervalP99), trim(s.IntervalMax), s.CPUPercent)
	if len(r.Connections) == 0 {
		fmt.Fprintln(w, "no connection matched")
		return
	}
	t := table(w)
	fmt.Fprintln(t, "CONNECTION\tSECONDS\tBYTES\tMEAN\tPEAK\tRTT\tMAX CWND\tRETR\tIDLE\tCWND-LTD\tRWND-LTD\tSNDBUF-LTD")
	for _, c := range r.Connections {
		fmt.Fprintf(t, "%s\t%.1f\t%s\t%s\t%s\t%s ms\t%s\t%d", c.Name(), c.Seconds, units.Size(c.Bytes), units.Rate(c.ThroughputBPS), units.Rate(c.PeakBPS), trim(c.RTTms), units.Size(c.MaxCwnd), c.Retransmits)
		if c.Sender {
			l := c.Limited
			fmt.Fprintf(t, "\t%.0f%%\t%.0f%%\t%.0f%%\t%.0f%%\n", 100*l.App, 100*l.Cwnd, 100*l.Rwnd, 100*l.Sndbuf)
		} else {
			fmt.Fprintln(t, "\t(receiver)\t\t\t")
		}
	}
	t.Flush()
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.Error)
	}
}
