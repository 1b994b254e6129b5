// Command testbed benchmarks wanlab's emulated test-beds against the targets
// of docs/benchmarks.md: rate, delay, loss and drop fidelity measured with
// iperf3 and ping inside the test-bed, the kernel's veth + tbf as the
// reference for rate, the engine's CPU cost, and how fast 50 hosts come up and
// go down. It prints Markdown for docs/benchmarks.md. It needs root.
//
//	go run ./bench/testbed -wanlab bin/wanlab [-quick]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/testbed"
)

var (
	wanlabBin = flag.String("wanlab", "bin/wanlab", "the wanlab binary")
	quick     = flag.Bool("quick", false, "shorter tests, fewer cases")
	only      = flag.String("only", "", "run only these sections (comma-separated: rate,loss,aggregate,scale,measure,veth,streams,probe,disk,engine,ipv6,coalesce,timeline,routers)")
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
	}{{"rate", rateAndDelay}, {"loss", loss}, {"aggregate", aggregate}, {"scale", scale}, {"measure", measureAgreement}, {"veth", vethComparison}, {"streams", manyStreams}, {"probe", probeAgreement}, {"disk", diskCaps}, {"engine", engineScale}, {"ipv6", engineIPv6}, {"coalesce", coalescing}, {"timeline", lateTimeline}, {"routers", routerPaths}}
	for _, s := range sections {
		if *only != "" && !strings.Contains(","+*only+",", ","+s.name+",") {
			continue
		}
		if *only == "" && s.name == "ipv6" {
			continue // engine runs its cases among the others
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
	// ipv6 makes addr the hosts' IPv6 addresses.
	ipv6 bool
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
		if h.Name == host && b.ipv6 {
			return h.Addr6
		}
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
