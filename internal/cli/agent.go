package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

func newAgentCmd() *cobra.Command {
	var (
		host, socket string
		maxDuration  time.Duration
		maxStreams   int
		maxRate      string
		diskCapped   bool
	)
	c := &cobra.Command{
		Use:   "agent --socket PATH",
		Short: "Run the measurement agent of a host (testbed up starts one in every host)",
		Long: `Run the agent that carries out measurements on this host at a controller's request.
In an emulated test-bed, testbed up starts one inside every host, listening on
/run/wanlab/NAME/agents/HOST.sock. It runs nothing but wanlab's own workloads, serves any
number of tests at once, and refuses a test over its limits, naming the limit.`,
		Example: `  wanlab agent --host server --socket /tmp/agent.sock --max-streams 64`,
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			if socket == "" {
				return usagef("give --socket PATH")
			}
			rate, err := units.ParseRate(maxRate)
			if err != nil {
				return usagef("--max-rate: %v", err)
			}
			if maxDuration <= 0 || maxStreams < 1 {
				return usagef("--max-duration and --max-streams must be positive")
			}
			if host == "" {
				host, _ = os.Hostname()
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			limits := throughput.DefaultLimits
			limits.MaxDuration, limits.MaxStreams, limits.MaxRate = maxDuration, maxStreams, float64(rate)
			srv := &agent.Server{Host: host, Version: Version, Limits: limits, DiskCapped: diskCapped}
			fmt.Fprintf(c.ErrOrStderr(), "wanlab agent %s: listening on %s\n", host, socket)
			return srv.Serve(ctx, socket)
		},
	}
	c.Flags().StringVar(&host, "host", "", "the host's name, as reported to controllers (default: hostname)")
	c.Flags().StringVar(&socket, "socket", "", "Unix socket to listen on")
	c.Flags().DurationVar(&maxDuration, "max-duration", throughput.DefaultLimits.MaxDuration, "refuse tests longer than this")
	c.Flags().IntVar(&maxStreams, "max-streams", throughput.DefaultLimits.MaxStreams, "refuse tests with more streams")
	c.Flags().StringVar(&maxRate, "max-rate", "10Gbit", "refuse UDP tests faster than this")
	c.Flags().BoolVar(&diskCapped, "disk-capped", false, "the host's disk is rate-capped: transfers bypass the page cache and disk tests fsync")
	return c
}
