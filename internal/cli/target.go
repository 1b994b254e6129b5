package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/icmpecho"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/target"
	"github.com/wanlab/wanlab/internal/realhosts"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/stamp"
)

// farProbes are the probes of a measure verb toward far ends that run no
// agent (measure ping, measure stamp): their kind, help and bounds.
type farProbes struct {
	kind, use, short, long, example string
	// unit names the probes ("echoes", "packets"); size what --size is.
	unit, size           string
	maxCount             int
	minInterval, maxWait time.Duration
	minSize, maxSize     int
	defaultSize          int
}

// farEnd is what every such verb's help says of --target and the policy.
const farEnd = `--target may name one of the inventory's targets: (README, real hosts), of this verb's kind.
A's agent resolves a name (-4 or -6 picks the family) and tests the address only if its
policy's rule for this controller names it among its targets (docs/policy.md), within the
rule's rate and bytes; otherwise it refuses before sending anything. A far end that
answers none of the probes is reported as such, and the command exits 1.`

var pingProbes = farProbes{
	kind:  target.Ping,
	use:   "ping --testbed NAME|--inventory FILE --from A --target HOST",
	short: "Round trips and loss from a host to a far end that runs no agent, with ICMP echo",
	long: `A's agent sends --count ICMP echo requests, --interval apart, to --target, a host that
runs no wanlab agent and answers ping (a router, a storage node), and reports the round
trips as min/avg/max/p50/p99, jitter (mean difference of consecutive round trips) and loss
with its 95% binomial interval (Wilson's). --target is an IPv4 or IPv6 address or a name.
` + farEnd,
	example: `  wanlab measure ping --inventory sites.yaml --from cern --target 192.0.2.7
  wanlab measure ping --inventory sites.yaml --from cern --target router.example.org -6 -c 100 -i 0.2 --json`,
	unit: "echoes", size: "bytes of data in each echo",
	maxCount: icmpecho.MaxCount, minInterval: icmpecho.MinInterval, maxWait: icmpecho.MaxInterval,
	minSize: icmpecho.MinSize, maxSize: icmpecho.MaxSize, defaultSize: icmpecho.DefaultSize,
}

var stampProbes = farProbes{
	kind:  target.STAMP,
	use:   "stamp --testbed NAME|--inventory FILE --from A --target HOST[:PORT]",
	short: "Round trips, one-way delays and loss from a host to a STAMP reflector that runs no agent (RFC 8762)",
	long: `A's agent sends --count STAMP test packets (RFC 8762, unauthenticated mode), --interval
apart, to the reflector at --target (a router, a perfSONAR node; port 862 unless given;
TWAMP-light reflectors answer too), and reports the round trips without the reflector's
turnaround as min/avg/max/p50/p99, jitter, loss with its 95% interval (Wilson's), and the
delay each way: reliable when both clocks said they were synchronised to UTC, else holding
the clocks' offset. --target is an IPv4 or IPv6 address or a name, [v6]:port with a port.
` + farEnd,
	example: `  wanlab measure stamp --inventory sites.yaml --from cern --target 192.0.2.7
  wanlab measure stamp --inventory sites.yaml --from cern --target '[2001:db8::7]:8620' -c 1000 -i 0.01 --json`,
	unit: "packets", size: "each packet's UDP payload in bytes",
	maxCount: stamp.MaxCount, minInterval: stamp.MinInterval, maxWait: stamp.MaxInterval,
	minSize: stamp.BaseLen, maxSize: stamp.MaxPacketLen, defaultSize: stamp.BaseLen,
}

func newPingCmd() *cobra.Command  { return newFarProbesCmd(pingProbes) }
func newSTAMPCmd() *cobra.Command { return newFarProbesCmd(stampProbes) }

func newFarProbesCmd(fp farProbes) *cobra.Command {
	var (
		where             hosts
		from, far         string
		count, size       int
		interval, timeout time.Duration
		v4, v6, asJSON    bool
	)
	c := &cobra.Command{
		Use: fp.use, Short: fp.short, Long: fp.long, Example: fp.example,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			if from == "" || far == "" {
				return usagef("give --from (the host whose agent tests) and --target (the far end)")
			}
			family, err := familyOf(v4, v6)
			if err != nil {
				return err
			}
			switch {
			case count < 1 || count > fp.maxCount:
				return usagef("--count %d: give 1 to %d", count, fp.maxCount)
			case interval < fp.minInterval || interval > fp.maxWait:
				return usagef("--interval %s: give %s to %s", interval, fp.minInterval, fp.maxWait)
			case size < fp.minSize || size > fp.maxSize:
				return usagef("--size %d: give %d to %d bytes", size, fp.minSize, fp.maxSize)
			case timeout <= 0 || timeout > icmpecho.MaxTimeout:
				return usagef("--timeout %s: give up to %s", timeout, icmpecho.MaxTimeout)
			}
			if err := where.check(); err != nil {
				return err
			}
			addr, name, err := farTarget(where, far, fp.kind)
			if err != nil {
				return err
			}
			ctx, eps, err := connect(c.Context(), where, from)
			if err != nil {
				return err
			}
			defer measure.CloseAll(eps)
			req := &agentpb.TargetRequest{Kind: fp.kind, Address: addr, Family: uint32(family),
				Probe: &agentpb.ProbeSpec{Count: uint32(count), IntervalNs: int64(interval), Size: uint32(size), TimeoutNs: int64(timeout)}}
			res, err := target.Probes(ctx, eps[from], req)
			if res == nil {
				return err
			}
			res.Target = name
			return report(c.OutOrStdout(), asJSON, res, printFarProbes, err)
		},
	}
	where.flags(c)
	c.Flags().StringVar(&from, "from", "", "the host whose agent tests (required)")
	c.Flags().StringVar(&far, "target", "", "the far end: a target the inventory names (targets:), an IPv4 or IPv6 address, or a name A's agent resolves (required)")
	c.Flags().IntVarP(&count, "count", "c", 10, "number of "+fp.unit)
	interval = time.Second
	c.Flags().VarP(seconds{&interval}, "interval", "i", "time between "+fp.unit+", e.g. 200ms or 0.2")
	size = fp.defaultSize
	c.Flags().VarP(bytesFlag{&size}, "size", "s", fmt.Sprintf("%s (%d-%d)", fp.size, fp.minSize, fp.maxSize))
	timeout = icmpecho.DefaultTimeout
	c.Flags().Var(seconds{&timeout}, "timeout", "how long each reply may take; a later one counts as lost")
	c.Flags().BoolVarP(&v4, "ipv4", "4", false, "test over IPv4 (resolve the target's name to an IPv4 address)")
	c.Flags().BoolVarP(&v6, "ipv6", "6", false, "test over IPv6")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// farTarget is --target as the agent is to test it, and as results name
