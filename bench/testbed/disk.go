package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// diskCaps checks hosts' disk caps with dd and wanlab measure disk, and
// what capped disks do to transfers.
func diskCaps() error {
	fmt.Println("### Disk caps")
	fmt.Println()
	b, err := upBed("name: bench-dd\nhosts:\n  a: {disk: {read: 4MB/s, write: 4MB/s}}\n")
	if err != nil {
		return err
	}
	ctx := context.Background()
	write, werr := b.runner().DD(ctx, "a", `if=/dev/zero of="$TMPDIR/f" bs=1M count=12 oflag=direct`)
	read, rerr := b.runner().DD(ctx, "a", `if="$TMPDIR/f" of=/dev/null bs=1M iflag=direct`)
	var disk agentpb.DiskResult
	out, derr := exec.Command(*wanlabBin, "measure", "disk", "--json", "--testbed", b.name, "--host", "a", "--size", "24MB").Output()
	if derr == nil {
		derr = json.Unmarshal(out, &disk)
	}
	b.down()
	if err := errors.Join(werr, rerr, derr); err != nil {
		return err
	}
	fmt.Println("| host capped at 4 MB/s each way | write | read |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| dd, O_DIRECT, 12 MiB | %.2f MB/s | %.2f MB/s |\n", write/1e6, read/1e6)
	fmt.Printf("| wanlab measure disk, 24 MB (fsync %v) | %.2f MB/s | %.2f MB/s |\n", disk.Fsync, disk.WriteBytesPerSecond/1e6, disk.ReadBytesPerSecond/1e6)
	fmt.Println()

	b, err = upBed(`name: bench-dt
hosts:
  c: {site: c, sysctl: &reno {net.ipv4.tcp_congestion_control: reno}}
  u: {site: u, sysctl: *reno}
  d: {site: d, sysctl: *reno, disk: {read: 53MB/s, write: 31MB/s}}
  s: {site: s, sysctl: *reno, disk: {read: 3MB/s, write: 5MB/s}}
sites:
  c: {rate: 1024Mbit, delay: 5ms}
  u: {rate: 155Mbit, delay: 5ms}
  d: {rate: 155Mbit, delay: 5ms}
  s: {rate: 32Mbit, delay: 5ms}
`)
	if err != nil {
		return err
	}
	defer b.down()
	fmt.Println("Transfers with 8 streams, Reno, 5 ms each way per site link: `u` and `d` at 155 Mbit/s, `d`'s disk capped at 53 MB/s read and 31 MB/s write; `s` (Bologna) at 32 Mbit/s with a 3 MB/s read cap. Three runs each, Mbit/s.")
	fmt.Println()
	fmt.Println("| transfer | size | runs | what limits it |")
	fmt.Println("|---|---|---|---|")
	for _, c := range []struct{ from, to, size, limit string }{
		{"u", "c", "60MB", "the path (149.6 Mbit/s TCP ceiling)"},
		{"d", "c", "60MB", "the path; d's disk reads 53 MB/s"},
		{"c", "u", "60MB", "the path"},
		{"c", "d", "60MB", "the path; d's disk writes 31 MB/s"},
		{"s", "c", "24MB", "s's disk: 3 MB/s = 24 Mbit/s"},
	} {
		var rates []float64
		for range 3 {
			out, err := exec.Command(*wanlabBin, "measure", "transfer", "--json", "--testbed", b.name, "--from", c.from, "--to", c.to, "--size", c.size, "-P", "8").Output()
			if err != nil {
				return fmt.Errorf("transfer %s -> %s: %w: %s", c.from, c.to, err, out)
			}
			var r transfer.Summary
			if err := json.Unmarshal(out, &r); err != nil {
				return err
			}
			rates = append(rates, r.There.BitsPerSecond/1e6)
		}
		slices.Sort(rates)
		fmt.Printf("| %s -> %s | %s | %.1f, %.1f, %.1f | %s |\n", c.from, c.to, c.size, rates[0], rates[1], rates[2], c.limit)
	}
	fmt.Println()
	return nil
}
