// Command testbed benchmarks wanlab's emulated test-beds against the targets
// of docs/benchmarks.md: rate, delay, loss and drop fidelity measured with
// iperf3 and ping inside the test-bed, the kernel's veth + tbf as the
// reference for rate, the engine's CPU cost, and how fast 50 hosts come up and
// go down. It prints Markdown for docs/benchmarks.md. It needs root.
//
//	go run ./bench/testbed -wanlab bin/wanlab [-quick]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

var (
	wanlabBin = flag.String("wanlab", "bin/wanlab", "the wanlab binary")
	quick     = flag.Bool("quick", false, "shorter tests, fewer cases")
	only      = flag.String("only", "", "run only these sections (comma-separated: rate,loss,aggregate,scale,measure,veth,streams,probe,disk,engine,coalesce,timeline)")
)

// bigBuffers lets one TCP stream fill a 1 Gbit/s path with a 100 ms round trip
// (12.5 MB in flight): the kernel's default send buffer (4 MiB) would cap it.
const bigBuffers = `{net.ipv4.tcp_rmem: "4096 131072 67108864", net.ipv4.tcp_wmem: "4096 16384 67108864"}`

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	if err := testbed.CheckEnvironment(); err != nil {
		return err
	}
	if err := crosscheck.Require("iperf3", "ping", "tc", "ip"); err != nil {
		return err
	}
	abs, err := filepath.Abs(*wanlabBin)
	if err != nil {
		return err
	}
	*wanlabBin = abs
	header()
	sections := []struct {
		name string
		fn   func() error
	}{{"rate", rateAndDelay}, {"loss", loss}, {"aggregate", aggregate}, {"scale", scale}, {"measure", measureAgreement}, {"veth", vethComparison}, {"streams", manyStreams}, {"probe", probeAgreement}, {"disk", diskCaps}, {"engine", engineScale}, {"coalesce", coalescing}, {"timeline", lateTimeline}}
	for _, s := range sections {
		if *only != "" && !strings.Contains(","+*only+",", ","+s.name+",") {
			continue
		}
		if err := s.fn(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

func header() {
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	cpu := "unknown"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "model name\t: "); ok {
				cpu = v
				break
			}
		}
	}
	iperf, _ := exec.Command("iperf3", "--version").Output()
	fmt.Printf("Measured %s on %s, %d cores, kernel %s, %s.\n\n", time.Now().UTC().Format("2006-01-02"), cpu, runtime.NumCPU(),
		strings.TrimSpace(string(kernel)), strings.SplitN(string(iperf), "\n", 2)[0])
}

// bed is a test-bed brought up for one benchmark.
type bed struct {
	name string
	st   *testbed.State
}

func upBed(yaml string) (*bed, error) {
	name := strings.TrimSpace(strings.SplitN(strings.SplitN(yaml, "name: ", 2)[1], "\n", 2)[0])
	f, err := os.CreateTemp("", "wanlab-bench-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	f.WriteString(yaml)
	f.Close()
	if out, err := exec.Command(*wanlabBin, "testbed", "up", f.Name()).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("up %s: %v: %s", name, err, out)
	}
	st, err := testbed.ReadState(name)
	if err != nil {
		return nil, err
	}
	return &bed{name: name, st: st}, nil
}

func (b *bed) down() {
	if out, err := exec.Command(*wanlabBin, "testbed", "down", b.name).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: down %s: %v: %s\n", b.name, err, out)
	}
}

func (b *bed) addr(host string) string {
	for _, h := range b.st.Hosts {
		if h.Name == host {
			return h.Addr
		}
	}
	return ""
}

func (b *bed) runner() crosscheck.Runner {
	return crosscheck.ExecRunner(*wanlabBin, b.name)
}

func (b *bed) status() (*testbed.Status, error) { return testbed.GetStatus(b.name) }

// otherDrops sums the drops the link model did not decide.
func otherDrops(s *testbed.Status) uint64 {
	n := s.Engine.PoolDrops
	for _, p := range s.Engine.Ports {
		n += p.WriteDrops
	}
	for _, t := range s.TUN {
		n += t.TxDropped + t.RxDropped
	}
	return n
}

func forwardedBytes(s *testbed.Status) uint64 {
	var n uint64
	for _, d := range s.Engine.Dirs {
		n += d.Bytes
	}
	return n
}

// omit leaves slow start out: at 100 ms RTT and 1 Gbit/s it lasts seconds.
func omit() time.Duration {
	if *quick {
		return time.Second
	}
	return 3 * time.Second
}

func duration() time.Duration {
	if *quick {
		return 4 * time.Second
	}
	return 10 * time.Second
}

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

