package main

// Agreement: wanlab's own measurements against iperf3, ping and irtt on the
// same emulated paths.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// measureJSON runs wanlab measure throughput --json in test-bed b.
func (b *bed) measure(args ...string) (*throughput.Result, error) {
	out, err := exec.Command(*wanlabBin, append([]string{"measure", "throughput", "--json", "--testbed", b.name}, args...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("measure %v: %w: %s", args, err, out)
	}
	var r throughput.Result
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// measureAgreement compares wanlab's throughput with iperf3's on the same
// emulated paths, one after the other.
func measureAgreement() error {
	rates := []float64{10e6, 100e6, 1e9}
	delays := []time.Duration{100 * time.Microsecond, 50 * time.Millisecond}
	streams := []int{1, 4, 16}
	if *quick {
		rates, streams = []float64{100e6}, []int{1, 4}
	}
	d := duration()
	fmt.Println("### wanlab measure throughput against iperf3 on the same path")
	fmt.Println()
	fmt.Printf("Each row: `wanlab measure throughput -C cubic -t %v -P N`, then `iperf3 -C cubic -t %v -P N`, on the same test-bed (default queue, TCP buffers 64 MiB). Received throughput.\n\n", d.Seconds(), d.Seconds())
	fmt.Println("| rate | delay | streams | wanlab | iperf3 | difference | wanlab retransmits | iperf3 retransmits |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range rates {
		for _, dl := range delays {
			b, err := upBed(fmt.Sprintf("name: bench-meas\nhosts:\n  a: {sysctl: %s}\n  b: {sysctl: %s}\nlinks:\n  - between: [a, b]\n    rate: %gMbit\n    delay: %dus\n",
				bigBuffers, bigBuffers, r/1e6, dl.Microseconds()))
			if err != nil {
				return err
			}
			for _, n := range streams {
				w, err := b.measure("--from", "a", "--to", "b", "-C", "cubic", "-t", fmt.Sprint(d.Seconds()), "-P", fmt.Sprint(n))
				if err != nil {
					b.down()
					return err
				}
				ref, err := b.runner().Iperf(context.Background(), crosscheck.IperfOptions{Client: "a", Server: "b", ServerAddr: b.addr("b"), Duration: d, Streams: n, Congestion: "cubic"})
				if err != nil {
					b.down()
					return err
				}
				got := w.End.SumReceived.BitsPerSecond
				fmt.Printf("| %s | %s | %d | %.1f Mbit/s | %.1f Mbit/s | %+.1f%% | %d | %d |\n", mbit(r), dl, n, got/1e6, ref.ReceivedBPS/1e6,
					100*(got-ref.ReceivedBPS)/ref.ReceivedBPS, derefU(w.End.SumSent.Retransmits), ref.Retransmits)
			}
			b.down()
		}
	}
	fmt.Println()
	return nil
}

func derefU(p *uint32) uint32 {
	if p == nil {
		return 0
	}
	return *p
}

// probeAgreement compares wanlab's probe RTT with ping's and irtt's on the
// same paths, and its loss with the configured rate.
func probeAgreement() error {
	fmt.Println("### wanlab measure probe against ping and irtt")
	fmt.Println()
	fmt.Println("On each path: `wanlab measure probe -c 500 -i 10ms`, `ping -c 200 -i 0.01`, `irtt client -i 10ms -d 3s`, one after the other. Medians of the round trip; loss against the 99% binomial interval.")
	fmt.Println()
	fmt.Println("| path | wanlab p50 | ping avg | irtt median | wanlab - ping | wanlab - irtt | wanlab loss | 99% interval |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, c := range []struct {
		desc, link string
		loss       float64
	}{
		{"100 Mbit/s, 0.1 ms", "rate: 100Mbit\n    delay: 0.1ms", 0},
		{"10 Mbit/s, 25 ms", "rate: 10Mbit\n    delay: 25ms", 0},
		{"1 Gbit/s, 5 ms, 1% loss each way", "rate: 1Gbit\n    delay: 5ms\n    loss: 1%", 0.01},
	} {
		b, err := upBed("name: bench-probe\nseed: 9\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n    " + c.link + "\n")
		if err != nil {
			return err
		}
		out, err := exec.Command(*wanlabBin, "measure", "probe", "--json", "--testbed", b.name, "--from", "a", "--to", "b", "-c", "500", "-i", "10ms").Output()
		var pr probe.Summary
		if err == nil {
			err = json.Unmarshal(out, &pr)
		}
		ping, perr := b.runner().Ping(context.Background(), "a", b.addr("b"), 200, 10*time.Millisecond)
		irtt, ierr := irttMedian(b)
		b.down()
		if err = errors.Join(err, perr, ierr); err != nil {
			return err
		}
		// Round-trip loss: lost either way.
		p := 1 - (1-c.loss)*(1-c.loss)
		sd := math.Sqrt(500 * p * (1 - p))
		fmt.Printf("| %s | %.3f ms | %.3f ms | %.3f ms | %+.3f ms | %+.3f ms | %d of 500 | %.0f-%.0f |\n", c.desc, pr.RTTms.P50, ping.AvgMS, irtt,
			pr.RTTms.P50-ping.AvgMS, pr.RTTms.P50-irtt, pr.Lost, max(0, 500*p-2.576*sd), 500*p+2.576*sd)
	}
	fmt.Println()
	return nil
}

// irttMedian runs irtt between the hosts a and b of a test-bed.
func irttMedian(b *bed) (float64, error) {
	server := exec.Command(*wanlabBin, "testbed", "exec", b.name, "b", "--", "irtt", "server", "-b", b.addr("b")+":2112")
	if err := server.Start(); err != nil {
		return 0, err
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	var doc struct {
		Stats struct {
			RTT struct {
				Median float64 `json:"median"`
			} `json:"rtt"`
		} `json:"stats"`
	}
	var err error
	for range 30 {
		var out []byte
		if out, err = exec.Command(*wanlabBin, "testbed", "exec", b.name, "a", "--", "irtt", "client", "-i", "10ms", "-d", "3s", "-o", "-", b.addr("b")+":2112").Output(); err == nil {
			if err = json.Unmarshal(out, &doc); err == nil {
				return doc.Stats.RTT.Median / 1e6, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("irtt: %w", err)
}
