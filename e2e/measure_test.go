package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/measure/tune"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/impact"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// measureJSON runs wanlab measure throughput --json and parses the result.
func measureJSON(t *testing.T, args ...string) (*throughput.Result, result) {
	t.Helper()
	r := wanlab(t, append([]string{"measure", "throughput", "--json"}, args...)...)
	var res throughput.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil && r.code == 0 {
		t.Fatalf("measure JSON: %v\n%s", err, r.stdout)
	}
	return &res, r
}

// TestMeasureThroughputAgreesWithIperf3 measures one path with wanlab's
// engine and with iperf3, one after the other, with the same settings.
func TestMeasureThroughputAgreesWithIperf3(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iperf3")
	name := up(t, pairBed("e2e-meas", "rate: 20Mbit", "delay: 10ms"))
	for _, streams := range []string{"1", "4"} {
		res, r := measureJSON(t, "--testbed", name, "--from", "a", "--to", "b", "-t", "4", "-P", streams, "-C", "cubic")
		if r.code != 0 {
			t.Fatalf("measure: exit %d: %s", r.code, r.stderr)
		}
		ref := iperf(t, name, crosscheck.IperfOptions{
			Client: "a", Server: "b", ServerAddr: status(t, name).addr("b"), Duration: 4 * time.Second, Congestion: "cubic", Streams: len(res.End.Streams),
		})
		got, want := res.End.SumReceived.BitsPerSecond, ref.ReceivedBPS
		if got < 0.95*want || got > 1.05*want {
			t.Errorf("%s streams: wanlab %.2f Mbit/s, iperf3 %.2f Mbit/s on the same path: want within 5%%", streams, got/1e6, want/1e6)
		}
		if len(res.Intervals) < 3 || res.Intervals[1].Streams[0].RTT < 20000 {
			t.Errorf("%s streams: intervals %+v: want TCP_INFO with an RTT of at least the path's 20 ms", streams, res.Intervals)
		}
	}
}

// TestMeasureUDPLoss checks wanlab's UDP loss against the configured rate.
func TestMeasureUDPLoss(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, pairBed("e2e-mudp", "rate: 50Mbit", "delay: 2ms", "forward: {loss: 2%}")+"seed: 3\n")
	res, r := measureJSON(t, "--testbed", name, "--from", "a", "--to", "b", "-u", "-b", "10Mbit", "-l", "1000", "-t", "3")
	if r.code != 0 {
		t.Fatalf("measure: exit %d: %s", r.code, r.stderr)
	}
	s := res.End.SumReceived
	n := int(s.Packets + s.LostPackets)
	lo, hi := binomialBounds(n, 0.02)
	if float64(s.LostPackets) < lo || float64(s.LostPackets) > hi {
		t.Errorf("lost %d of %d datagrams, want within [%.0f, %.0f] for 2%%", s.LostPackets, n, lo, hi)
	}
	_, _, engineLoss := status(t, name).link("a->b")
	if engineLoss != s.LostPackets {
		t.Errorf("the engine dropped %d, the agents counted %d lost", engineLoss, s.LostPackets)
	}
}

// TestAgentServesConcurrentTests runs two tests into one receiving host at once.
func TestAgentServesConcurrentTests(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, `name: e2e-conc
sites:
  lan: {}
hosts:
  server: {site: lan}
  c1: {site: lan}
  c2: {site: lan}
`)
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i, c := range []string{"c1", "c2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = wanlab(t, "measure", "throughput", "--testbed", name, "--from", c, "--to", "server", "-t", "2", "-P", "2")
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 || !strings.Contains(r.stdout, "received") {
			t.Errorf("test %d: exit %d: %s %s", i, r.code, r.stdout, r.stderr)
		}
	}
}

func TestMeasureBadInput(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, "name: e2e-mbad\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n")
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--testbed", name, "--from", "a", "--to", "b", "-P", "0"}, 2, "streams 0: give at least 1"},
		{[]string{"--testbed", name, "--from", "a", "--to", "b", "-P", "1000"}, 2, "over the agent's limit of 256 streams"},
		{[]string{"--testbed", name, "--from", "a", "--to", "b", "-w", "1B"}, 2, "window 1 bytes"},
		{[]string{"--testbed", name, "--from", "a", "--to", "b", "-t", "0"}, 2, "give a duration or a number of bytes"},
		{[]string{"--testbed", name, "--from", "a", "--to", "zz"}, 2, `has no host "zz"`},
		{[]string{"--testbed", name, "--from", "a", "--to", "a"}, 2, "the same host"},
		{[]string{"--testbed", "never-up", "--from", "a", "--to", "b"}, 1, "no such test-bed is up"},
		{[]string{"--testbed", name, "--from", "a", "--to", "b", "-C", "nosuchcc", "-t", "1"}, 1, `congestion control "nosuchcc"`},
		{[]string{"--testbed", name, "--from", "a"}, 2, "give --from and --to"},
		{[]string{"--from", "a", "--to", "b"}, 2, "give --testbed NAME (an emulated test-bed) or --inventory FILE (real hosts)"},
		{[]string{"--testbed", name, "--inventory", "x.yaml", "--from", "a", "--to", "b"}, 2, "give --testbed NAME (an emulated test-bed) or --inventory FILE"},
		{[]string{"--inventory", "/nonexistent/inv.yaml", "--from", "a", "--to", "b"}, 1, "reading /nonexistent/inv.yaml"},
	}
	for _, tt := range tests {
		r := wanlab(t, append([]string{"measure", "throughput"}, tt.args...)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("measure %v: exit %d, %q; want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.msg)
		}
	}
}

