package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/target"
	"github.com/wanlab/wanlab/internal/realhosts"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

func newMeasureCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "measure",
		Short: "Measure between hosts of a test-bed or real hosts with wanlab's own agents",
		Long: `Measure between two hosts with wanlab's own measurement engine: the agents run the two
ends of each test and stream back their samples. The hosts are those of a running
test-bed (--testbed NAME: testbed up starts an agent in every host) or real hosts
(--inventory FILE: agents on the network, over TLS 1.3; see README, real hosts). Results
print as a table, or as JSON with --json (see docs/measure-json.md).`,
	}
	c.AddCommand(newThroughputCmd(), newProbeCmd(), newPingCmd(), newSTAMPCmd(), newTraceCmd(), newImpactCmd(), newTuneCmd(), newTransferCmd(), newDiskCmd(), newCapacityCmd(), newAvailableCmd())
	return c
}

// hosts is where a measure verb's hosts are: a running test-bed, or the
// real hosts of an inventory.
type hosts struct {
	testbed, inventory string
	// family is -4 or -6, of the verbs that test between hosts.
	family addrFamily
}

func (w *hosts) flags(c *cobra.Command) {
	c.Flags().StringVar(&w.testbed, "testbed", "", "the running test-bed whose hosts to measure")
	c.Flags().StringVar(&w.inventory, "inventory", "", "an inventory of real hosts' agents (README, real hosts), instead of --testbed")
}

// check says whether exactly one of --testbed and --inventory is given.
func (w *hosts) check() error {
	if (w.testbed == "") == (w.inventory == "") {
		return usagef("give --testbed NAME (an emulated test-bed) or --inventory FILE (real hosts)")
	}
	return nil
}

// open attaches to the test-bed, or opens the inventory's bed (with its
// hosts' tests over the family of -4 or -6, which those of names must
// have); ctx carries the inventory's wait for busy hosts.
func (w *hosts) open(ctx context.Context, names ...string) (context.Context, backend.Bed, error) {
	if err := w.check(); err != nil {
		return ctx, nil, err
	}
	family, err := w.family.value()
	if err != nil {
		return ctx, nil, err
	}
	if w.testbed != "" {
		bed, err := testbed.Attach(w.testbed)
		return ctx, bed, err
	}
	inv, err := realhosts.LoadHosts(w.inventory)
	if err != nil {
		return ctx, nil, err
	}
	if inv, err = withFamily(inv, family, names...); err != nil {
		return ctx, nil, err
	}
	bed, err := realhosts.Open(inv, nil)
	if err != nil {
		return ctx, nil, err
	}
	return measure.WithWait(ctx, inv.Wait), bed, nil
}

// hostPair is the hosts, --from and --to of every measure verb.
type hostPair struct {
	hosts
	from, to string
}

func (p *hostPair) flags(c *cobra.Command) {
	p.hosts.flags(c)
	p.hosts.family.flags(c)
	c.Flags().StringVar(&p.from, "from", "", "the host that sends (required)")
	c.Flags().StringVar(&p.to, "to", "", "the host that receives (required)")
}

// check says what is missing or wrong in the pair.
func (p *hostPair) check() error {
	if err := p.hosts.check(); err != nil {
		return err
	}
	if p.from == "" || p.to == "" {
		return usagef("give --from and --to")
	}
	if p.from == p.to {
		return usagef("--from and --to are the same host %q", p.from)
	}
	return nil
}

// session runs fn with both hosts' agents connected.
func (p *hostPair) session(ctx context.Context, fn func(ctx context.Context, from, to measure.Endpoint) error) error {
	if err := p.check(); err != nil {
		return err
	}
	ctx, eps, err := connect(ctx, p.hosts, p.from, p.to)
	if err != nil {
		return err
	}
	defer measure.CloseAll(eps)
	return fn(ctx, eps[p.from], eps[p.to])
}

// connect dials the agents of some hosts of a test-bed or an inventory,
// with test addresses of one family (-4, -6, or the hosts' default).
func connect(ctx context.Context, w hosts, names ...string) (context.Context, map[string]measure.Endpoint, error) {
	var uniq []string
	for _, h := range names {
		if !slices.Contains(uniq, h) {
			uniq = append(uniq, h)
		}
	}
	ctx, bed, err := w.open(ctx, uniq...)
	if err != nil {
		return ctx, nil, err
	}
	family, _ := w.family.value() // checked by open
	eps, err := dialFamily(ctx, bed, family, uniq...)
	return ctx, eps, err
}

