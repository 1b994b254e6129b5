package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
)

// BenchmarkTwinInventory twins a path between agents on real hosts (issue
// 35's --inventory source): two namespaces of the real-host lab, their
// agents over mutual TLS under the default policy, a 200 Mbit/s bottleneck
// toward b made by the kernel's tbf (its queue: 20 ms at the rate, plus
// its 64 KiB burst); the way back is the bare veth, as fast as the
// machine's CPUs. It reports the fitted rate and queue of a->b against
// the tbf's, and what the campaign measured.
//
// make bench runs it: go test -run '^$' -bench TwinInventory -benchtime 1x ./e2e
func BenchmarkTwinInventory(b *testing.B) {
	testsupport.NeedRoot(b)
	testsupport.Need(b, "iproute2")
	const rate, latency, burst = 200e6, 0.020, 64 << 10
	for range b.N {
		l := newLab(b, "a", "b")
		l.ip("link", "set", l.host("b").veth, "up")
		if out, err := exec.Command("tc", "qdisc", "add", "dev", l.host("b").veth, "root", "tbf", "rate", "200mbit", "burst", "64kb", "latency", "20ms").CombinedOutput(); err != nil {
			b.Fatalf("tc: %v: %s", err, out)
		}
		l.start("a")
		l.start("b")
		inv := l.inventory("ctl", "", "a", "b")
		out := filepath.Join(b.TempDir(), "twin.yaml")
		doc, stderr := runTwin(b, 5*time.Minute, "--inventory", inv, "--from", "a", "--to", "b", "-o", out, "--budget", "90s")
		b.Logf("campaign %.0f s, %d bytes\n%s", doc.Campaign.Seconds, doc.Campaign.Bytes, stderr)
		failed := 0
		for _, s := range doc.Campaign.Steps {
			if s.Error != "" || s.Skipped != "" {
				failed++
				b.Logf("step %s %s->%s: %s%s", s.Kind, s.From, s.To, s.Error, s.Skipped)
			}
		}
		f := doc.Forward
		queue := rate*latency/8 + burst
		b.Logf("a->b: rate %.4g bit/s (tbf %g), queue %d B (tbf about %.0f), loss %.3g, cross %.3g; b->a: rate %.4g bit/s",
			f.RateBPS, rate, f.QueueBytes, queue, f.Loss, f.CrossBPS, doc.Reverse.RateBPS)
		if f.RateBPS < 0.9*rate || f.RateBPS > 1.1*rate {
			b.Errorf("the twin's a->b rate %.4g bit/s: want within 10%% of the tbf's %g", f.RateBPS, rate)
		}
		b.ReportMetric(f.RateBPS/1e6, "rate_Mbit")
		b.ReportMetric(100*(float64(f.QueueBytes)/queue-1), "queue_error_pct")
		b.ReportMetric(doc.Campaign.Seconds, "campaign_s")
		b.ReportMetric(float64(failed), "steps_failed")
	}
}
