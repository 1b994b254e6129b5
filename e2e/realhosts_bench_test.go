package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/delay"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/endpoints"
	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/realhosts"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// BenchmarkRealHosts measures the targets of agents on real hosts, on a
// lab of namespaces joined by plain veths (no rate limit: the machine's
// CPUs are the bottleneck):
//   - throughput between two agents over TLS-controlled tests against
//     iperf3 on the same pair, in the same run (tls_vs_iperf3 >= 1 means
//     no cost);
//   - how soon a test starts: a fresh TLS connection to both agents, and a
//     one-byte throughput test through them (start_ms, median);
//   - an idle agent's CPU (% of a core over 10 s) and memory (RSS);
//   - 100 concurrent probe sessions and a throughput test on one agent:
//     every probe accounted for (lost_samples).
//
// make bench runs it: go test -run '^$' -bench RealHosts -benchtime 1x ./e2e
func BenchmarkRealHosts(b *testing.B) {
	testsupport.NeedRoot(b)
	testsupport.Need(b, "iperf3", "iproute2")
	l := newLab(b, "a", "b", "c")
	policy := l.file("bench-policy.yaml", "rules:\n  - {name: bench, identities: ['*'], share: true, limits: {tests: 250, requests: 1000}}\n")
	for _, h := range []string{"a", "b", "c"} {
		l.start(h, "--policy", policy, "--max-tests", "256")
	}
	inv := l.inventory("ctl", "", "a", "b", "c")
	ctx := context.Background()
	open := func() map[string]measure.Endpoint {
		i, err := realhosts.Load(inv)
		if err != nil {
			b.Fatal(err)
		}
		bed, err := realhosts.Open(i, nil)
		if err != nil {
			b.Fatal(err)
		}
		eps, err := endpoints.Dial(ctx, bed, "a", "b", "c")
		if err != nil {
			b.Fatal(err)
		}
		return eps
	}

	// Idle first: the agents have served nothing but their start.
	time.Sleep(time.Second)
	pid := l.host("b").cmd.Process.Pid
	st0, _ := proc.Read(pid)
	at0 := time.Now()
	time.Sleep(10 * time.Second)
	st1, _ := proc.Read(pid)
	idleCPU := 100 * (st1.CPU - st0.CPU).Seconds() / time.Since(at0).Seconds()
	idleRSS := proc.RSS(pid)

	// Throughput against iperf3 on the same pair.
	eps := open()
	defer measure.CloseAll(eps)
	spec := throughput.Spec{Protocol: throughput.TCP, Streams: 1, Duration: 5 * time.Second, Interval: time.Second}
	res, err := throughput.Measure(ctx, eps["a"], eps["b"], spec)
	if err != nil {
		b.Fatal(err)
	}
	wanlabBPS := res.End.SumReceived.BitsPerSecond
	iperfBPS := iperf3In(b, l, "a", "b", 5)

	// How soon a test starts, TLS handshake included.
	var starts []time.Duration
	for range 20 {
		t0 := time.Now()
		fresh := open()
		_, err := throughput.Measure(ctx, fresh["a"], fresh["b"], throughput.Spec{Protocol: throughput.TCP, Streams: 1, Bytes: 1, Interval: time.Second})
		starts = append(starts, time.Since(t0))
		measure.CloseAll(fresh)
		if err != nil {
			b.Fatal(err)
		}
	}
	startMs := delay.Summarize(starts).P50

	// 100 probe sessions toward b while a throughput test runs into b.
	var wg sync.WaitGroup
	load := make(chan error, 1)
	go func() {
		_, err := throughput.Measure(ctx, eps["a"], eps["b"], throughput.Spec{Protocol: throughput.TCP, Streams: 4, Duration: 8 * time.Second, Interval: time.Second})
		load <- err
	}()
	time.Sleep(500 * time.Millisecond)
	lost := make([]int, 100)
	failed := make([]error, 100)
	for i := range 100 {
		wg.Go(func() {
			r, err := probe.Measure(ctx, eps["c"], eps["b"], probe.Spec{Count: 50, Interval: 100 * time.Millisecond, Size: 64, Timeout: time.Second})
			failed[i] = err
			if r != nil {
				lost[i] = r.Lost + (50 - r.Sent)
			}
		})
	}
	wg.Wait()
	if err := <-load; err != nil {
		b.Errorf("the throughput test beside the probes: %v", err)
	}
	lostSamples, failures := 0, 0
	for i := range lost {
		lostSamples += lost[i]
		if failed[i] != nil {
			failures++
			b.Logf("probe session %d: %v", i, failed[i])
		}
	}
	b.ReportMetric(wanlabBPS/1e6, "wanlab_mbps")
	b.ReportMetric(iperfBPS/1e6, "iperf3_mbps")
	b.ReportMetric(wanlabBPS/iperfBPS, "tls_vs_iperf3")
	b.ReportMetric(startMs, "start_ms")
	b.ReportMetric(idleCPU, "idle_cpu_pct")
	b.ReportMetric(float64(idleRSS)/(1<<20), "idle_rss_MiB")
	b.ReportMetric(float64(lostSamples), "lost_samples")
	b.ReportMetric(float64(failures), "failed_sessions")
}
