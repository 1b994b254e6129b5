package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// TestSC2003Quick runs the built-in sc2003-multigigabit under --quick: the
// machine's socket buffer limits are raised for the run, recorded in it
// and put back after it; every step's finding names what limited it (the
// path, the test-bed or TCP), and a congestion control this kernel lacks
// is a failed step that says so.
func TestSC2003Quick(t *testing.T) {
	testsupport.NeedRoot(t)
	before, _ := os.ReadFile("/proc/sys/net/core/rmem_max")
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	r := wanlab(t, "run", "sc2003-multigigabit", "--quick", "--json", "--db", db)
	var doc struct {
		Run   int64 `json:"run"`
		Steps []struct {
			Workload string             `json:"workload"`
			Label    string             `json:"label"`
			Status   string             `json:"status"`
			Reason   string             `json:"reason"`
			Metrics  map[string]float64 `json:"metrics"`
		} `json:"steps"`
		Analysis struct {
			Findings []struct {
				Kind     string `json:"kind"`
				Workload string `json:"workload"`
				Text     string `json:"text"`
			} `json:"findings"`
		} `json:"analysis"`
	}
	r.decode(t, "", &doc)
	assertNothingLeft(t, "sc2003-multigigabit")
	if after, _ := os.ReadFile("/proc/sys/net/core/rmem_max"); string(after) != string(before) {
		t.Errorf("net.core.rmem_max is %s after the run, was %s", after, before)
	}
	available, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	for _, s := range doc.Steps {
		cc := strings.TrimPrefix(s.Label, "congestion=")
		switch {
		case s.Workload != "paix":
		case strings.Contains(" "+strings.TrimSpace(string(available))+" ", " "+cc+" "):
			if s.Status != "done" || s.Metrics["throughput_mbps"] < 500 {
				t.Errorf("%s: %s, %.0f Mbit/s through a 10 Gbit/s path (%s)", s.Label, s.Status, s.Metrics["throughput_mbps"], s.Reason)
			}
		case s.Status != "failed" || !strings.Contains(s.Reason, "is not in this kernel"):
			t.Errorf("%s, which this kernel lacks: %s: %s", s.Label, s.Status, s.Reason)
		}
	}
	limits := map[string]string{}
	for _, f := range doc.Analysis.Findings {
		if f.Kind == "limiting_factor" {
			limits[f.Workload] = f.Text
			t.Log(f.Text)
		}
	}
	for _, w := range []string{"paix", "chicago", "amsterdam", "two-flows"} {
		text, ok := limits[w]
		if !ok {
			t.Errorf("no finding of what limited %s", w)
			continue
		}
		n := 0
		for _, s := range doc.Steps {
			if s.Workload == w {
				n++
			}
		}
		said := strings.Count(text, "held it") + strings.Count(text, "TCP itself fell short") + strings.Count(text, " failed (")
		if said != n {
			t.Errorf("%s: the finding names a limit for %d of its %d steps: %s", w, said, n, text)
		}
	}
	a, err := archive.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	events, err := a.Events(context.Background(), doc.Run)
	if err != nil {
		t.Fatal(err)
	}
	var recorded bool
	for _, e := range events {
		recorded = recorded || strings.HasPrefix(e.Message, "machine: net.core.rmem_max was")
	}
	if !recorded {
		t.Errorf("the run does not record the machine-wide settings: %+v", events)
	}
}

