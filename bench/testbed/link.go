package main

// Rate, delay and loss: what one emulated link does to a stream, against
// the kernel's tbf as the reference for rate.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/testbed"
)

// rateAndDelay runs one TCP stream and idle pings through links of 10, 100 and
// 1000 Mbit/s with 0.1, 10 and 50 ms one-way delay, queue one BDP.
func rateAndDelay() error {
	rates := []float64{10e6, 100e6, 1e9}
	delays := []time.Duration{100 * time.Microsecond, 10 * time.Millisecond, 50 * time.Millisecond}
	if *quick {
		rates, delays = []float64{100e6, 1e9}, []time.Duration{100 * time.Microsecond, 50 * time.Millisecond}
	}
	fmt.Println("### Rate and delay: one iperf3 TCP stream, idle ping")
	fmt.Println()
	fmt.Printf("One iperf3 stream, cubic, -t %v after -O %v (slow start left out), MTU 1500, default queue (one BDP of the round trip, at least 100 packets and 10 ms at the rate), "+
		"hosts' TCP buffers raised to 64 MiB. TCP ceiling = rate x 1448/1500. RTT expected = 2 x delay + serialisation of 84-byte pings. "+
		"Lateness: engine release lateness during 50 idle pings. CPU: engine CPU seconds (engine and writer threads) per Gbit forwarded.\n\n", duration().Seconds(), omit().Seconds())
	fmt.Println("| rate | delay | iperf3 TCP | % of rate | % of TCP ceiling | retransmits | ping min / avg RTT | expected RTT | lateness p50 / p99 (idle) | drops outside model | engine CPU per Gbit |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rates {
		for _, d := range delays {
			if err := rateCase(r, d); err != nil {
				return err
			}
		}
	}
	fmt.Println()
	fmt.Println("Kernel reference (no emulator): veth pair between two namespaces, `tc tbf` at the rate on the sender's side, no delay (the kernel here has no netem).")
	fmt.Println()
	fmt.Println("| rate | iperf3 TCP through veth + tbf | % of rate | retransmits |")
	fmt.Println("|---|---|---|---|")
	for _, r := range rates {
		if err := tbfReference(r); err != nil {
			return err
		}
	}
	fmt.Println()
	return nil
}

func rateCase(rate float64, delay time.Duration) error {
	b, err := upBed(fmt.Sprintf(`name: bench-rate
hosts:
  a: {sysctl: %s}
  b: {sysctl: %s}
links:
  - between: [a, b]
    rate: %gMbit
    delay: %dus
`, bigBuffers, bigBuffers, rate/1e6, delay.Microseconds()))
	if err != nil {
		return err
	}
	defer b.down()
	ctx := context.Background()
	ping, err := b.runner().Ping(ctx, "a", b.addr("b"), 50, 20*time.Millisecond)
	if err != nil {
		return err
	}
	idle, err := b.status()
	if err != nil {
		return err
	}
	res, err := b.runner().Iperf(ctx, crosscheck.IperfOptions{Client: "a", Server: "b", ServerAddr: b.addr("b"),
		Duration: duration(), Omit: omit(), Congestion: "cubic"})
	if err != nil {
		return err
	}
	after, err := b.status()
	if err != nil {
		return err
	}
	gbit := float64(forwardedBytes(after)-forwardedBytes(idle)) * 8 / 1e9
	cpu := (after.Engine.CPUSeconds - idle.Engine.CPUSeconds) / gbit
	expected := 2*delay.Seconds()*1e3 + 2*84*8/rate*1e3
	ceiling := rate * 1448 / 1500
	fmt.Printf("| %s | %s | %.1f Mbit/s | %.1f%% | %.1f%% | %d | %.3f / %.3f ms | %.3f ms | %.0f / %.0f us | %d | %.2f s |\n",
		mbit(rate), delay, res.ReceivedBPS/1e6, 100*res.ReceivedBPS/rate, 100*res.ReceivedBPS/ceiling, res.Retransmits,
		ping.MinMS, ping.AvgMS, expected, idle.Engine.Lateness.P50us, idle.Engine.Lateness.P99us, otherDrops(after), cpu)
	return nil
}

func mbit(r float64) string {
	if r >= 1e9 {
		return fmt.Sprintf("%g Gbit/s", r/1e9)
	}
	return fmt.Sprintf("%g Mbit/s", r/1e6)
}