func newThroughputCmd() *cobra.Command {
	var (
		pair                            hostPair
		streams                         int
		window, bytes, rate, congestion string
		duration, interval              time.Duration
		reverse, bidir, udp, asJSON     bool
		length                          int
		db, far                         string
	)
	c := &cobra.Command{
		Use:   "throughput --testbed NAME|--inventory FILE --from A --to B",
		Short: "Memory-to-memory throughput over TCP (N streams, window, congestion control) or paced UDP",
		Long: `Send from A to B for --duration (or --bytes per stream) over --streams TCP
connections, or paced UDP with --udp --rate (the total over all streams, as a
scenario's rate: is; iperf3's -b is per stream). Prints the throughput per interval and in
total as both ends saw it, retransmits and TCP_INFO (cwnd, RTT) for TCP, loss and jitter
for UDP, and the CPU each host used. --reverse sends from B to A; --bidir runs both
directions at once. A test cut short (a host's agent gone, Ctrl-C) still prints what was
measured, marked partial, and exits 1.

--target HOST[:PORT] instead of --to tests toward an iperf3 server that runs no wanlab
agent (port 5201 unless given), or --target NAME toward one the inventory names among its
targets: (README, real hosts): A's agent speaks iperf3's protocol itself, and the result
reads as one between agents, the server's count being what arrived. On real hosts the
agent's policy must name the server among its targets (docs/policy.md); a server busy
with another test says so, and the command exits 1.`,
		Example: `  wanlab measure throughput --testbed wan-lan --from wanclient --to server
  wanlab measure throughput --testbed wan-lan --from lanclient --to server --streams 8 --window 256KiB --json
  wanlab measure throughput --testbed wan-lan --from wanclient --to server --udp --rate 1Mbit
  wanlab measure throughput --inventory sites.yaml --from cern --target iperf.example.org:5201 -P 4
  wanlab measure throughput --inventory sites.yaml --from cern --target cnaf-iperf -6`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			spec := throughput.Spec{Protocol: throughput.TCP, Streams: streams, Duration: duration, Congestion: congestion, Interval: interval, UDPLength: length}
			if c.Flags().Changed("bytes") {
				b, err := units.ParseSize(bytes)
				if err != nil {
					return usagef("--bytes: %v", err)
				}
				spec.Bytes = int64(b)
				if !c.Flags().Changed("duration") {
					spec.Duration = 0
				}
			}
			if window != "" {
				w, err := units.ParseSize(window)
				if err != nil {
					return usagef("--window: %v", err)
				}
				spec.Window = int(w)
			}
			if udp {
				spec.Protocol = throughput.UDP
				r, err := units.ParseRate(rate)
				if err != nil {
					return usagef("--rate: %v", err)
				}
				spec.UDPRate = float64(r)
			} else if c.Flags().Changed("rate") {
				return usagef("--rate applies to --udp only")
			}
			if reverse && bidir {
				return usagef("give --reverse or --bidir, not both")
			}
			if err := spec.Validate(limits.Default); err != nil {
				return usagef("%v", err)
			}
			if far != "" {
				return iperf3Target(c, pair, far, spec, reverse || bidir || udp || db != "", asJSON)
			}
			return pair.session(c.Context(), func(ctx context.Context, from, to measure.Endpoint) error {
				if reverse {
					from, to = to, from
				}
				results, errs := throughput.MeasureBoth(ctx, from, to, spec, bidir, func(from, to string) (throughput.Recorder, error) {
					return startRecord(db, "measure throughput", from+"->"+to, pair.testbed, spec)
				})
				if asJSON {
					var out any = results[0]
					if bidir {
						out = results
					}
					if jerr := writeJSON(c.OutOrStdout(), out); jerr != nil {
						return jerr
					}
				} else {
					for _, r := range results {
						if r != nil {
							printThroughput(c.OutOrStdout(), r)
						}
					}
				}
				return errs
			})
		},
	}
	pair.flags(c)
	c.Flags().IntVarP(&streams, "streams", "P", 1, "parallel streams (1-256)")
	c.Flags().StringVarP(&window, "window", "w", "", "socket buffer size, e.g. 256KiB (default: kernel autotuning)")
	duration = 10 * time.Second
	c.Flags().VarP(seconds{&duration}, "duration", "t", "how long to send, e.g. 30s or 30 (seconds)")
	c.Flags().StringVarP(&bytes, "bytes", "n", "", "send this much per stream instead of for a duration, e.g. 100MB")
	c.Flags().BoolVarP(&reverse, "reverse", "R", false, "send from --to to --from")
	c.Flags().BoolVar(&bidir, "bidir", false, "send both ways at once")
	c.Flags().BoolVarP(&udp, "udp", "u", false, "paced UDP instead of TCP")
	c.Flags().StringVarP(&rate, "rate", "b", "", "UDP target rate, the total over all streams, e.g. 10Mbit (iperf3's -b is per stream: its -P 4 -b 10M is -P 4 -b 40Mbit here)")
	length = 1448
	c.Flags().VarP(bytesFlag{&length}, "length", "l", "UDP datagram payload, e.g. 1448 or 8K (bytes; K, M as iperf3 takes them)")
	c.Flags().StringVarP(&congestion, "congestion", "C", "", "TCP congestion control: reno, cubic, bbr (default: the host's)")
	interval = time.Second
	c.Flags().VarP(seconds{&interval}, "interval", "i", "reporting interval, e.g. 100ms or 0.1 (at least 10ms)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().StringVar(&db, "db", "", "also store the test, every interval and the result in this archive (e.g. wanlab.db)")
	c.Flags().StringVar(&far, "target", "", "instead of --to: an iperf3 server that runs no agent, HOST[:PORT] or a target the inventory names (TCP, from --from to it)")
	return c
}