// TestEngineThreads runs two independent links on three engine threads,
// so that the directions of a link are on different threads: each link
// keeps its own delay and rate under load on both at once, a change
// works as on one thread, a capture of both directions of a link comes
// whole, and status says how many threads there are.
func TestEngineThreads(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iputils-ping", "iperf3")
	name := up(t, `name: e2e-threads
engine: {threads: 3}
hosts: {a: {}, b: {}, c: {}, d: {}}
links:
  - {between: [a, b], rate: 30Mbit, delay: 5ms}
  - {between: [c, d], rate: 20Mbit, delay: 15ms}
`)
	var doc struct {
		Engine struct {
			Threads int `json:"threads"`
		} `json:"engine"`
		Links []struct {
			Name     string `json:"name"`
			Counters struct {
				CoalesceUS float64 `json:"coalesce_us"`
			} `json:"counters"`
		} `json:"links"`
	}
	r := wanlab(t, "testbed", "status", name, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Engine.Threads != 3 {
		t.Fatalf("status says %d engine threads (%v), want 3", doc.Engine.Threads, err)
	}
	// Each direction's coalescing window, from whichever thread runs it:
	// half a 1500-byte packet's time at 30 Mbit/s, the 250 us cap at 20.
	if len(doc.Links) != 4 {
		t.Errorf("status lists %d link directions, want 4", len(doc.Links))
	}
	for _, l := range doc.Links {
		want := 200.0
		if strings.HasPrefix(l.Name, "c") || strings.HasPrefix(l.Name, "d") {
			want = 250
		}
		if l.Counters.CoalesceUS != want {
			t.Errorf("%s: coalescing window %v us, want %v", l.Name, l.Counters.CoalesceUS, want)
		}
	}
	st := status(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	got := map[string]float64{}
	var mu sync.Mutex
	for _, p := range [][2]string{{"a", "b"}, {"c", "d"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runner(name).Iperf(ctx, crosscheck.IperfOptions{Client: p[0], Server: p[1], ServerAddr: st.addr(p[1]), Duration: 3 * time.Second})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("iperf3 %s->%s: %v", p[0], p[1], err)
				return
			}
			got[p[0]] = res.ReceivedBPS
		}()
	}
	wg.Wait()
	for client, rate := range map[string]float64{"a": 30e6, "c": 20e6} {
		if ceiling := rate * 1448 / 1500; got[client] < 0.88*ceiling || got[client] > 1.01*ceiling {
			t.Errorf("TCP from %s: %.2f Mbit/s beside the other link's load, want about %.2f", client, got[client]/1e6, ceiling/1e6)
		}
	}
	// The lateness histogram holds what the threads' summaries count.
	var late struct {
		Engine struct {
			Lateness  struct{ Count uint64 } `json:"lateness"`
			Histogram []struct {
				UpToUS float64 `json:"up_to_us"`
				Count  uint64  `json:"count"`
			} `json:"lateness_histogram"`
		} `json:"engine"`
	}
	if err := json.Unmarshal([]byte(wanlab(t, "testbed", "status", name, "--json").stdout), &late); err != nil {
		t.Fatal(err)
	}
	var inBuckets uint64
	for _, b := range late.Engine.Histogram {
		inBuckets += b.Count
	}
	if n := late.Engine.Lateness.Count; n < 1000 || inBuckets != n {
		t.Errorf("lateness counts %d segments and its histogram %d (%d buckets), want the same, at least 1000", n, inBuckets, len(late.Engine.Histogram))
	}
	if r := wanlab(t, "testbed", "set", name, "c<->d", "delay=25ms"); r.code != 0 {
		t.Fatalf("set: %s", r.stderr)
	}
	file := filepath.Join(t.TempDir(), "cd.pcapng")
	capture := exec.CommandContext(ctx, wanlabBin, "testbed", "capture", name, "c<->d", "-w", file, "--count", "10", "--json")
	out := make(chan string, 1)
	go func() {
		b, _ := capture.CombinedOutput()
		out <- string(b)
	}()
	time.Sleep(500 * time.Millisecond) // the capture starts
	for _, p := range []struct {
		from, to string
		rtt      float64
	}{{"a", "b", 10}, {"c", "d", 50}} {
		ping, err := runner(name).Ping(ctx, p.from, st.addr(p.to), 5, 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if ping.Received != 5 || ping.MinMS < p.rtt || ping.MinMS > p.rtt+1.5 {
			t.Errorf("ping %s->%s: %+v, want 5 replies in about %.0f ms", p.from, p.to, ping, p.rtt)
		}
	}
	if summary := <-out; !strings.Contains(summary, `"packets": 10`) {
		t.Errorf("capture of c<->d: %s", summary)
	}
}