// measureJSON runs wanlab measure throughput --json in test-bed b.
func (b *bed) measure(args ...string) (*measure.ThroughputResult, error) {
	out, err := exec.Command(*wanlabBin, append([]string{"measure", "throughput", "--json", "--testbed", b.name}, args...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("measure %v: %w: %s", args, err, out)
	}
	var r measure.ThroughputResult
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

// vethPair makes pair i of two namespaces joined by a plain veth pair,
// 10.252.i.1 and 10.252.i.2, with a root qdisc on both ends if one is
// given (tc's words, "tbf rate 10mbit ..."); cleanup removes them, also
// after an error.
func vethPair(i int, qdisc ...string) (a, b string, cleanup func(), err error) {
	a, b = testbed.NetnsName("benchveth", fmt.Sprintf("a%d", i)), testbed.NetnsName("benchveth", fmt.Sprintf("b%d", i))
	cleanup = func() {
		exec.Command("ip", "netns", "del", a).Run()
		exec.Command("ip", "netns", "del", b).Run()
	}
	cmds := [][]string{
		{"ip", "netns", "add", a}, {"ip", "netns", "add", b},
		{"ip", "link", "add", "wlveth-a", "netns", a, "type", "veth", "peer", "name", "wlveth-b", "netns", b},
		{"ip", "-n", a, "addr", "add", vethAddr(i, 1) + "/30", "dev", "wlveth-a"},
		{"ip", "-n", b, "addr", "add", vethAddr(i, 2) + "/30", "dev", "wlveth-b"},
		{"ip", "-n", a, "link", "set", "wlveth-a", "up"}, {"ip", "-n", b, "link", "set", "wlveth-b", "up"},
		{"ip", "-n", a, "link", "set", "lo", "up"}, {"ip", "-n", b, "link", "set", "lo", "up"},
	}
	if len(qdisc) > 0 {
		cmds = append(cmds,
			append([]string{"ip", "netns", "exec", a, "tc", "qdisc", "add", "dev", "wlveth-a", "root"}, qdisc...),
			append([]string{"ip", "netns", "exec", b, "tc", "qdisc", "add", "dev", "wlveth-b", "root"}, qdisc...))
	}
	for _, c := range cmds {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return a, b, cleanup, fmt.Errorf("%v: %v: %s", c, err, out)
		}
	}
	return a, b, cleanup, nil
}

// vethAddr is host h (1 or 2) of veth pair i.
func vethAddr(i, h int) string { return fmt.Sprintf("10.252.%d.%d", i, h) }

// vethComparison runs wanlab's agents and iperf3 over a plain veth pair
// between two namespaces: no emulator, so both tools are the bottleneck.
func vethComparison() error {
	a, b, cleanup, err := vethPair(0)
	defer cleanup()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "wanlab-bench-veth")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	var agents []*exec.Cmd
	defer func() {
		cancel() // kills the agents
		for _, a := range agents {
			a.Wait()
		}
	}()
	var ends []measure.Endpoint
	for _, h := range []struct{ ns, name, addr string }{{a, "a", vethAddr(0, 1)}, {b, "b", vethAddr(0, 2)}} {
		sock := filepath.Join(dir, h.name+".sock")
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", h.ns, *wanlabBin, "agent", "--host", h.name, "--socket", sock)
		if err := cmd.Start(); err != nil {
			return err
		}
		agents = append(agents, cmd)
		var c *agent.Client
		for range 200 {
			if c, err = agent.Dial(ctx, h.name, sock); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			return err
		}
		defer c.Close()
		ends = append(ends, measure.Endpoint{Host: h.name, Addr: h.addr, Agent: c})
	}
	d := duration()
	w, err := measure.Throughput(ctx, ends[0], ends[1], throughput.Spec{Protocol: throughput.TCP, Streams: 1, Duration: d, Interval: time.Second})
	if err != nil {
		return err
	}
	server := exec.Command("ip", "netns", "exec", b, "iperf3", "-s", "-1")
	if err := server.Start(); err != nil {
		return err
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	var doc struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			CPU struct {
				Host   float64 `json:"host_total"`
				Remote float64 `json:"remote_total"`
			} `json:"cpu_utilization_percent"`
		} `json:"end"`
	}
	for range 50 {
		out, _ := exec.Command("ip", "netns", "exec", a, "iperf3", "-J", "-c", vethAddr(0, 2), "-t", fmt.Sprint(d.Seconds())).Output()
		if json.Unmarshal(out, &doc) == nil && doc.End.SumReceived.BitsPerSecond > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	wGbit, iGbit := w.End.SumReceived.BitsPerSecond/1e9, doc.End.SumReceived.BitsPerSecond/1e9
	wCPU := w.End.CPU.SenderAgent + w.End.CPU.ReceiverAgent
	iCPU := doc.End.CPU.Host + doc.End.CPU.Remote
	fmt.Println("### Unshaped veth: wanlab's engine against iperf3")
	fmt.Println()
	fmt.Printf("One TCP stream for %v over a plain veth pair between two namespaces (no emulator). CPU is the sender's and receiver's process CPU in %% of one core (wanlab: the agents; iperf3: host_total + remote_total), per Gbit/s received.\n\n", d.Seconds())
	fmt.Println("| tool | throughput | sender + receiver CPU | CPU per Gbit/s |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| wanlab (sendfile) | %.2f Gbit/s | %.0f%% | %.0f%% |\n", wGbit, wCPU, wCPU/wGbit)
	fmt.Printf("| iperf3 | %.2f Gbit/s | %.0f%% | %.0f%% |\n\n", iGbit, iCPU, iCPU/iGbit)
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
		var pr measure.ProbeResult
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
