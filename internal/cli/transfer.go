package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

func newTransferCmd() *cobra.Command {
	var (
		pair                                hostPair
		file, size, window, block           string
		streams                             int
		compress, roundtrip, asJSON, serial bool
		corruptAt                           int64
	)
	c := &cobra.Command{
		Use:   "transfer --testbed NAME|--inventory FILE --from A --to B --file NAME | --size SIZE",
		Short: "Disk-to-disk file transfer over parallel streams, with an end-to-end checksum",
		Long: `Send a file from A's disk to B's disk over --streams TCP streams (each a contiguous part
of the file, as bbFTP does), optionally compressing each block with zstd, and check
with SHA-256 at both ends that no bit was lost (checksum_ok). --file NAME sends a file
that was put in A's data folder (TMPDIR of testbed exec on A; the agent sends nothing
outside it); --size has A's agent generate one (half random, half repetitive, so compression has
something to gain). --roundtrip sends the received copy back and checks it against the
original, as in the ALICE stress tests. A file that changes while being sent, a full
disk or a host that vanishes is an error naming it; a checksum mismatch exits 1.
--inject-corruption OFFSET flips one byte at the receiver before the check: a self-test
that the check catches it.`,
		Example: `  wanlab measure transfer --testbed wan-lan --from lanclient --to server --size 200MB --streams 8
  wanlab measure transfer --testbed wan-lan --from lanclient --to server --size 50MB --compress --roundtrip --json`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			spec := transfer.Options{Spec: transfer.Spec{Streams: streams, Compress: compress, Serial: serial}, File: file, Roundtrip: roundtrip, CorruptAt: corruptAt}
			if (file == "") == (size == "") {
				return usagef("give --file or --size")
			}
			if file != "" {
				if err := datadir.ValidName(file); err != nil {
					return usagef("--file: %v: name a file in the sending host's data folder", err)
				}
			}
			if size != "" {
				z, err := units.ParseSize(size)
				if err != nil || z == 0 {
					return usagef("--size %q: give a size such as 1.6GB", size)
				}
				spec.Size = int64(z)
			}
			b, err := units.ParseSize(block)
			if err != nil {
				return usagef("--block: %v", err)
			}
			spec.Block = int(b)
			if window != "" {
				w, err := units.ParseSize(window)
				if err != nil {
					return usagef("--window: %v", err)
				}
				spec.Window = int(w)
			}
			if err := spec.Spec.Validate(limits.Default); err != nil {
				return usagef("%v", err)
			}
			return pair.session(c.Context(), func(ctx context.Context, from, to measure.Endpoint) error {
				legs := 1
				if spec.Roundtrip {
					legs = 2
				}
				prog := newProgress(c.ErrOrStderr(), legs, "transfer")
				spec.OnLeg = func(from, to string) { prog.step(from + " -> " + to) }
				res, err := transfer.Measure(ctx, from, to, spec)
				prog.done()
				return report(c.OutOrStdout(), asJSON, res, printTransfer, err)
			})
		},
	}
	pair.flags(c)
	c.Flags().StringVar(&file, "file", "", "the `NAME` of a file in the sending host's data folder to send")
	c.Flags().StringVar(&size, "size", "", "have the sender generate a file of this size, e.g. 1.6GB")
	c.Flags().IntVarP(&streams, "streams", "P", 1, "parallel streams")
	c.Flags().StringVarP(&window, "window", "w", "", "socket buffer size (default: autotuning)")
	c.Flags().StringVar(&block, "block", units.Size(transfer.DefaultBlock).String(), "bytes read, sent and written at a time")
	c.Flags().BoolVar(&compress, "compress", false, "compress each block with zstd")
	c.Flags().BoolVar(&serial, "serial", false, "alternate reading a block and sending it, with no read-ahead (GridFTP's pattern of 2004)")
	c.Flags().BoolVar(&roundtrip, "roundtrip", false, "send the copy back and check it against the original")
	c.Flags().Int64Var(&corruptAt, "inject-corruption", -1, "self-test: flip the byte at this offset at the receiver before the checksum")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func printTransfer(w io.Writer, r *transfer.Summary) {
	for _, l := range []*transfer.Leg{r.There, r.Back} {
		if l == nil || l.Seconds == 0 {
			continue
		}
		fmt.Fprintf(w, "%s -> %s: %s in %.2f s over %d streams: %s", l.From, l.To, units.Size(l.Bytes), l.Seconds, r.Streams, units.Rate(l.BitsPerSecond))
		if r.Compress {
			fmt.Fprintf(w, ", %s on the wire (compression %.2fx)", units.Size(l.WireBytes), l.CompressionRatio)
		}
		ok := "ok"
		if !l.ChecksumOK {
			ok = "MISMATCH"
		}
		fmt.Fprintf(w, "\n  sha256 %s, checksum %s; CPU %% of one core: sender %s, receiver %s\n", l.SHA256Received, ok,
			cpuText(l.CPU.SenderHost, l.CPU.SenderAgent), cpuText(l.CPU.ReceiverHost, l.CPU.ReceiverAgent))
		var parts []string
		for _, n := range l.StreamBytes {
			parts = append(parts, fmt.Sprintf("%.0f%%", 100*float64(n)/float64(max(l.Bytes, 1))))
		}
		if len(parts) > 1 {
			fmt.Fprintf(w, "  shares per stream: %v\n", parts)
		}
	}
	if r.Partial {
		fmt.Fprintf(w, "FAILED: %s\n", r.Error)
	}
}