// tbfReference measures one TCP stream through veth + tbf, the kernel's shaper.
func tbfReference(rate float64) error {
	a, b := testbed.NetnsName("benchref", "a"), testbed.NetnsName("benchref", "b")
	burst := max(int64(rate/8/250), 15000) // at least one tick's worth at HZ=250
	cmds := [][]string{
		{"ip", "netns", "add", a}, {"ip", "netns", "add", b},
		{"ip", "link", "add", "wlref-a", "netns", a, "type", "veth", "peer", "name", "wlref-b", "netns", b},
		{"ip", "-n", a, "addr", "add", "10.251.0.1/30", "dev", "wlref-a"},
		{"ip", "-n", b, "addr", "add", "10.251.0.2/30", "dev", "wlref-b"},
		{"ip", "-n", a, "link", "set", "wlref-a", "up"}, {"ip", "-n", b, "link", "set", "wlref-b", "up"},
		{"tc", "-n", a, "qdisc", "add", "dev", "wlref-a", "root", "tbf", "rate", fmt.Sprintf("%dbit", int64(rate)),
			"burst", fmt.Sprint(burst), "limit", fmt.Sprint(max(burst*4, 300000))},
	}
	defer func() {
		exec.Command("ip", "netns", "del", a).Run()
		exec.Command("ip", "netns", "del", b).Run()
	}()
	for _, c := range cmds {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v: %s", c, err, out)
		}
	}
	server := exec.Command("ip", "netns", "exec", b, "iperf3", "-s", "-1")
	if err := server.Start(); err != nil {
		return err
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	var res crosscheck.IperfResult
	var err error
	for range 50 {
		out, _ := exec.Command("ip", "netns", "exec", a, "iperf3", "-J", "-c", "10.251.0.2", "-t", fmt.Sprint(duration().Seconds())).Output()
		if res, err = crosscheck.ParseIperf(out, false); err == nil || !strings.Contains(err.Error(), "refused") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	fmt.Printf("| %s | %.1f Mbit/s | %.1f%% | %d |\n", mbit(rate), res.ReceivedBPS/1e6, 100*res.ReceivedBPS/rate, res.Retransmits)
	return nil
}

// loss sends UDP at half the link rate through lossy links and compares the
// loss iperf3 measured with the 99% binomial interval of the configured rate.
func loss() error {
	fmt.Println("### Loss: UDP at half the link rate through a lossy direction")
	fmt.Println()
	fmt.Println("iperf3 -u -l 1000 at 25 Mbit/s through a 50 Mbit/s, 5 ms link; Bernoulli loss. The interval is the 99% binomial interval for the number of datagrams sent; " +
		"'inside' is judged on the engine's loss drops and on iperf3's count. Receiver drops are datagrams the receiving host's UDP socket refused (RcvbufErrors): lost in the host, not the network.")
	fmt.Println()
	fmt.Println("| configured loss | datagrams | lost (iperf3) | measured loss | 99% interval | engine loss drops | inside (engine / iperf3) | receiver drops |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, p := range []float64{0.001, 0.01, 0.05} {
		b, err := upBed(fmt.Sprintf("name: bench-loss\nseed: 7\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n    rate: 50Mbit\n    delay: 5ms\n    forward: {loss: %g%%}\n", p*100))
		if err != nil {
			return err
		}
		res, err := b.runner().Iperf(context.Background(), crosscheck.IperfOptions{
			Client: "a", Server: "b", ServerAddr: b.addr("b"), Duration: 2 * duration(), UDP: true, Rate: "25M", Length: 1000,
		})
		st, serr := b.status()
		rcvbuf, rerr := udpRcvbufErrors(b, "b")
		b.down()
		if err = errors.Join(err, serr, rerr); err != nil {
			return err
		}
		lo, hi := binomial99(res.Packets, p)
		engine := st.Engine.Dirs[0].LossDrops
		in := func(x float64) string {
			if x < lo || x > hi {
				return "**no**"
			}
			return "yes"
		}
		fmt.Printf("| %g%% | %d | %d | %.3f%% | %.0f-%.0f | %d | %s / %s | %d |\n", p*100, res.Packets, res.LostPackets,
			100*float64(res.LostPackets)/float64(res.Packets), lo, hi, engine, in(float64(engine)), in(float64(res.LostPackets)), rcvbuf)
	}
	fmt.Println()
	return nil
}

// udpRcvbufErrors reads how many datagrams a host's UDP sockets refused.
func udpRcvbufErrors(b *bed, host string) (int, error) {
	out, err := exec.Command(*wanlabBin, "testbed", "exec", b.name, host, "--", "cat", "/proc/net/snmp").Output()
	if err != nil {
		return 0, err
	}
	n, err := proc.ParseSNMP(strings.NewReader(string(out)), "Udp", "RcvbufErrors")
	return int(n), err
}

// binomial99 is the 99% interval of the number of n packets lost with probability p.
func binomial99(n int, p float64) (lo, hi float64) {
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return float64(n)*p - 2.576*sd, float64(n)*p + 2.576*sd
}