// iperf3Target runs measure throughput --target: from the pair's --from
// toward an iperf3 server, through the host's agent. other says a flag
// was given that a test toward an iperf3 server does not take.
func iperf3Target(c *cobra.Command, pair hostPair, far string, spec throughput.Spec, other, asJSON bool) error {
	switch {
	case pair.to != "":
		return usagef("give --to (a host with an agent) or --target (an iperf3 server), not both")
	case pair.from == "":
		return usagef("give --from, the host whose agent tests toward --target")
	case other:
		return usagef("--target tests over TCP from --from toward the server: --reverse, --bidir, --udp and --db are not taken with it")
	}
	family, err := familyOf(pair.family.v4, pair.family.v6)
	if err != nil {
		return err
	}
	if err := pair.hosts.check(); err != nil {
		return err
	}
	addr, name, err := farTarget(pair.hosts, far, target.Iperf3)
	if err != nil {
		return err
	}
	ctx, eps, err := connect(c.Context(), pair.hosts, pair.from)
	if err != nil {
		return err
	}
	defer measure.CloseAll(eps)
	spec.UDPLength = 0 // a TCP test: -l is UDP's
	req := &agentpb.TargetRequest{Kind: target.Iperf3, Address: addr, Family: uint32(family), Throughput: throughput.SpecToPB(spec)}
	res, err := target.Run(ctx, eps[pair.from], req, nil)
	if res == nil || res.GetThroughput() == nil {
		return err
	}
	r := target.Throughput(pair.from, name, spec, res)
	if res.GetThroughput().GetPartial() || res.GetError() != "" {
		r.Partial, r.Error = true, res.GetError()
		err = errors.Join(err, fmt.Errorf("the test toward %s was cut short: %s", far, res.GetError()))
	}
	return report(c.OutOrStdout(), asJSON, r, printThroughput, err)
}

func printThroughput(w io.Writer, r *throughput.Result) {
	s := r.Start
	what := fmt.Sprintf("%d %s stream", s.Streams, strings.ToUpper(s.Protocol))
	if s.Streams > 1 {
		what += "s"
	}
	fmt.Fprintf(w, "%s -> %s, %s\n", s.From, s.To, what)
	t := table(w)
	udp := s.Protocol == "udp"
	if udp {
		fmt.Fprintln(t, "INTERVAL\tTRANSFER\tBITRATE\tLOST\tJITTER")
	} else {
		fmt.Fprintln(t, "INTERVAL\tTRANSFER\tBITRATE\tRETR\tCWND\tRTT")
	}
	for _, iv := range r.Intervals {
		sum := iv.Sum
		fmt.Fprintf(t, "%.2f-%.2f s\t%s\t%s", sum.Start, sum.End, units.Size(sum.Bytes), units.Rate(sum.BitsPerSecond))
		if udp {
			fmt.Fprintf(t, "\t%d/%d (%.2g%%)\t%.3f ms\n", sum.LostPackets, sum.Packets+sum.LostPackets, sum.LostPercent, sum.JitterMS)
			continue
		}
		var cwnd uint64
		for _, st := range iv.Streams {
			cwnd += uint64(st.SndCwnd)
		}
		fmt.Fprintf(t, "\t%d\t%s\t%s ms\n", deref(sum.Retransmits), units.Size(cwnd), trim(float64(sum.RTT)/1000))
	}
	t.Flush()
	e := r.End
	fmt.Fprintf(w, "sent      %s in %.2f s: %s", units.Size(e.SumSent.Bytes), e.SumSent.Seconds, units.Rate(e.SumSent.BitsPerSecond))
	if e.SumSent.Retransmits != nil {
		fmt.Fprintf(w, ", %d retransmits", *e.SumSent.Retransmits)
	}
	fmt.Fprintf(w, "\nreceived  %s in %.2f s: %s", units.Size(e.SumReceived.Bytes), e.SumReceived.Seconds, units.Rate(e.SumReceived.BitsPerSecond))
	if udp {
		fmt.Fprintf(w, ", lost %d of %d (%.3g%%), jitter %.3f ms", e.SumReceived.LostPackets, e.SumReceived.Packets+e.SumReceived.LostPackets, e.SumReceived.LostPercent, e.SumReceived.JitterMS)
	}
	fmt.Fprintf(w, "\nCPU, %% of one core: %s %s, %s %s\n", s.From, cpuText(e.CPU.SenderHost, e.CPU.SenderAgent), s.To, cpuText(e.CPU.ReceiverHost, e.CPU.ReceiverAgent))
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.Error)
	}
}

func cpuText(host, agent float64) string {
	if host < 0 {
		return fmt.Sprintf("agent %.1f", agent)
	}
	return fmt.Sprintf("host %.1f (agent %.1f)", host, agent)
}

func deref(p *uint32) uint32 {
	if p == nil {
		return 0
	}
	return *p
}