// TestAgentKilledMidTest kills the receiving host's agent during a test: the
// test ends partial with what it measured, and the agent comes back.
func TestAgentKilledMidTest(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, "name: e2e-mkill\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n    rate: 10Mbit\n")
	done := make(chan result, 1)
	go func() {
		done <- wanlab(t, "measure", "throughput", "--testbed", name, "--from", "a", "--to", "b", "-t", "5", "-i", "0.2")
	}()
	time.Sleep(1500 * time.Millisecond)
	if out, err := exec.Command("pkill", "-KILL", "-f", "agent --host b --socket /run/wanlab/"+name+"/").CombinedOutput(); err != nil {
		t.Fatalf("killing the agent: %v %s", err, out)
	}
	r := <-done
	if r.code != 1 || !strings.Contains(r.stdout, "PARTIAL") || !strings.Contains(r.stdout, "0.00-0.20 s") || !strings.Contains(r.stderr, "agent on b") {
		t.Errorf("measure with the receiver's agent killed: exit %d\n%s\n%s\nwant exit 1, the intervals measured, PARTIAL and the host named", r.code, r.stdout, r.stderr)
	}
	// The daemon starts the agent again.
	var again result
	for range 30 {
		if again = wanlab(t, "measure", "throughput", "--testbed", name, "--from", "a", "--to", "b", "-t", "1"); again.code == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if again.code != 0 {
		t.Errorf("after the agent was killed, measuring again: exit %d: %s", again.code, again.stderr)
	}
}

