package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/testbed"
)

// wanlab testbed capture writes what the engine did, as tshark reads it:
// every echo request that crossed a->b or was lost on it, the lost ones
// marked with the link model's reason, and as many of those as the engine
// counted.
func TestCaptureReadByTshark(t *testing.T) {
	if err := crosscheck.Require("tshark", "ping"); err != nil {
		t.Fatal(err)
	}
	name := up(t, pairBed("e2e-capture", "rate: 20Mbit", "delay: 5ms", "forward: {loss: 20%}"))
	st := status(t, name)
	file := filepath.Join(t.TempDir(), "ab.pcapng")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	capture := exec.CommandContext(ctx, wanlabBin, "testbed", "capture", name, "a->b", "-w", file, "--count", "200", "--json")
	out := make(chan string, 1)
	go func() {
		b, err := capture.CombinedOutput()
		if err != nil {
			out <- "error: " + err.Error() + ": " + string(b)
			return
		}
		out <- string(b)
	}()
	time.Sleep(500 * time.Millisecond) // the capture starts
	p, err := runner(name).Ping(ctx, "a", st.addr("b"), 200, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	summary := <-out
	if !strings.Contains(summary, `"packets": 200`) {
		t.Fatalf("capture: %s", summary)
	}
	fields := func(filter string) []string {
		b, err := exec.Command("tshark", "-r", file, "-Y", filter, "-T", "fields", "-e", "icmp.seq").Output()
		if err != nil {
			t.Fatalf("tshark -Y %q: %v", filter, err)
		}
		return strings.Fields(string(b))
	}
	all := fields("icmp.type == 8")
	dropped := fields(`icmp.type == 8 && frame.comment contains "dropped by the link model: loss"`)
	if len(all) != 200 {
		t.Errorf("tshark read %d echo requests, want the 200 sent", len(all))
	}
	lost := p.Sent - p.Received
	if len(dropped) != lost {
		t.Errorf("%d captured as dropped by the loss model, ping lost %d", len(dropped), lost)
	}
	if lo, hi := binomialBounds(200, 0.2); float64(len(dropped)) < lo || float64(len(dropped)) > hi {
		t.Errorf("%d of 200 dropped at 20%% loss", len(dropped))
	}
	if seq, _ := strconv.Atoi(all[len(all)-1]); seq != 200 {
		t.Errorf("the last request captured is %d, want 200", seq)
	}
	// A link that does not exist, and a file that cannot be written.
	if r := wanlab(t, "testbed", "capture", name, "a->z", "-w", filepath.Join(t.TempDir(), "x")); r.code != 1 || !strings.Contains(r.stderr, `no link direction "a->z"`) {
		t.Errorf("capture of a link that does not exist: exit %d: %s", r.code, r.stderr)
	}
	if r := wanlab(t, "testbed", "capture", name, "a->b", "-w", "/proc/no/such/file"); r.code != 1 || !strings.Contains(r.stderr, "creating the capture file") {
		t.Errorf("capture into a file that cannot be made: exit %d: %s", r.code, r.stderr)
	}
	if r := wanlab(t, "testbed", "capture", name, "a->b", "-w", "/dev/full", "--duration", "3s"); r.code != 1 || !strings.Contains(r.stderr, "no space left") {
		t.Errorf("capture into a full disk: exit %d: %s", r.code, r.stderr)
	}
}

// BenchmarkCapture measures what a capture costs the engine: one iperf3
// TCP stream through a 1 Gbit/s link, 5 ms each way, without and with a
// capture of the direction (whole packets, into a file), and the engine's
// CPU per Gbit forwarded in each. docs/benchmarks.md.
func BenchmarkCapture(b *testing.B) {
	if err := crosscheck.Require("iperf3"); err != nil {
		b.Fatal(err)
	}
	name := up(b, pairBed("bench-capture", "rate: 1000Mbit", "delay: 5ms"))
	addr := status(b, name).addr("b")
	reader := testbed.NewStatsReader(name)
	run := func() (mbps, cpuPerGbit float64) {
		before, err := reader.Read()
		if err != nil {
			b.Fatal(err)
		}
		ip := iperf(b, name, crosscheck.IperfOptions{Client: "a", Server: "b", ServerAddr: addr, Duration: 6 * time.Second, Omit: 2 * time.Second, Window: "4M"})
		after, err := reader.Read()
		if err != nil {
			b.Fatal(err)
		}
		var bits float64
		for i := range after.Dirs {
			bits += float64(after.Dirs[i].Bytes-before.Dirs[i].Bytes) * 8
		}
		return ip.ReceivedBPS / 1e6, (after.CPUSeconds - before.CPUSeconds) / (bits / 1e9)
	}
	plain, plainCPU := run()
	b.Logf("without a capture: %.0f Mbit/s, %.2f engine CPU-s per Gbit", plain, plainCPU)
	for _, snaplen := range []string{"0", "128"} {
		file := filepath.Join(b.TempDir(), "c.pcapng")
		capture := exec.Command(wanlabBin, "testbed", "capture", name, "a->b", "-w", file, "--snaplen", snaplen, "--json")
		var out strings.Builder
		capture.Stdout = &out
		if err := capture.Start(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		captured, capturedCPU := run()
		capture.Process.Signal(os.Interrupt)
		capture.Wait()
		var res struct{ Packets, Missed int }
		json.Unmarshal([]byte(out.String()), &res)
		b.Logf("capturing (snaplen %s): %.0f Mbit/s, %.2f CPU-s per Gbit; %d packets written, %d missed (%.1f%%)",
			snaplen, captured, capturedCPU, res.Packets, res.Missed, 100*float64(res.Missed)/float64(max(1, res.Packets+res.Missed)))
		b.ReportMetric(100*(plain-captured)/plain, "slowdown_snaplen"+snaplen+"_%")
		b.ReportMetric(100*float64(res.Missed)/float64(max(1, res.Packets+res.Missed)), "missed_snaplen"+snaplen+"_%")
	}
}

// A workload's capture: writes each step's capture next to the run, and
// the run records what it held; a capture that cannot be written leaves
// the step done and says why.
func TestRunWithCapture(t *testing.T) {
	if err := crosscheck.Require("tshark"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "e2e-runcap.yaml")
	os.WriteFile(path, []byte(`name: e2e-runcap
hosts: {a: {}, b: {}}
links:
  - between: [a, b]
    rate: 20Mbit
    delay: 2ms
    forward: {loss: 10%}
workloads:
  - probe: {from: a, to: b, count: 100, interval: 10ms}
    capture: {links: [a->b], snaplen: 96}
`), 0o644)
	db := filepath.Join(dir, "run.db")
	if r := wanlab(t, "run", path, "--db", db, "--captures", dir); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	file := filepath.Join(dir, "wanlab-run-1-step-1-a-b.pcapng")
	out, err := exec.Command("tshark", "-r", file, "-Y", "udp", "-T", "fields", "-e", "frame.comment").Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", file, err)
	}
	// One line a packet, empty for those without a comment.
	packets := strings.Count(string(out), "\n")
	dropped := strings.Count(string(out), "dropped by the link model: loss")
	if packets < 100 || dropped == 0 {
		t.Errorf("the capture holds %d UDP packets, %d dropped by the loss model; want the 100 probes, some lost", packets, dropped)
	}
	msg, _ := exec.Command("sqlite3", db, "SELECT message FROM events WHERE level = 'info'").Output()
	if !strings.Contains(string(msg), "packets of a->b") || !strings.Contains(string(msg), file) {
		t.Errorf("the run did not record its capture: %s", msg)
	}
	// Into a folder that is not there: the step is done, the run says why.
	if r := wanlab(t, "run", path, "--db", db, "--captures", filepath.Join(dir, "missing")); r.code != 0 {
		t.Fatalf("run with captures into a missing folder: exit %d: %s", r.code, r.stderr)
	}
	msg, _ = exec.Command("sqlite3", db, "SELECT message FROM events WHERE level = 'warning' AND run_id = 2").Output()
	if !strings.Contains(string(msg), "capture of a->b") || !strings.Contains(string(msg), "no such file or directory") {
		t.Errorf("a capture that could not be written was not said: %q", msg)
	}
}
