package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/testbed"
)

// A link direction that follows mahimahi's delivery opportunities carries
// what they allow: one 1504-byte opportunity a millisecond is 12.03
// Mbit/s of IP packets, and iperf3's TCP gets that less its headers.
func TestTraceDrivenLink(t *testing.T) {
	if err := crosscheck.Require("iperf3"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var b strings.Builder
	for ms := 1; ms <= 1000; ms++ {
		fmt.Fprintln(&b, ms)
	}
	cell := filepath.Join(dir, "cell.down")
	os.WriteFile(cell, []byte(b.String()), 0o644)
	name := up(t, `name: e2e-trace
hosts: {a: {site: x}, b: {site: y}}
sites:
  x: {rate: 100Mbit, delay: 5ms}
  y: {delay: 5ms, down: {trace: {mahimahi: `+cell+`}}, up: {rate: 100Mbit}}
`)
	st := status(t, name)
	ip := iperf(t, name, crosscheck.IperfOptions{Client: "a", Server: "b", ServerAddr: st.addr("b"), Duration: 4 * time.Second, Omit: time.Second})
	want := 1000 * 1504 * 8.0 * 1448 / 1500 / 1e6
	if got := ip.ReceivedBPS / 1e6; math.Abs(got-want)/want > 0.05 {
		t.Errorf("iperf3 got %.2f Mbit/s through a mahimahi trace of 12.03 Mbit/s, want %.2f (its TCP payload)", got, want)
	}
}

// BenchmarkTraceReplay measures how closely a bandwidth trace is replayed:
// a CSV trace alternating between a rate and half of it every second, an
// iperf3 UDP flood above it, and the engine's byte counter of the
// direction read each second against the trace's bytes over the same
// engine time. Datagrams are smaller at low rates, so that counting whole
// packets at each end of a second (the counter moves a packet at a time)
// weighs little. docs/benchmarks.md, "Paths that change".
func BenchmarkTraceReplay(b *testing.B) {
	if err := crosscheck.Require("iperf3"); err != nil {
		b.Fatal(err)
	}
	for _, mbit := range []float64{1, 10, 100} {
		b.Run(fmt.Sprintf("%gMbit", mbit), func(b *testing.B) {
			dir := b.TempDir()
			csv := filepath.Join(dir, "bw.csv")
			os.WriteFile(csv, []byte(fmt.Sprintf("0,%gMbit\n1,%gMbit\n", mbit, mbit/2)), 0o644)
			name := up(b, fmt.Sprintf(`name: bench-trace
hosts: {a: {site: x}, b: {site: y}}
sites:
  x: {rate: 1000Mbit, delay: 2ms}
  y: {delay: 2ms, down: {trace: {rate: %s}, queue: 200}, up: {rate: 1000Mbit}}
`, csv))
			rate := func(t float64) float64 { // bit/s at engine time t
				if int(math.Floor(t))%2 == 0 {
					return mbit * 1e6
				}
				return mbit * 1e6 / 2
			}
			addr := status(b, name).addr("b")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go runner(name).Iperf(ctx, crosscheck.IperfOptions{Client: "a", Server: "b", ServerAddr: addr, UDP: true, Rate: fmt.Sprintf("%gM", mbit*1.5), Length: min(1400, int(mbit*500)), Duration: 12 * time.Second})
			time.Sleep(2 * time.Second)
			reader := testbed.NewStatsReader(name)
			var errs []float64
			var lastBytes uint64
			var lastUp float64
			for i := 0; i < 9; i++ {
				st, err := reader.Read()
				if err != nil {
					b.Fatal(err)
				}
				var bytes uint64
				for _, d := range st.Dirs {
					if d.Name == "site y down" {
						bytes = d.Bytes
					}
				}
				if i > 0 {
					want := 0.0
					for t := lastUp; t < st.Uptime; t += 0.0005 {
						want += rate(t) * math.Min(0.0005, st.Uptime-t) / 8
					}
					got := float64(bytes - lastBytes)
					errs = append(errs, 100*(got-want)/want)
				}
				lastBytes, lastUp = bytes, st.Uptime
				time.Sleep(time.Second)
			}
			var sum, worst float64
			for _, e := range errs {
				sum += math.Abs(e)
				worst = math.Max(worst, math.Abs(e))
			}
			b.ReportMetric(sum/float64(len(errs)), "mean_err_%")
			b.ReportMetric(worst, "max_err_%")
			b.Logf("%g Mbit/s: per-second errors %.2f%%", mbit, errs)
		})
	}
}

// BenchmarkTimedChange measures how punctual a scenario's timed changes
// are: a probe every millisecond from a to b while the delay of a->b
// alternates between 10 and 20 ms every 200 ms. The engine records when
// each change was due and when it took effect; the probes bound it from
// outside: the change took effect after the last probe that still saw
// the old delay was sent and before the first that saw the new one.
func BenchmarkTimedChange(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "bench-timed.yaml")
	var ev strings.Builder
	for i := 1; i <= 20; i++ {
		d := "20ms"
		if i%2 == 0 {
			d = "10ms"
		}
		fmt.Fprintf(&ev, "      - {at: %dms, link: a->b, set: {delay: %s}}\n", i*200, d)
	}
	os.WriteFile(path, []byte(`name: bench-timed
hosts: {a: {}, b: {}}
links:
  - between: [a, b]
    rate: 100Mbit
    delay: 10ms
workloads:
  - probe: {from: a, to: b, count: 4400, interval: 1ms}
    events:
`+ev.String()), 0o644)
	db := filepath.Join(dir, "run.db")
	if r := wanlab(b, "run", path, "--db", db); r.code != 0 {
		b.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	q := func(sql string) string {
		out, err := exec.Command("sqlite3", db, sql).Output()
		if err != nil {
			b.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	lateRE := regexp.MustCompile(`\(([\d.]+) ms after it was due\)`)
	var engineMax float64
	var applied []float64
	for _, line := range strings.Split(q(`SELECT printf('%.6f', t) || ' ' || message FROM events WHERE level = 'link' AND message LIKE '%after it was due%' ORDER BY t`), "\n") {
		at, msg, _ := strings.Cut(line, " ")
		m := lateRE.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		late, _ := strconv.ParseFloat(m[1], 64)
		engineMax = math.Max(engineMax, late)
		t, _ := strconv.ParseFloat(at, 64)
		applied = append(applied, t)
	}
	// The probes: send time and one-way delay.
	type probe struct{ t, d float64 }
	var probes []probe
	for _, line := range strings.Split(q(`SELECT printf('%.6f %.6f', t, value) FROM samples WHERE metric = 'delay.oneway' AND subject = 'a->b' ORDER BY t`), "\n") {
		var p probe
		fmt.Sscan(line, &p.t, &p.d)
		probes = append(probes, p)
	}
	// For each change that lengthens the delay, the probes sent just before
	// and just after it: the first saw the old delay, the second the new.
	// (A shorter delay shows gradually: packets never overtake those sent
	// before them.)
	var worst float64
	var bracketed int
	for _, tc := range applied {
		i := 1
		for i < len(probes) && probes[i].t <= tc {
			i++
		}
		if i >= len(probes) || probes[i].d-probes[i-1].d < 0.005 {
			continue
		}
		bracketed++
		worst = math.Max(worst, (probes[i].t-probes[i-1].t)*1000)
		// Nor did a probe before the change see the new delay.
		if probes[i-1].d > 0.015 {
			b.Errorf("the probe sent at %.6f, before the change at %.6f, saw the new delay", probes[i-1].t, tc)
		}
	}
	b.ReportMetric(float64(bracketed), "bracketed")
	b.ReportMetric(worst, "probe_bracket_max_ms")
	b.ReportMetric(float64(len(applied)), "changes")
	b.ReportMetric(engineMax*1000, "engine_max_late_us")
}

// BenchmarkCrossTraffic measures what cross traffic leaves a test flow:
// iperf3 TCP through 20 Mbit/s carrying Poisson cross traffic at X% of it
// should get (100-X)%, counted on the wire (1500-byte packets for 1448 of payload).
func BenchmarkCrossTraffic(b *testing.B) {
	if err := crosscheck.Require("iperf3"); err != nil {
		b.Fatal(err)
	}
	name := up(b, `name: bench-cross
hosts: {a: {site: x}, b: {site: y}}
sites:
  x: {rate: 1000Mbit, delay: 5ms}
  y: {rate: 20Mbit, delay: 10ms}
`)
	addr := status(b, name).addr("b")
	var worst float64
	for _, pct := range []int{10, 30, 50, 70} {
		if r := wanlab(b, "testbed", "set", name, "site y down", fmt.Sprintf("cross=%gMbit", 20*float64(pct)/100)); r.code != 0 {
			b.Fatal(r.stderr)
		}
		ip := iperf(b, name, crosscheck.IperfOptions{Client: "a", Server: "b", ServerAddr: addr, Duration: 8 * time.Second, Omit: 2 * time.Second})
		share := 100 * ip.ReceivedBPS * 1500 / 1448 / 20e6
		b.Logf("cross traffic %d%%: the test flow got %.1f%% of the link (want %d%%)", pct, share, 100-pct)
		worst = math.Max(worst, math.Abs(share-float64(100-pct)))
	}
	b.ReportMetric(worst, "max_err_points")
}
