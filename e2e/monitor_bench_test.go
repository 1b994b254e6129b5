package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// BenchmarkServe20Hosts measures wanlab serve's own cost while it monitors
// a 20-host emulated mesh (four sites of five) with per-second probes
// between every ordered pair (380 paths, summarised every 30 s), archived
// in SQLite: the service process's CPU (% of one core) and resident
// memory over a minute, after every path has reported once. Targets:
// under 5% of a core and 200 MB. It also counts the alerts of that quiet
// minute (none expected) and the paths with fresh results.
//
// make bench runs it: go test -run '^$' -bench Serve20Hosts -benchtime 1x ./e2e
func BenchmarkServe20Hosts(b *testing.B) {
	testsupport.NeedRoot(b)
	dir := b.TempDir()
	var hosts, names []string
	for i := range 20 {
		name := fmt.Sprintf("h%02d", i+1)
		names = append(names, name)
		hosts = append(hosts, fmt.Sprintf("  %s: {site: s%d}", name, i/5+1))
	}
	bed := "name: mon20\nhosts:\n" + strings.Join(hosts, "\n") + `
sites:
  s1: {rate: 100Mbit, delay: 2ms}
  s2: {rate: 100Mbit, delay: 10ms}
  s3: {rate: 50Mbit, delay: 40ms}
  s4: {rate: 20Mbit, delay: 80ms}
`
	os.WriteFile(filepath.Join(dir, "mon20.yaml"), []byte(bed), 0o644)
	cfg := filepath.Join(dir, "monitor.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`testbed: mon20.yaml
groups:
  all: [%s]
tests:
  - {name: latency, type: probe, group: all, rate: 1/s, summary: 30s}
`, strings.Join(names, ", "))), 0o644)
	for b.Loop() {
		s := startServe(b, "--config", cfg, "--db", filepath.Join(dir, "monitor.db"), "--buffer", filepath.Join(dir, "buffer"))
		if !waitFor(3*time.Minute, func() bool { return s.status().Tests["probe ok"] >= 380 }) {
			b.Fatalf("not every path reported in 3 minutes: %+v", s.status().Tests)
		}
		pid := s.cmd.Process.Pid
		st0, _ := proc.Read(pid)
		t0 := time.Now()
		time.Sleep(time.Minute)
		st1, _ := proc.Read(pid)
		cpu := 100 * (st1.CPU - st0.CPU).Seconds() / time.Since(t0).Seconds()
		rss := float64(proc.RSS(pid)) / (1 << 20)
		fresh := 0
		for _, p := range s.paths() {
			if p.State == "ok" {
				fresh++
			}
		}
		alerts := len(s.alerts())
		s.stop()
		assertNothingLeft(b, "mon20")
		b.ReportMetric(cpu, "cpu_%_of_core")
		b.ReportMetric(rss, "rss_MiB")
		b.ReportMetric(float64(fresh), "paths_ok")
		b.ReportMetric(float64(alerts), "alerts")
	}
}