// it: a target of the inventory by name, which must be of the verb's
// kind, else the address or host name given.
func farTarget(where hosts, far, kind string) (addr, name string, err error) {
	if where.inventory == "" || !scenario.ValidName(far) {
		return far, far, nil
	}
	inv, err := realhosts.LoadHosts(where.inventory)
	if err != nil {
		return "", "", err
	}
	tg, ok := inv.Target(far)
	switch {
	case !ok:
		return far, far, nil
	case tg.Kind != kind:
		return "", "", usagef("--target %s: the inventory %s names it %s (%s: %s): wanlab measure %s tests toward it",
			far, inv.Source, farend.KindWords(tg.Kind), tg.Kind, tg.Address, farVerb[tg.Kind])
	}
	return tg.Address, tg.Name, nil
}

// farVerb is the measure verb that tests a kind of far end.
var farVerb = map[string]string{target.Iperf3: "throughput", target.STAMP: "stamp", target.Ping: "ping"}

// familyOf is the IP family -4 and -6 ask for: 4, 6, or 0 for either.
func familyOf(v4, v6 bool) (int, error) {
	switch {
	case v4 && v6:
		return 0, usagef("give -4 or -6, not both")
	case v4:
		return 4, nil
	case v6:
		return 6, nil
	}
	return 0, nil
}

func printFarProbes(w io.Writer, r *target.Summary) {
	unit := pingProbes.unit
	if r.Kind == target.STAMP {
		unit = stampProbes.unit
	}
	to := r.Address
	if r.Target != r.Address {
		to = fmt.Sprintf("%s (%s)", r.Address, r.Target)
	}
	fmt.Fprintf(w, "%s -> %s: %d %s of %d bytes, %s ms apart\n", r.From, to, r.Count, unit, r.Size, trim(r.Interval))
	t := table(w)
	if r.Received > 0 {
		s := r.RTTms
		fmt.Fprintf(t, "rtt\tmin %s / avg %s / max %s ms, p50 %s, p99 %s ms, mdev %s ms\n", trim(s.Min), trim(s.Avg), trim(s.Max), trim(s.P50), trim(s.P99), trim(s.Mdev))
		fmt.Fprintf(t, "jitter\t%s ms (mean difference of consecutive round trips)\n", trim(r.JitterMS))
	}
	fmt.Fprintf(t, "loss\t%s had no reply", ratioText(r.Loss, unit))
	for _, n := range []struct {
		n    int
		what string
	}{{r.Late, "late (after --timeout, counted lost)"}, {r.Reordered, "reordered"}, {r.Duplicates, "duplicates"}, {r.Invalid, "invalid replies"}} {
		if n.n > 0 {
			fmt.Fprintf(t, ", %d %s", n.n, n.what)
		}
	}
	fmt.Fprintln(t)
	if o := r.OneWay; o != nil {
		clock := "reliable: both clocks said they were synchronised"
		if !o.Reliable {
			clock = "unreliable: a clock did not say it was synchronised, so they include the clocks' offset (round trips do not)"
		}
		for _, d := range []struct {
			from, to string
			s        string
		}{{r.From, r.Address, statsText(o.Forward.Min, o.Forward.Avg, o.Forward.Max, o.Forward.P50)}, {r.Address, r.From, statsText(o.Back.Min, o.Back.Avg, o.Back.Max, o.Back.P50)}} {
			fmt.Fprintf(t, "one way %s -> %s\t%s\n", d.from, d.to, d.s)
		}
		fmt.Fprintf(t, "clock\t%s\n", clock)
	}
	t.Flush()
	switch {
	case r.Silent:
		fmt.Fprintf(w, "SILENT: %s\n", r.Error)
	case r.Partial:
		fmt.Fprintf(w, "PARTIAL: %s\n", r.Error)
	}
}

// statsText is one way's delays as measure probe prints them.
func statsText(lo, avg, hi, p50 float64) string {
	return fmt.Sprintf("min %s / avg %s / max %s ms, p50 %s", trim(lo), trim(avg), trim(hi), trim(p50))
}
