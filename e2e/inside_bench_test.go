package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
)

// BenchmarkBandwidthEstimates measures the error of measure capacity and
// measure available against the test-bed's truth: the configured rate of
// the narrow link, and that rate less the engine's own Poisson cross
// traffic on it, across rates (1 Mbit/s to 1 Gbit/s), round trips (4 and
// 50 ms) and loads (0, 30 and 70% of the link). docs/benchmarks.md, "See
// inside".
func BenchmarkBandwidthEstimates(b *testing.B) {
	name := up(b, `name: bench-bw
hosts: {a1: {}, a2: {}, a3: {}, a4: {}, a5: {}, z: {}}
links:
  - {between: [a1, z], rate: 1Mbit, delay: 2ms, queue: 64KB}
  - {between: [a2, z], rate: 10Mbit, delay: 2ms}
  - {between: [a3, z], rate: 100Mbit, delay: 2ms}
  - {between: [a4, z], rate: 1Gbit, delay: 2ms}
  - {between: [a5, z], rate: 100Mbit, delay: 25ms}
`)
	paths := []struct {
		host  string
		rate  float64
		rtt   string
		label string
	}{
		{"a1", 1e6, "4 ms", "1 Mbit/s"}, {"a2", 10e6, "4 ms", "10 Mbit/s"}, {"a3", 100e6, "4 ms", "100 Mbit/s"},
		{"a4", 1e9, "4 ms", "1 Gbit/s"}, {"a5", 100e6, "50 ms", "100 Mbit/s"},
	}
	estimate := func(verb, from string, out any) {
		r := wanlab(b, "measure", verb, "--testbed", name, "--from", from, "--to", "z", "--json")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), out) != nil {
			b.Fatalf("measure %s from %s: exit %d: %s", verb, from, r.code, r.stderr)
		}
	}
	var worstCap100, worstCap1G, worstAvail float64
	for _, p := range paths {
		for _, load := range []float64{0, 0.3, 0.7} {
			cross := "none"
			if load > 0 {
				cross = fmt.Sprintf("%.0fkbit", load*p.rate/1e3)
			}
			if r := wanlab(b, "testbed", "set", name, p.host+"->z", "cross="+cross); r.code != 0 {
				b.Fatalf("testbed set: %s", r.stderr)
			}
			var c measure.CapacityResult
			var a measure.AvailableResult
			estimate("capacity", p.host, &c)
			estimate("available", p.host, &a)
			truth := p.rate * (1 - load)
			capErr := 100 * (c.CapacityBPS - p.rate) / p.rate
			availErr := 100 * (a.AvailableBPS - truth) / truth
			b.Logf("%-10s rtt %-5s load %2.0f%%: capacity %8.4g (%+5.1f%%, pair mode %.4g, %.1f s), available %8.4g of %8.4g (%+5.1f%%, [%.4g, %.4g], %d fleets, %.1f s, %.0f kB)",
				p.label, p.rtt, 100*load, c.CapacityBPS, capErr, c.PairModeBPS, c.Seconds, a.AvailableBPS, truth, availErr, a.LowBPS, a.HighBPS, len(a.Fleets), a.Seconds, float64(a.Bytes)/1e3)
			if p.rate <= 100e6 {
				worstCap100 = math.Max(worstCap100, math.Abs(capErr))
			} else {
				worstCap1G = math.Max(worstCap1G, math.Abs(capErr))
			}
			worstAvail = math.Max(worstAvail, math.Abs(availErr))
		}
	}
	b.ReportMetric(worstCap100, "capacity_err_to_100M_%")
	b.ReportMetric(worstCap1G, "capacity_err_1G_%")
	b.ReportMetric(worstAvail, "available_err_%")
}

// BenchmarkWatch measures what wanlab watch costs and how well it keeps
// its interval: 100 TCP connections (50 each way) between two hosts at
// once, watched at 10 ms for 5 s, while they fill a 100 Mbit/s link both
// ways. docs/benchmarks.md, "See inside".
func BenchmarkWatch(b *testing.B) {
	name := up(b, pairBed("bench-watch", "rate: 100Mbit", "delay: 5ms"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	load := exec.CommandContext(ctx, wanlabBin, "measure", "throughput", "--testbed", name, "--from", "a", "--to", "b", "-t", "9", "--streams", "50", "--bidir")
	if err := load.Start(); err != nil {
		b.Fatal(err)
	}
	defer load.Wait()
	time.Sleep(2 * time.Second)
	var out bytes.Buffer
	watch := exec.CommandContext(ctx, wanlabBin, "watch", "--testbed", name, "--host", "a", "--interval", "10ms", "--duration", "5s", "--json")
	watch.Stdout = &out
	if err := watch.Run(); err != nil {
		b.Fatal(err)
	}
	var res measure.WatchResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		b.Fatal(err)
	}
	s := res.Summary
	b.Logf("%d connections at 10 ms for 5 s: %d samples, %d intervals missed, achieved interval p50 %.2f / p99 %.2f / max %.2f ms, %.2f%% of a core (%s)",
		s.Conns, s.Ticks, s.Missed, s.IntervalP50, s.IntervalP99, s.IntervalMax, s.CPUPercent, s.Priority)
	b.ReportMetric(float64(s.Conns), "connections")
	b.ReportMetric(s.CPUPercent, "cpu_%")
	b.ReportMetric(float64(s.Missed), "missed")
	b.ReportMetric(s.IntervalP99, "interval_p99_ms")
}
