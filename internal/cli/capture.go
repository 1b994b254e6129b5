package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/testbed"
)

func newCaptureCmd() *cobra.Command {
	var (
		file           string
		count, snaplen int
		duration       time.Duration
		asJSON         bool
	)
	c := &cobra.Command{
		Use:   "capture NAME LINK -w FILE",
		Short: "Capture a live link inside the engine into a pcapng file, the packets its model dropped included",
		Long: `Capture link directions of a running test-bed where the packet engine decides, into a
pcapng file that tcpdump, tshark and Wireshark read. LINK names directions as testbed set
does (a->b, a<->b, "site cern up", "site cern"); each is an interface of the file. A
packet is captured as it leaves a direction, at the time it does; a packet the link
model drops (queue full, loss, link down, larger than the MTU, TTL expired at a router)
is captured too, at the time it arrived, with a comment saying why (Wireshark shows it;
tshark -Y 'frame.comment contains "dropped"' lists them). It runs until --count
packets, --duration or Ctrl-C, and the file then ends cleanly; if the file cannot be
written (a full disk) the capture stops and what was written is kept. -w - writes to
standard output.`,
		Example: `  wanlab testbed capture wan a->b -w ab.pcapng --count 1000
  wanlab testbed capture grid "site taipei" -w taipei.pcapng --duration 30s --snaplen 128
  wanlab testbed capture wan a<->b -w - | tshark -r - -Y 'frame.comment contains "dropped"'`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(c *cobra.Command, a []string) error {
			switch {
			case file == "":
				return usagef("give the file to write: -w FILE (or -w - for standard output)")
			case count < 0 || duration < 0:
				return usagef("--count and --duration cannot be negative")
			case snaplen != 0 && (snaplen < 20 || snaplen > 65535):
				return usagef("--snaplen %d: give 20 to 65535 bytes (0: whole packets)", snaplen)
			}
			if err := testbed.CheckEnvironment(); err != nil {
				return err
			}
			var out io.Writer = c.OutOrStdout()
			if file != "-" {
				f, err := os.Create(file)
				if err != nil {
					return fmt.Errorf("creating the capture file: %w", err)
				}
				defer f.Close()
				out = f
			}
			ctx := c.Context()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			res, err := testbed.Capture(ctx, a[0], a[1], testbed.CaptureOptions{Count: count, Snaplen: snaplen}, out)
			if err != nil {
				return fmt.Errorf("capture of %s on %s into %s stopped: %w (%d bytes written are kept)", a[1], a[0], file, err, res.Bytes)
			}
			if f, ok := out.(*os.File); ok && f != os.Stdout {
				if err := f.Close(); err != nil {
					return fmt.Errorf("writing the capture file: %w", err)
				}
			}
			if asJSON {
				// Standard output is the capture's with -w -.
				w := c.OutOrStdout()
				if file == "-" {
					w = c.ErrOrStderr()
				}
				return writeJSON(w, res)
			}
			msg := fmt.Sprintf("captured %d packets of %s (%d dropped by the link model) into %s", res.Packets, a[1], res.Dropped, file)
			if res.Lost > 0 {
				msg += fmt.Sprintf("; %d more were missed: the file could not be written fast enough", res.Lost)
			}
			fmt.Fprintln(c.ErrOrStderr(), msg)
			return nil
		},
	}
	c.Flags().StringVarP(&file, "write", "w", "", "the pcapng `FILE` to write (- for standard output)")
	c.Flags().IntVarP(&count, "count", "c", 0, "stop after `N` packets (0: until --duration or Ctrl-C)")
	c.Flags().IntVar(&snaplen, "snaplen", 0, "capture at most `N` bytes of each packet (0: whole packets)")
	c.Flags().DurationVar(&duration, "duration", 0, "stop after this long (0: until --count or Ctrl-C)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON (on standard error with -w -)")
	return c
}
