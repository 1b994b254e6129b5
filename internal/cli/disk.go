package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/units"
)

func newDiskCmd() *cobra.Command {
	var (
		where                 hosts
		host, size, block     string
		fsync, direct, asJSON bool
	)
	c := &cobra.Command{
		Use:   "disk --testbed NAME|--inventory FILE --host A",
		Short: "Sequential write and read rate of a file on a host, the I/O reference for transfers",
		Long: `Write a file of --size in --block writes, in the host agent's data folder, then read
it back after dropping it from the page cache, and report both rates. --fsync ends the write phase with fsync, so that it
measures the device and not the page cache; --direct bypasses the cache (O_DIRECT).
The hosts of an emulated test-bed share the machine's disk; on a host with a disk: cap
the write phase always ends with fsync, so that the cap is what is measured.`,
		Example: `  wanlab measure disk --testbed wan-lan --host server --size 1GB --fsync`,
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			z, err := units.ParseSize(size)
			if err != nil {
				return usagef("--size: %v", err)
			}
			b, err := units.ParseSize(block)
			if err != nil {
				return usagef("--block: %v", err)
			}
			if host == "" {
				return usagef("give --host")
			}
			ctx, eps, err := connect(c.Context(), where, host)
			if err != nil {
				return err
			}
			defer measure.CloseAll(eps)
			res, err := measure.Disk(ctx, eps[host], &agentpb.DiskRequest{Size: uint64(z), Block: uint32(b), Fsync: fsync, Direct: direct})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(c.OutOrStdout(), res)
			}
			w := c.OutOrStdout()
			fmt.Fprintf(w, "%s: %s in %s blocks under %s\n", host, units.Size(res.Bytes), units.Size(b), res.Dir)
			fmt.Fprintf(w, "write  %.1f MB/s (%.2f s%s)\n", res.WriteBytesPerSecond/1e6, res.WriteSeconds, map[bool]string{true: ", with fsync", false: ", into the page cache"}[res.Fsync || direct])
			fmt.Fprintf(w, "read   %.1f MB/s (%.2f s%s)\n", res.ReadBytesPerSecond/1e6, res.ReadSeconds, map[bool]string{true: ", from the device", false: ", possibly from the page cache"}[res.CacheDropped || direct])
			return nil
		},
	}
	where.flags(c)
	c.Flags().StringVar(&host, "host", "", "the host to test (required)")
	c.Flags().StringVar(&size, "size", "256MB", "file size")
	c.Flags().StringVar(&block, "block", "1MiB", "size of each write and read")
	c.Flags().BoolVar(&fsync, "fsync", false, "fsync at the end of the write phase")
	c.Flags().BoolVar(&direct, "direct", false, "use O_DIRECT")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
