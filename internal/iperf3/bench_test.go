package iperf3

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkVersusIperf3Client measures how wanlab's throughput toward an
// iperf3 server agrees with iperf3's own client on the same path: each
// iteration runs one test of each, one after the other, and the
// benchmark reports both medians and how far wanlab's is from iperf3's
// (the receivers' rates, iperf3's sum_received). On a quiet machine:
//
//	go test -run '^$' -bench VersusIperf3Client -benchtime 10x ./internal/iperf3
//
// Environment: WANLAB_IPERF3_SERVER=HOST:PORT measures toward a running
// iperf3 -s across a real path (else private one-off servers on
// loopback, where the clients' CPU, not a path, bounds the rate);
// WANLAB_IPERF3_SECONDS (default 5), WANLAB_IPERF3_STREAMS (default 1),
// WANLAB_IPERF3_REVERSE=1 (the server sends), WANLAB_IPERF3_HOST (the
// loopback address, default 127.0.0.1), WANLAB_IPERF3_FQRATE_MBPS (each
// stream's sender paced to this many Mbit/s: on loopback, a bottleneck
// below what either client's CPU bounds, as a path would be; an iperf3
// 3.12 server paces only with a window too), WANLAB_IPERF3_WINDOW_KB.
func BenchmarkVersusIperf3Client(b *testing.B) {
	secs := envInt(b, "WANLAB_IPERF3_SECONDS", 5)
	streams := envInt(b, "WANLAB_IPERF3_STREAMS", 1)
	reverse := os.Getenv("WANLAB_IPERF3_REVERSE") == "1"
	fqRate := envInt(b, "WANLAB_IPERF3_FQRATE_MBPS", 0)
	window := envInt(b, "WANLAB_IPERF3_WINDOW_KB", 0)
	host := os.Getenv("WANLAB_IPERF3_HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	remote := os.Getenv("WANLAB_IPERF3_SERVER")
	server := func() (addr string, done func()) {
		if remote != "" {
			return remote, func() {}
		}
		s := startIperf3(b, host)
		return s.addr, func() { s.report(b) }
	}
	args := []string{"-t", strconv.Itoa(secs), "-P", strconv.Itoa(streams)}
	if reverse {
		args = append(args, "-R")
	}
	if fqRate > 0 {
		args = append(args, "--fq-rate", strconv.Itoa(fqRate)+"M")
	}
	if window > 0 {
		args = append(args, "-w", strconv.Itoa(window)+"K")
	}
	spec := Spec{Streams: streams, Duration: time.Duration(secs) * time.Second, Reverse: reverse,
		FQRate: float64(fqRate) * 1e6, Window: window << 10}
	var ours, theirs []float64
	for b.Loop() {
		addr, done := server()
		res, err := Run(context.Background(), addr, spec, Options{})
		if err != nil {
			b.Fatal(err)
		}
		done()
		addr, done = server()
		ref := iperf3Client(b, addr, args...)
		done()
		o, r := res.Received.BitsPerSecond, ref.End.SumReceived.BitsPerSecond
		b.Logf("wanlab %.3f Gbit/s, iperf3 -c %.3f Gbit/s (%+.2f%%)", o/1e9, r/1e9, 100*(o/r-1))
		ours, theirs = append(ours, o), append(theirs, r)
	}
	o, r := median(ours), median(theirs)
	b.ReportMetric(o/1e9, "wanlab-Gbit/s")
	b.ReportMetric(r/1e9, "iperf3-Gbit/s")
	b.ReportMetric(100*(o/r-1), "%-from-iperf3")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: give a whole number", name, s)
	}
	return n
}
