package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/cgroup"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/units"
)

// defaultAgentData is an agent's data folder unless --data-dir says otherwise.
const defaultAgentData = "/var/lib/wanlab/agent"

func newAgentCmd() *cobra.Command {
	var (
		host, socket, dataDir string
		maxRate, maxBytes     string
		lim                   = limits.Default
		diskCapped            bool
	)
	c := &cobra.Command{
		Use:   "agent --socket PATH",
		Short: "Run the measurement agent of a host (testbed up starts one in every host)",
		Long: `Run the agent that carries out measurements on this host at a controller's request.
In an emulated test-bed, testbed up starts one inside every host, listening on
/run/wanlab/NAME/sockets/HOST.sock. It runs nothing but wanlab's own workloads, keeps
every file it makes or receives in its data folder (it names them itself: no request
carries a path), serves several tests at once, and refuses a request over its limits,
naming the limit. The socket is mode 0600 and only root or the agent's own user may
connect. See docs/security.md.`,
		Example: `  wanlab agent --host server --socket /tmp/agent.sock --data-dir /var/lib/wanlab/agent --max-streams 64`,
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			if socket == "" {
				return usagef("give --socket PATH")
			}
			rate, err := units.ParseRate(maxRate)
			if err != nil {
				return usagef("--max-rate: %v", err)
			}
			size, err := units.ParseSize(maxBytes)
			if err != nil {
				return usagef("--max-bytes: %v", err)
			}
			lim.MaxRate, lim.MaxBytes = float64(rate), int64(size)
			if err := lim.Validate(); err != nil {
				return usagef("limits: %v", err)
			}
			if host == "" {
				host, _ = os.Hostname()
			}
			data, err := datadir.Open(dataDir)
			if err != nil {
				return fmt.Errorf("agent's data folder: %w", err)
			}
			defer data.Close()
			ctx := c.Context()
			srv := &agent.Server{Host: host, Version: Version, Limits: lim, DiskCapped: diskCapped, Data: data, HostCPU: ownCgroupCPU()}
			fmt.Fprintf(c.ErrOrStderr(), "wanlab agent %s: listening on %s, data folder %s\n", host, socket, data.Path())
			return srv.ServeSocket(ctx, socket)
		},
	}
	c.Flags().StringVar(&host, "host", "", "the host's name, as reported to controllers (default: hostname)")
	c.Flags().StringVar(&socket, "socket", "", "Unix socket to listen on")
	c.Flags().StringVar(&dataDir, "data-dir", defaultAgentData, "the agent's own folder for the files it makes, receives and sends (made 0700; refused if another user could change it)")
	c.Flags().DurationVar(&lim.MaxDuration, "max-duration", limits.Default.MaxDuration, "refuse tests longer than this")
	c.Flags().IntVar(&lim.MaxStreams, "max-streams", limits.Default.MaxStreams, "refuse tests with more streams, and more streams than this at once")
	c.Flags().StringVar(&maxRate, "max-rate", "10Gbit", "refuse UDP tests faster than this")
	c.Flags().StringVar(&maxBytes, "max-bytes", "1TiB", "refuse tests that move or store more than this")
	c.Flags().IntVar(&lim.MaxConnections, "max-connections", limits.Default.MaxConnections, "refuse workload roles with more connections, clients or workers")
	c.Flags().IntVar(&lim.MaxTests, "max-tests", limits.Default.MaxTests, "refuse a test while this many run")
	c.Flags().BoolVar(&diskCapped, "disk-capped", false, "the host's disk is rate-capped: transfers bypass the page cache and disk tests fsync")
	return c
}

// ownCgroupCPU reads the CPU used by the cgroup this process is in (the
// test-bed host's), or nil where cgroups cannot say.
func ownCgroupCPU() func() (time.Duration, error) {
	cg, err := cgroup.Detect()
	if err != nil || cg.Version == cgroup.None {
		return nil
	}
	group, err := cg.Own()
	if err != nil {
		return nil
	}
	return func() (time.Duration, error) { return cg.Usage(group) }
}