// TestMeasureProbe compares wanlab's probes with ping and irtt on one path,
// with loss, and checks the one-way delays of an asymmetric path.
func TestMeasureProbe(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iputils-ping", "irtt")
	name := up(t, `name: e2e-probe
seed: 5
hosts:
  a: {}
  b: {}
links:
  - between: [a, b]
    rate: 100Mbit
    forward: {delay: 7ms, loss: 5%}
    reverse: {delay: 3ms}
`)
	r := wanlab(t, "measure", "probe", "--testbed", name, "--from", "a", "--to", "b", "-c", "400", "-i", "5ms", "--json")
	if r.code != 0 {
		t.Fatalf("probe: exit %d: %s", r.code, r.stderr)
	}
	var res probe.Summary
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.OneWay.Clock != "shared" || res.OneWay.Forward.Min < 7 || res.OneWay.Forward.Min > 7.5 || res.OneWay.Back.Min < 3 || res.OneWay.Back.Min > 3.5 {
		t.Errorf("one way: %+v, want about 7 ms there and 3 ms back on a shared clock", res.OneWay)
	}
	lo, hi := binomialBounds(400, 0.05)
	if float64(res.Lost) < lo || float64(res.Lost) > hi {
		t.Errorf("lost %d of 400 probes, want within [%.0f, %.0f] for 5%%", res.Lost, lo, hi)
	}
	s := status(t, name)
	ping, err := runner(name).Ping(context.Background(), "a", s.addr("b"), 100, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The medians of wanlab and ping agree within 0.3 ms.
	if d := res.RTTms.P50 - ping.MedianMS; d > 0.3 || d < -0.3 {
		t.Errorf("probe RTT p50 %.3f ms, ping median %.3f ms (avg %.3f): want within 0.3 ms", res.RTTms.P50, ping.MedianMS, ping.AvgMS)
	}
	// irtt takes its receive time in user space after the read returns, where
	// wanlab and ping use the kernel's timestamp: irtt reads 0.1-0.3 ms higher
	// on this machine, so it may be up to 0.5 ms above wanlab, 0.3 ms below.
	irtt := irttMedian(t, name, s.addr("b"))
	if d := res.RTTms.P50 - irtt; d > 0.3 || d < -0.5 {
		t.Errorf("probe RTT p50 %.3f ms, irtt median %.3f ms: want wanlab between irtt - 0.5 ms and irtt + 0.3 ms", res.RTTms.P50, irtt)
	}
}

// irttMedian runs an irtt server on b and a client on a, and returns irtt's median RTT.
func irttMedian(t *testing.T, name, addr string) float64 {
	t.Helper()
	server := exec.Command(wanlabBin, "testbed", "exec", name, "b", "--", "irtt", "server", "-b", addr+":2112")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	var out []byte
	var err error
	for range 30 {
		out, err = exec.Command(wanlabBin, "testbed", "exec", name, "a", "--", "irtt", "client", "-i", "10ms", "-d", "1s", "-o", "-", addr+":2112").Output()
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("irtt client: %v", err)
	}
	var doc struct {
		Stats struct {
			RTT struct {
				Median float64 `json:"median"`
			} `json:"rtt"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("irtt JSON: %v", err)
	}
	return doc.Stats.RTT.Median / 1e6 // ns
}

// TestMeasureImpact loads a 10 Mbit/s path with a 64 KB queue: probes during
// the load wait behind a full queue, about 52 ms more than before it.
func TestMeasureImpact(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, pairBed("e2e-impact", "rate: 10Mbit", "delay: 5ms", "queue: 64KB"))
	r := wanlab(t, "measure", "impact", "--testbed", name, "--from", "a", "--to", "b", "--phase", "1s", "--load-duration", "4s", "--load-streams", "4", "--json")
	if r.code != 0 {
		t.Fatalf("impact: exit %d: %s", r.code, r.stderr)
	}
	var res impact.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	// A full 64 KB queue at 10 Mbit/s holds 52.4 ms.
	if res.RTTInflationMS < 25 || res.RTTInflationMS > 60 {
		t.Errorf("RTT inflation %.1f ms, want most of the 52 ms queue", res.RTTInflationMS)
	}
	if res.After == nil || res.After.RTTms.P50 > res.Before.RTTms.P50+2 {
		t.Errorf("after the load the RTT should be back to idle: before %+v, after %+v", res.Before, res.After)
	}
	if res.Load == nil || res.Load.End.SumReceived.BitsPerSecond < 8e6 {
		t.Errorf("the load itself: %+v", res.Load)
	}
}

// TestMeasureTune sweeps windows on a long path: small windows are
// window-limited (W/RTT), and the advice is a cell near the bottleneck.
func TestMeasureTune(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, pairBed("e2e-tune", "rate: 50Mbit", "delay: 20ms"))
	r := wanlab(t, "measure", "tune", "--testbed", name, "--from", "a", "--to", "b", "--streams", "1,4", "--windows", "64KiB,auto", "-t", "3", "--size", "100MB", "--json")
	if r.code != 0 {
		t.Fatalf("tune: exit %d: %s", r.code, r.stderr)
	}
	var res tune.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.RTTms < 40 || res.RTTms > 42 || len(res.Cells) != 4 {
		t.Fatalf("tune: rtt %.2f ms, %d cells", res.RTTms, len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Window == 0 {
			continue
		}
		// Linux doubles the buffer asked for and advertises a share of it, so
		// a buffer of W gives between about W/2 and 2W of window: the rate is
		// within that factor of W/RTT, or the bottleneck.
		limit := min(c.WindowLimitBPS, 50e6)
		if c.BitsPerSecond > 2.1*limit || c.BitsPerSecond < limit/2.5 {
			t.Errorf("%d streams, window %d: %.2f Mbit/s against a window limit of %.2f", c.Streams, c.Window, c.BitsPerSecond/1e6, c.WindowLimitBPS/1e6)
		}
		if c.Streams == 1 && c.BitsPerSecond > 0.6*res.BottleneckBPS {
			t.Errorf("one stream with a 64 KiB window is not window-limited: %.2f of %.2f Mbit/s", c.BitsPerSecond/1e6, res.BottleneckBPS/1e6)
		}
	}
	if res.Best.BitsPerSecond < 0.97*res.BottleneckBPS || res.BottleneckBPS < 40e6 || res.Best.TransferSeconds <= 0 {
		t.Errorf("advice %+v, bottleneck %.2f Mbit/s", res.Best, res.BottleneckBPS/1e6)
	}
	if res.BDPBytes < 200000 || res.BDPBytes > 270000 {
		t.Errorf("BDP %d bytes, want about 50 Mbit/s x 41 ms = 256 KB", res.BDPBytes)
	}
}

// TestMeasureTransfer sends a file with 4 streams there and back through a
// 50 Mbit/s path, then checks that a corrupted byte and a changing file are caught.
func TestMeasureTransfer(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, "name: e2e-xfer\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n    rate: 50Mbit\n    delay: 5ms\n")
	r := wanlab(t, "measure", "transfer", "--testbed", name, "--from", "a", "--to", "b", "--size", "20MB", "-P", "4", "--roundtrip", "--json")
	if r.code != 0 {
		t.Fatalf("transfer: exit %d: %s", r.code, r.stderr)
	}
	var res transfer.Summary
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if !res.ChecksumOK || res.Back == nil || res.There.Bytes != 20e6 || len(res.There.StreamBytes) != 4 {
		t.Fatalf("round trip: %+v", res)
	}
	// 50 Mbit/s less headers is 48.3 Mbit/s of file data.
	if bps := res.There.BitsPerSecond; bps < 0.85*48.3e6 || bps > 50e6 {
		t.Errorf("transfer at %.1f Mbit/s through a 50 Mbit/s link", bps/1e6)
	}
	r = wanlab(t, "measure", "transfer", "--testbed", name, "--from", "a", "--to", "b", "--size", "5MB", "--inject-corruption", "12345")
	if r.code != 1 || !strings.Contains(r.stderr, "checksum mismatch") {
		t.Errorf("corrupted byte: exit %d, %q; want exit 1 and a checksum mismatch", r.code, r.stderr)
	}
	// A file put in a's data folder that grows while it is sent: 20 MB at
	// 50 Mbit/s takes over 3 s.
	file := "/var/lib/wanlab/testbeds/" + name + "/a/growing"
	big := make([]byte, 20e6)
	if err := os.WriteFile(file, big, 0o600); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(time.Second, func() {
		f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte("more"))
		f.Close()
	})
	r = wanlab(t, "measure", "transfer", "--testbed", name, "--from", "a", "--to", "b", "--file", "growing")
	if r.code != 1 || !strings.Contains(r.stderr, "changed while it was being sent") {
		t.Errorf("changing file: exit %d, %q", r.code, r.stderr)
	}
	r = wanlab(t, "measure", "transfer", "--testbed", name, "--from", "a", "--to", "b", "--file", "no-such-file")
	if r.code != 1 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing file: exit %d, %q", r.code, r.stderr)
	}
	// A path is not a file name: the agent sends nothing outside its folder.
	r = wanlab(t, "measure", "transfer", "--testbed", name, "--from", "a", "--to", "b", "--file", "/etc/shadow")
	if r.code != 2 || !strings.Contains(r.stderr, "not a valid file name") {
		t.Errorf("a path: exit %d, %q; want a usage error", r.code, r.stderr)
	}
}

func TestMeasureDisk(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, "name: e2e-disk\nhosts:\n  a: {}\n")
	r := wanlab(t, "measure", "disk", "--testbed", name, "--host", "a", "--size", "64MB", "--fsync", "--json")
	if r.code != 0 {
		t.Fatalf("disk: exit %d: %s", r.code, r.stderr)
	}
	var res struct {
		Write float64 `json:"write_bytes_per_second"`
		Read  float64 `json:"read_bytes_per_second"`
		Bytes uint64  `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Write <= 0 || res.Read <= 0 || res.Bytes != 64e6 {
		t.Errorf("disk result %s (%v)", r.stdout, err)
	}
	if r := wanlab(t, "measure", "disk", "--testbed", name, "--host", "a", "--block", "10B"); r.code != 1 || !strings.Contains(r.stderr, "block 10") {
		t.Errorf("bad block: exit %d %q", r.code, r.stderr)
	}
}

// TestMeasureArchive stores measurements with --db and reads them back.
func TestMeasureArchive(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, "name: e2e-arch\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n    rate: 20Mbit\n    delay: 5ms\n")
	db := t.TempDir() + "/runs.db"
	if r := wanlab(t, "measure", "throughput", "--testbed", name, "--from", "a", "--to", "b", "-t", "2", "-i", "0.5", "--db", db); r.code != 0 {
		t.Fatalf("throughput: %s", r.stderr)
	}
	if r := wanlab(t, "measure", "probe", "--testbed", name, "--from", "a", "--to", "b", "-c", "10", "-i", "10ms", "--db", db); r.code != 0 {
		t.Fatalf("probe: %s", r.stderr)
	}
	r := wanlab(t, "runs", "--db", db, "--json")
	var runs []struct {
		ID      int64  `json:"id"`
		Kind    string `json:"kind"`
		Status  string `json:"status"`
		Samples int64  `json:"samples"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 2 {
		t.Fatalf("runs: %v %s", err, r.stdout)
	}
	for _, run := range runs {
		if run.Status != "done" || run.Samples == 0 {
			t.Errorf("run %+v", run)
		}
	}
	// 10 probes: round trip, two one-way delays and loss for each.
	out := wanlab(t, "export", "2", "--db", db).stdout
	if n := strings.Count(out, "delay.roundtrip"); n != 10 {
		t.Errorf("exported %d round trips of 10 probes:\n%s", n, out)
	}
}
