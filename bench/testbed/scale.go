package main

// Many links and hosts: aggregate throughput, bring-up time, many streams.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
)

// aggregate runs four pairs of hosts at once, each on its own 1 Gbit/s link.
func aggregate() error {
	var y strings.Builder
	y.WriteString("name: bench-agg\nhosts:\n")
	for i := range 4 {
		fmt.Fprintf(&y, "  s%d: {sysctl: %s}\n  c%d: {sysctl: %s}\n", i, bigBuffers, i, bigBuffers)
	}
	y.WriteString("links:\n")
	for i := range 4 {
		fmt.Fprintf(&y, "  - between: [c%d, s%d]\n    rate: 1Gbit\n    delay: 5ms\n", i, i)
	}
	b, err := upBed(y.String())
	if err != nil {
		return err
	}
	defer b.down()
	before, err := b.status()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	results := make([]crosscheck.IperfResult, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.runner().Iperf(context.Background(), crosscheck.IperfOptions{
				Client: fmt.Sprintf("c%d", i), Server: fmt.Sprintf("s%d", i), ServerAddr: b.addr(fmt.Sprintf("s%d", i)),
				Port: 5210 + i, Duration: duration(), Congestion: "cubic",
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	after, err := b.status()
	if err != nil {
		return err
	}
	var total float64
	var each []string
	for _, r := range results {
		total += r.ReceivedBPS
		each = append(each, fmt.Sprintf("%.0f", r.ReceivedBPS/1e6))
	}
	cpu := after.Engine.CPUSeconds - before.Engine.CPUSeconds
	fmt.Println("### Aggregate: four 1 Gbit/s links busy at once")
	fmt.Println()
	fmt.Println("Four pairs of hosts, each pair on its own 1 Gbit/s, 5 ms link, one iperf3 TCP stream (cubic) per pair, all at once; one engine thread and one writer thread.")
	fmt.Println()
	fmt.Println("| streams (Mbit/s) | total | engine CPU (cores) | drops outside model | lateness p99 |")
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| %s | %.0f Mbit/s | %.2f | %d | %.0f us |\n\n", strings.Join(each, ", "), total/1e6,
		cpu/duration().Seconds(), otherDrops(after), after.Engine.Lateness.P99us)
	return nil
}

// scale times a 50-host test-bed coming up and going down.
func scale() error {
	var y strings.Builder
	y.WriteString("name: bench-scale\nsites:\n")
	for s := range 5 {
		fmt.Fprintf(&y, "  site%d: {rate: 100Mbit, delay: %dms}\n", s, 5*(s+1))
	}
	y.WriteString("hosts:\n")
	for i := range 50 {
		fmt.Fprintf(&y, "  h%d: {site: site%d, cpus: 0.5}\n", i, i%5)
	}
	start := time.Now()
	b, err := upBed(y.String())
	if err != nil {
		return err
	}
	upTime := time.Since(start)
	start = time.Now()
	b.down()
	downTime := time.Since(start)
	left, _ := filepath.Glob("/run/netns/wanlab.bench-scale.*")
	fmt.Println("### Scale: 50 hosts at 5 sites, each with a CPU quota")
	fmt.Println()
	fmt.Println("| up | down | namespaces left |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| %.2f s | %.2f s | %d |\n\n", upTime.Seconds(), downTime.Seconds(), len(left))
	return nil
}

// manyStreams runs 128 streams into one receiver through a 1 Gbit/s link.
func manyStreams() error {
	b, err := upBed("name: bench-streams\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n    rate: 1Gbit\n    delay: 5ms\n")
	if err != nil {
		return err
	}
	defer b.down()
	w, err := b.measure("--from", "a", "--to", "b", "-t", fmt.Sprint(duration().Seconds()), "-P", "128")
	if err != nil {
		return err
	}
	var perStream, lo, hi uint64
	lo = math.MaxUint64
	for _, s := range w.End.Streams {
		perStream += s.Bytes
		lo, hi = min(lo, s.Bytes), max(hi, s.Bytes)
	}
	fmt.Println("### 128 streams to one receiver")
	fmt.Println()
	fmt.Println("| streams reported | received | sum of streams = total | smallest / largest stream | retransmits |")
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| %d | %.1f Mbit/s | %v | %.2f / %.2f MB | %d |\n\n", len(w.End.Streams), w.End.SumReceived.BitsPerSecond/1e6,
		perStream == w.End.SumReceived.Bytes, float64(lo)/1e6, float64(hi)/1e6, derefU(w.End.SumSent.Retransmits))
	return nil
}
