package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/testbed"
)

func newTestbedCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "testbed",
		Short: "Bring emulated test-beds up and down, inspect them, run commands in their hosts",
		Long: `An emulated test-bed is a set of hosts, each with its own network stack (a network
namespace) and CPU quota (a cgroup), joined by links that a userspace engine emulates
packet by packet: rate, drop-tail queue, delay, jitter and loss, per direction.`,
	}
	c.AddCommand(newUpCmd(), newDownCmd(), newStatusCmd(), newSetCmd(), newCaptureCmd(), newExecCmd(), newValidateCmd(), newCheckCmd(), newDaemonCmd())
	return c
}

func newValidateCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "validate FILE.yaml | NAME",
		Short: "Parse and check a scenario (its test-bed and workloads) without building it",
		Long: `Parse and check a scenario without building anything: the test-bed (that this machine
can hold it) and every step of every workload, against the limits of an agent started
with its defaults (duration, bytes, streams, rate, connections). Every problem is
reported with its file:line, and exits 2. NAME is a built-in scenario (wanlab scenarios).
With routers, it also lists each router (address, the directions out of it), how many
paths cross each direction, each path's nodes and bottleneck direction, and the pairs
of hosts that no path joins (a note: they are valid, exit 0).`,
		Example: `  wanlab testbed validate examples/wan-lan.yaml
  wanlab testbed validate --json examples/wan-lan.yaml
  wanlab testbed validate objectivity-demo`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			p, err := loadPlan(a[0], false)
			if err != nil {
				return err
			}
			tb := p.file.Testbed
			view := newPlanView(p.topo)
			if asJSON {
				return writeJSON(c.OutOrStdout(), view)
			}
			counts := count(len(tb.Hosts), "host") + ", " + count(len(tb.Sites), "site") + ", " + count(len(tb.Links), "link")
			if len(tb.Routers) > 0 {
				counts += ", " + count(len(tb.Routers), "router") + " (routing by " + p.topo.Routing + ")"
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: test-bed %q is valid: %s\n\n", a[0], tb.Name, counts)
			printPlan(c.OutOrStdout(), view)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the resolved test-bed as JSON")
	return c
}

func newUpCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "up FILE.yaml | NAME",
		Short: "Build a test-bed and return when it is ready (the engine runs in the background)",
		Long: `Build the test-bed described in FILE.yaml, or in the built-in scenario NAME: one network
namespace, TUN device and CPU cgroup per host, and a background engine process that
carries every packet between them. State lives in /run/wanlab/NAME/. Leftovers of
test-beds whose engine was killed are removed first. Ctrl-C while it comes up tears down
what was built. Needs root.`,
		Example: `  wanlab testbed up examples/wan-lan.yaml
  wanlab testbed exec wan-lan client -- ping -c 3 10.250.0.1
  wanlab testbed down wan-lan`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			p, err := loadPlan(a[0], false)
			if err != nil {
				return err
			}
			if err := emulable(p); err != nil {
				return err
			}
			ctx := c.Context()
			prog := newProgress(c.ErrOrStderr(), 0, "testbed up").terminalOnly()
			res, err := testbed.UpFor(ctx, p.source, p.text, 0, prog.upStep)
			prog.done()
			if err != nil {
				return err
			}
			for _, name := range res.Cleaned {
				fmt.Fprintf(c.ErrOrStderr(), "wanlab: removed the leftovers of test-bed %q, whose engine had died\n", name)
			}
			st := res.State
			if asJSON {
				return writeJSON(c.OutOrStdout(), newStatusView(&testbed.Status{State: st, Alive: true}))
			}
			w := c.OutOrStdout()
			fmt.Fprintf(w, "test-bed %s is up (engine pid %d)\n", st.Name, st.PID)
			for _, line := range st.Machine.Lines() {
				fmt.Fprintln(w, line)
			}
			fmt.Fprintln(w)
			printPlan(w, planViewOf(st))
			host := st.Hosts[0]
			peer := host
			if len(host.Routes) > 0 {
				peer.Addr = host.Routes[0].Addr
			}
			fmt.Fprintf(w, "\nrun a command in a host:  wanlab testbed exec %s %s -- ping -c 3 %s\n", st.Name, host.Name, peer.Addr)
			fmt.Fprintf(w, "live counters:            wanlab testbed status %s\n", st.Name)
			fmt.Fprintf(w, "take it down:             wanlab testbed down %s\n", st.Name)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the test-bed as JSON")
	return c
}

func newDownCmd() *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "down NAME | --all",
		Short: "Tear a test-bed down: its engine, namespaces, cgroups and every process in its hosts",
		Example: `  wanlab testbed down wan-lan
  wanlab testbed down --all`,
		Args: args(func(c *cobra.Command, a []string) error {
			if all && len(a) > 0 || !all && len(a) != 1 {
				return errors.New("give one test-bed NAME or --all")
			}
			return nil
		}),
		RunE: func(c *cobra.Command, a []string) error {
			if err := testbed.CheckEnvironment(); err != nil {
				return err
			}
			if all {
				names, err := testbed.DownAll()
				for _, n := range names {
					fmt.Fprintf(c.OutOrStdout(), "test-bed %s is down\n", n)
				}
				if len(names) == 0 {
					fmt.Fprintln(c.OutOrStdout(), "no test-bed is up")
				}
				return err
			}
			if err := testbed.Down(a[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "test-bed %s is down\n", a[0])
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "take down every test-bed on this machine, including leftovers of killed runs")
	return c
}

func newStatusCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status [NAME]",
		Short: "List test-beds, or show one with its hosts and live link counters",
		Long: `Without NAME, list the test-beds on this machine. With NAME, show its hosts and, per
link direction, the configuration and live counters: packets and bytes forwarded, drops
by the queue and by the loss model, and drops anywhere else (TUN queues, engine pool)
so that every drop can be accounted for.`,
		Example: `  wanlab testbed status
  wanlab testbed status wan-lan --json`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if len(a) == 0 {
				list := listTestbeds()
				if asJSON {
					return writeJSON(c.OutOrStdout(), list)
				}
				printList(c.OutOrStdout(), list)
				return nil
			}
			if err := testbed.CheckEnvironment(); err != nil {
				return err
			}
			st, err := testbed.GetStatus(a[0])
			if err != nil {
				return err
			}
			view := newStatusView(st)
			if asJSON {
				return writeJSON(c.OutOrStdout(), view)
			}
			printStatus(c.OutOrStdout(), view)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func newExecCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "exec NAME HOST -- CMD [ARGS...]",
		Short: "Run a command inside a host of a test-bed (its network namespace and cgroups)",
		Long: `Run CMD inside HOST: in its network namespace and its cgroups (CPU quota, disk caps).
Standard input, output, error and the exit status are the command's own (127 if it is
not found). The command sees WANLAB_TESTBED, WANLAB_HOST, WANLAB_ADDR_<HOST> (each
host's address, upper case, '-' as '_') and TMPDIR (the host's data directory,
/var/lib/wanlab/testbeds/NAME/HOST, on the disk its caps apply to) in its environment.`,
		Example: `  wanlab testbed exec wan-lan server -- iperf3 -s -D
  wanlab testbed exec wan-lan client -- sh -c 'iperf3 -c $WANLAB_ADDR_SERVER -t 5'`,
		Args: args(func(c *cobra.Command, a []string) error {
			if len(a) < 3 {
				return errors.New("give NAME HOST -- CMD [ARGS...]")
			}
			if c.ArgsLenAtDash() != 2 {
				return errors.New("put -- between HOST and the command")
			}
			return nil
		}),
		DisableFlagsInUseLine: true,
		RunE: func(c *cobra.Command, a []string) error {
			if err := testbed.CheckEnvironment(); err != nil {
				return err
			}
			err := testbed.Exec(a[0], a[1], a[2:])
			if errors.Is(err, testbed.ErrCommandNotFound) {
				return exitError{127, err}
			}
			return err
		},
	}
	return c
}

// newDaemonCmd is the background engine process that testbed up starts.
func newDaemonCmd() *cobra.Command {
	var source string
	var owner int
	c := &cobra.Command{
		Use:    "daemon NAME",
		Short:  "Run a test-bed's engine (started by testbed up; not for direct use)",
		Hidden: true,
		Args:   args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			ready := os.NewFile(3, "ready")
			if ready == nil {
				return usagef("the daemon is started by wanlab testbed up")
			}
			// The pipe came without close-on-exec; the agents must not hold it
			// open, or testbed up would never see it close.
			unix.CloseOnExec(3)
			return testbed.RunDaemon(a[0], source, owner, ready)
		},
	}
	c.Flags().StringVar(&source, "source", "", "the scenario file the test-bed came from")
	c.Flags().IntVar(&owner, "owner", 0, "take the test-bed down when process `PID` ends")
	return c
}

// count writes n with its noun, in the plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func newSetCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "set NAME DIRECTION KEY=VALUE...",
		Short: "Change a live link of a running test-bed: rate, delay, jitter, loss, queue, MTU, routers, down",
		Long: `Change link directions of a running test-bed while it carries traffic. DIRECTION is a
link direction as testbed status lists it (a->b, "site cern up"), both directions of a
link (a<->b) or of a site's access ("site cern"). Settings are written as in a scenario:
rate=10Mbit delay=20ms jitter=1ms loss=0.5% queue=100 (packets) or queue=64KiB,
reorder=true, mtu=1400 (larger packets are answered with ICMP "fragmentation needed",
or dropped silently with blackhole=true), hops=NAME@ADDR,ADDR (the routers traceroute
sees; hops=none for none), down=true or down=false; those not given stay as they are.
The engine applies the change between two packets: packets already on the link keep
their timing and none is dropped by the change; the new queue limit, loss, MTU and
down apply to packets that arrive after it. Each change is recorded in the test-bed's
state (and by a run or wanlab serve as a link event). A scenario's events: make the same
changes at set times (docs/scenario.md).`,
		Example: `  wanlab testbed set wan a->b rate=2Mbit
  wanlab testbed set wan a<->b delay=150ms loss=1%
  wanlab testbed set grid "site cern" rate=100Mbit
  wanlab testbed set grid "site taipei" delay=175ms hops=geant@192.0.2.1,asnet@192.0.2.9
  wanlab testbed set wan a->b mtu=1280 blackhole=true
  wanlab testbed set wan a<->b down=true`,
		Args: args(cobra.MinimumNArgs(3)),
		RunE: func(c *cobra.Command, a []string) error {
			// Settings that could not apply to any link are a usage error.
			if _, err := scenario.Change(scenario.Direction{MTU: scenario.MinMTU, Rate: scenario.MaxRate}, a[2:]); err != nil {
				return usageError{err}
			}
			if err := testbed.CheckEnvironment(); err != nil {
				return err
			}
			changed, err := testbed.Set(a[0], testbed.SetRequest{Select: a[1], Settings: a[2:]})
			if err != nil {
				return err
			}
			view := planView{Name: a[0]}
			for _, d := range changed {
				view.Links = append(view.Links, newDirView(d))
			}
			if asJSON {
				return writeJSON(c.OutOrStdout(), view.Links)
			}
			printPlan(c.OutOrStdout(), view)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the new settings as JSON")
	return c
}
