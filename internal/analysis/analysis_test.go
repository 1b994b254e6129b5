package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/golden"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	impactkind "github.com/wanlab/wanlab/internal/workload/impact"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

func testbedOf(t *testing.T, yaml string) *scenario.Testbed {
	t.Helper()
	f, err := scenario.Parse("t.yaml", []byte(yaml), false)
	if err != nil {
		t.Fatal(err)
	}
	return f.Testbed
}

const serverClient = "name: t\nhosts:\n  server: {cpus: 0.5}\n  client: {cpus: 1}\nlinks:\n  - {between: [client, server], rate: 100Mbit, delay: 0.1ms}\n"

// ramp builds an eventdb ramp whose throughput rises until the 6th step and
// then stays, with the server's CPU full from there: a known knee.
func ramp(t *testing.T) Workload {
	tb := testbedOf(t, serverClient)
	jobs := []int{1, 5, 10, 15, 20, 30, 40, 60, 80}
	mbps := []float64{20, 45, 60, 70, 76, 80, 80.5, 79, 78}
	wct := []float64{5, 11, 17, 22, 27, 39, 52, 80, 110}
	w := Workload{Name: "ramp", Kind: "eventdb", Testbed: tb}
	t0 := time.Unix(1_800_000_000, 0)
	for i, n := range jobs {
		cfg := scenario.Step{Spec: &eventdb.Spec{Server: "server", Clients: []string{"client"}, Jobs: n, ServerModel: "single"}}
		serverCPU := math.Min(50, 50*mbps[i]/78) // % of one core; the quota is 0.5
		m := map[string]float64{
			"jobs": float64(n), "jobs_ok": float64(n), "throughput_mbps": mbps[i], "mean_wallclock_s": wct[i],
			"cpu_pct.server": serverCPU, "cpu_pct.client": 30, "server_cpu_quota_pct": 2 * serverCPU, "client_cpu_quota_pct": 30,
			"link_utilization_pct.server->client": mbps[i] * 1.04, "link_utilization_pct.client->server": 2,
		}
		var recs []job.Record
		if n == 80 {
			m["jobs_ok"], m["jobs_timeout"] = 77, 3
			for j := range 3 {
				recs = append(recs, job.Record{ID: j, Start: t0, End: t0.Add(25 * time.Second), Status: job.Timeout,
					Reason: fmt.Sprintf("job %d: reading page %d (event 3 of 60): read tcp: i/o timeout", j, 100+j)})
			}
		}
		w.Steps = append(w.Steps, Step{Index: i, Label: fmt.Sprintf("jobs=%d", n), Params: map[string]string{"jobs": fmt.Sprint(n)},
			Status: "done", Metrics: m, Config: cfg, Jobs: recs})
	}
	return w
}

func find(t *testing.T, r *Report, kind string) Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Kind == kind {
			return f
		}
	}
	t.Fatalf("no %s finding in %+v", kind, r.Findings)
	return Finding{}
}

func TestRampFindings(t *testing.T) {
	r := Of([]Workload{ramp(t)}, DefaultOptions)
	sat := find(t, r, "saturation")
	if sat.Values["knee_concurrency"] != 30 || sat.Values["peak_concurrency"] != 40 || sat.Values["peak_mbps"] != 80.5 {
		t.Errorf("saturation %+v: want the knee at step 6 (30 jobs) and the peak at 40", sat.Values)
	}
	b := find(t, r, "bottleneck")
	if b.Bottleneck != ServerCPU || r.Bottleneck != ServerCPU || b.Values["server_cpu_pct"] < 99 {
		t.Errorf("bottleneck %q (run %q), values %v: want server_cpu", b.Bottleneck, r.Bottleneck, b.Values)
	}
	eff := find(t, r, "efficient_running")
	// Single job 5 s: k=10 allows means under 50 s: 30 jobs (39 s) is the last.
	if eff.Values["boundary_concurrency"] != 30 || eff.Values["single_wallclock_s"] != 5 {
		t.Errorf("efficient running %+v", eff.Values)
	}
	fail := find(t, r, "failures")
	if fail.Values["concurrency"] != 80 || fail.Values["timeouts"] != 3 || !strings.Contains(fail.Text, "reading page N: read tcp: i/o timeout") {
		t.Errorf("failures %+v %q", fail.Values, fail.Text)
	}
	// Early steps are not server-bound: the link and the server are not full.
	if v := r.Workloads[0].Steps[0]; v.Bottleneck != Latency {
		t.Errorf("one job: %+v, want latency (nothing full)", v)
	}
	if v := r.Workloads[0].Steps[6]; v.Bottleneck != ServerCPU || v.Confidence != "medium" {
		// 80.5 Mbit/s is 84% of the link: close to full, so only medium.
		t.Errorf("40 jobs: %+v", v)
	}
}

func TestKFactor(t *testing.T) {
	r := Of([]Workload{ramp(t)}, Options{EfficientFactor: 4})
	if eff := find(t, r, "efficient_running"); eff.Values["boundary_concurrency"] != 10 {
		t.Errorf("k=4: boundary %v, want 10 jobs (17 s < 20 s)", eff.Values["boundary_concurrency"])
	}
}

func TestVerdicts(t *testing.T) {
	tb := testbedOf(t, serverClient)
	w := Workload{Name: "w", Kind: "eventdb", Testbed: tb}
	cfg := scenario.Step{Spec: &eventdb.Spec{Server: "server", Clients: []string{"client"}, ServerModel: "threads"}}
	for _, tc := range []struct {
		name    string
		metrics map[string]float64
		limited bool
		want    string
	}{
		{"network", map[string]float64{"throughput_mbps": 95, "link_utilization_pct.server->client": 99, "cpu_pct.server": 20, "cpu_pct.client": 30}, false, Network},
		{"client", map[string]float64{"throughput_mbps": 37, "link_utilization_pct.server->client": 4, "cpu_pct.server": 20, "cpu_pct.client": 98}, false, ClientCPU},
		{"server", map[string]float64{"throughput_mbps": 37, "link_utilization_pct.server->client": 40, "cpu_pct.server": 48, "cpu_pct.client": 30}, false, ServerCPU},
		{"latency", map[string]float64{"throughput_mbps": 1, "link_utilization_pct.server->client": 50, "cpu_pct.server": 2, "cpu_pct.client": 3}, false, Latency},
		{"testbed", map[string]float64{"throughput_mbps": 500, "link_utilization_pct.server->client": 50, "cpu_pct.machine": 98}, true, Testbed},
	} {
		v := verdict(w, Step{Metrics: tc.metrics, Config: cfg, TestbedLimited: tc.limited, LimitedBy: []string{"busy"}, Status: "done"}, DefaultOptions)
		if v.Bottleneck != tc.want || v.Why == "" {
			t.Errorf("%s: %+v, want %s", tc.name, v, tc.want)
		}
	}
}

// TestMeshDiskVerdict: a mesh step whose node's disk was read at its cap
// over the step names the disk.
func TestMeshDiskVerdict(t *testing.T) {
	tb := testbedOf(t, "name: t\nhosts:\n  a: {disk: {read: 3MB/s}}\n  b: {}\nlinks:\n  - {between: [a, b], rate: 100Mbit}\n")
	w := Workload{Name: "mesh", Kind: "mesh", Testbed: tb}
	cfg := scenario.Step{Spec: &mesh.Spec{Hosts: []string{"a", "b"}}}
	m := map[string]float64{"aggregate_mbps": 40, "link_utilization_pct.a->b": 45, "cpu_pct.a": 5, "cpu_pct.b": 5,
		"disk_read_pct.a": 97, "disk_read_mbs.a": 2.91}
	v := verdict(w, Step{Metrics: m, Config: cfg, Status: "done"}, DefaultOptions)
	if v.Bottleneck != Disk || !strings.Contains(v.Why, "host a") {
		t.Errorf("%+v, want the disk of host a", v)
	}
}

// TestTransferVerdicts: a transfer is judged by its own rate against the
// path's ceiling and the disks' caps, as at the ALICE sites whose disks read
// 3-5 MB/s behind 32-155 Mbit/s links.
func TestTransferVerdicts(t *testing.T) {
	tb := testbedOf(t, `name: t
hosts:
  bologna: {disk: {read: 3MB/s, write: 5MB/s}}
  cnaf: {}
  torino: {disk: {read: 59MB/s, write: 40MB/s}}
  padova: {disk: {read: 5MB/s, write: 2MB/s}}
  siena: {disk: {read: 3.5MB/s}}
links:
  - {between: [siena, cnaf], rate: 32Mbit, delay: 5ms}
  - {between: [padova, cnaf], rate: 155Mbit, delay: 5ms}
  - {between: [bologna, cnaf], rate: 32Mbit, delay: 5ms}
  - {between: [torino, cnaf], rate: 155Mbit, delay: 5ms}
  - {between: [bologna, torino], rate: 32Mbit, delay: 5ms}
`)
	w := Workload{Name: "w", Kind: "transfer", Testbed: tb}
	for _, tc := range []struct {
		name, from, to string
		metrics        map[string]float64
		want           string
		evidence       float64 // the disk's or the path's share, in %
	}{
		// 23.5 Mbit/s is 2.94 MB/s: 98% of bologna's read cap, 77% of the path.
		{"slow disk read", "bologna", "cnaf", map[string]float64{"throughput_mbps": 23.5, "there_mbps": 23.5, "link_utilization_pct.bologna->cnaf": 40}, Disk, 98},
		// 145 Mbit/s is 18 MB/s: 46% of torino's disk, 97% of the path's ceiling.
		{"fast disk", "torino", "cnaf", map[string]float64{"throughput_mbps": 145, "there_mbps": 145, "link_utilization_pct.torino->cnaf": 60}, Network, 97},
		// 21 Mbit/s is 2.6 MB/s: 88% of bologna's read cap, 68% of its path:
		// nearly full and far ahead of the path, so the disk (low confidence).
		{"nearly full disk", "bologna", "cnaf", map[string]float64{"throughput_mbps": 21, "there_mbps": 21, "link_utilization_pct.bologna->cnaf": 40}, Disk, 87.5},
		// 25 Mbit/s: 89% of siena's disk and 81% of its path: neither full,
		// neither ahead: latency, the two waiting on each other.
		{"disk and path close", "siena", "cnaf", map[string]float64{"throughput_mbps": 25, "there_mbps": 25, "link_utilization_pct.siena->cnaf": 40}, Latency, 0},
		// 15.7 Mbit/s is 1.96 MB/s: 98% of padova's write cap.
		{"slow disk write", "cnaf", "padova", map[string]float64{"throughput_mbps": 15.7, "there_mbps": 15.7, "link_utilization_pct.cnaf->padova": 10}, Disk, 98},
	} {
		cfg := scenario.Step{Spec: &transfer.Step{From: tc.from, To: tc.to, Streams: 4}}
		step := Step{Index: len(w.Steps), Label: tc.name, Metrics: tc.metrics, Config: cfg, Status: "done"}
		w.Steps = append(w.Steps, step)
		v := verdict(w, step, DefaultOptions)
		if v.Bottleneck != tc.want || math.Abs(v.Evidence[tc.want+"_pct"]-tc.evidence) > 1.5 {
			t.Errorf("%s: %s (%s), evidence %v; want %s at about %.0f%%", tc.name, v.Bottleneck, v.Why, v.Evidence, tc.want, tc.evidence)
		}
	}
	f := find(t, Of([]Workload{w}, DefaultOptions), "transfers")
	if f.Bottleneck != Disk || f.Values["steps_disk"] != 3 || f.Values["steps_network"] != 1 || f.Values["throughput_mbps.fast disk"] != 145 ||
		!strings.HasPrefix(f.Text, "The disk limited 3 transfers: slow disk read (the disk of host bologna") {
		t.Errorf("transfers finding %+v: want the two disk-bound steps first, then the network-bound one", f)
	}
}

func TestAsymmetry(t *testing.T) {
	tb := testbedOf(t, "name: t\nhosts:\n  slac: {}\n  cern: {}\nlinks:\n  - {between: [slac, cern], rate: 30Mbit, delay: 90ms}\n")
	mk := func(name, from, to string, mbps ...float64) Workload {
		w := Workload{Name: name, Kind: "throughput", Testbed: tb}
		for i, v := range mbps {
			w.Steps = append(w.Steps, Step{Index: i, Label: fmt.Sprintf("repeat=%d", i+1), Params: map[string]string{"repeat": fmt.Sprint(i + 1)}, Status: "done",
				Metrics: map[string]float64{"throughput_mbps": v}, Config: scenario.Step{Spec: &throughput.Step{From: from, To: to, Streams: 10, Protocol: "tcp"}}})
		}
		return w
	}
	r := Of([]Workload{mk("s2c", "slac", "cern", 15, 15.5, 14.5, 15.2), mk("c2s", "cern", "slac", 25, 24.5, 25.5, 25.1)}, DefaultOptions)
	a := find(t, r, "asymmetry")
	if math.Abs(a.Values["slower_by"]-0.4) > 0.01 || a.Values["p_value"] > 0.001 || a.Confidence != "high" || !strings.Contains(a.Text, "slac->cern is 40% slower") {
		t.Errorf("asymmetry %+v %q", a.Values, a.Text)
	}
	// A streams sweep is not a repeat of one test: it pairs with nothing.
	sweep := mk("sweep", "cern", "slac", 11, 18, 21)
	for i := range sweep.Steps {
		sweep.Steps[i].Config.Spec.(*throughput.Step).Streams = 1 + 4*i
	}
	r = Of([]Workload{mk("s2c", "slac", "cern", 15, 15.5, 14.5), sweep}, DefaultOptions)
	for _, f := range r.Findings {
		if f.Kind == "asymmetry" {
			t.Errorf("a sweep was compared as repeats: %q", f.Text)
		}
	}
	// No difference: low confidence.
	r = Of([]Workload{mk("s2c", "slac", "cern", 15, 16, 14), mk("c2s", "cern", "slac", 15.5, 14.5, 15.8)}, DefaultOptions)
	if a := find(t, r, "asymmetry"); a.Confidence != "low" || a.Values["p_value"] < 0.3 {
		t.Errorf("no asymmetry: %+v", a)
	}
}

func TestWelchAgainstReference(t *testing.T) {
	// R: t.test(c(15, 15.5, 14.5, 15.2), c(25, 24.5, 25.5, 25.1)): t = -30.3, df = 5.97, p = 9.3e-08
	p, d := welch([]float64{15, 15.5, 14.5, 15.2}, []float64{25, 24.5, 25.5, 25.1})
	if p > 2e-7 || p < 1e-8 || d < 20 {
		t.Errorf("p = %g, d = %g", p, d)
	}
	if p, _ := welch([]float64{1, 2, 3}, []float64{1, 2, 3}); p != 1 {
		t.Errorf("identical samples: p = %g", p)
	}
}

func TestTaskFarm(t *testing.T) {
	tb := testbedOf(t, "name: t\nhosts:\n  m: {}\n  w: {}\nlinks:\n  - {between: [m, w], rate: 34Mbit, delay: 156ms}\n")
	w := Workload{Name: "remote", Kind: "taskfarm", Testbed: tb}
	// 4 workers, 120 tasks of 1 s, each paying 0.312 s: 30 rounds of 1.312 s.
	cfg := scenario.Step{Spec: &taskfarm.Spec{Master: "m", Workers: []string{"w"}, Count: 4, Tasks: 120, Duration: time.Second, Prefetch: 1}}
	w.Steps = []Step{{Label: "prefetch=1", Status: "done", Config: cfg, Metrics: map[string]float64{
		"seconds": 39.36, "tasks_done": 120, "task_rate_hz": 120 / 39.36, "efficiency": 30 / 39.36, "worker_idle_share": 0.24, "link_utilization_pct.m->w": 1}}}
	r := Of([]Workload{w}, DefaultOptions)
	var cross Finding
	for _, f := range r.Findings {
		if f.Values["crossover_duration_s"] > 0 {
			cross = f
		}
	}
	if got := cross.Values["median_overhead_s"]; math.Abs(got-0.312) > 0.001 {
		t.Errorf("overhead %v, want 0.312 s", got)
	}
	if got := cross.Values["crossover_duration_s"]; math.Abs(got-19*0.312) > 0.01 {
		t.Errorf("crossover %v, want 5.93 s", got)
	}
	if v := r.Workloads[0].Steps[0]; v.Bottleneck != Latency {
		t.Errorf("remote farm verdict %+v, want latency", v)
	}
}

func TestTuningAndModelFit(t *testing.T) {
	tb := testbedOf(t, "name: t\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b], rate: 100Mbit, delay: 12.5ms}\n")
	w := Workload{Name: "streams", Kind: "throughput", Testbed: tb}
	for i, n := range []int{1, 2, 4, 8} {
		// A 64 KiB window over 25 ms carries 21 Mbit/s per stream.
		measured := math.Min(20.5*float64(n), 95)
		w.Steps = append(w.Steps, Step{Index: i, Label: fmt.Sprintf("streams=%d", n), Params: map[string]string{"streams": fmt.Sprint(n)}, Status: "done",
			Metrics: map[string]float64{"throughput_mbps": measured, "link_utilization_pct.a->b": measured},
			Config:  scenario.Step{Spec: &throughput.Step{From: "a", To: "b", Streams: n, Window: 64 << 10, Protocol: "tcp"}}})
	}
	r := Of([]Workload{w}, DefaultOptions)
	tu := find(t, r, "tuning")
	if tu.Values["best_streams"] != 8 || math.Abs(tu.Values["gain"]-95/20.5) > 0.01 || math.Abs(tu.Values["bdp_bytes"]-312500) > 1 {
		t.Errorf("tuning %+v", tu.Values)
	}
	fit := find(t, r, "model_fit")
	if fit.Values["mean_abs_residual"] > 0.05 || fit.Values["steps"] != 4 {
		t.Errorf("model fit %+v %q", fit.Values, fit.Text)
	}
	if v := r.Workloads[0].Steps[0]; v.Bottleneck != Latency {
		t.Errorf("one window-limited stream: %+v, want latency", v)
	}
	if v := r.Workloads[0].Steps[3]; v.Bottleneck != Network {
		t.Errorf("8 streams at 95%%: %+v, want network", v)
	}
}

func TestShortReason(t *testing.T) {
	for in, want := range map[string]string{
		"job 12: reading page 4411 (event 3 of 60): read tcp 10.250.0.2:45678->10.250.0.1:34567: i/o timeout": "reading page N: read tcp ADDR->ADDR: i/o timeout",
		"job 3: opening a session: dial tcp 10.250.0.1:7000: connect: connection refused":                     "opening a session: dial tcp ADDR: connect: connection refused",
		"checksum mismatch": "checksum mismatch",
	} {
		if got := shortReason(in); got != want {
			t.Errorf("shortReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReportJSONGolden pins the JSON shape of an analysis.
func TestReportJSONGolden(t *testing.T) {
	r := Of([]Workload{ramp(t)}, DefaultOptions)
	r.Run, r.Scenario, r.Status = 7, "objectivity-lan-100m", "done"
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/ramp.json", b.String())
}

func TestImpact(t *testing.T) {
	w := Workload{Name: "impact", Kind: "impact", Steps: []Step{{Status: "done",
		Config:  scenario.Step{Spec: &impactkind.Step{ProbeFrom: "probe", ProbeTo: "cern", From: "slac", To: "cern", Streams: 15}},
		Metrics: map[string]float64{"idle_rtt_p50_ms": 221, "loaded_rtt_p50_ms": 289, "rtt_inflation_ms": 68, "idle_lost_percent": 0, "loaded_lost_percent": 0.66, "loss_increase_points": 0.66, "load_mbps": 9.4}}}}
	f := find(t, Of([]Workload{w}, DefaultOptions), "impact")
	if f.Values["rtt_inflation_ms"] != 68 || !strings.Contains(f.Text, "from 221.0 to 289.0 ms (+68.0 ms)") || !strings.Contains(f.Text, "15 streams") {
		t.Errorf("impact %+v %q", f.Values, f.Text)
	}
}

// TestLimitingFactor: a step that reached what its path allows was held by
// the path (the link or the window); one well short of it on a busy
// machine by the test-bed; one short on an idle machine by TCP; a failed
// step says why.
func TestLimitingFactor(t *testing.T) {
	tb := testbedOf(t, "name: t\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b], rate: 10Gbit, delay: 8.5ms, mtu: 9000}\n")
	w := Workload{Name: "paix", Kind: results.Throughput, Testbed: tb}
	step := func(label string, window int64, mbps, machine, engine float64, status string) Step {
		return Step{Label: label, Status: status, Reason: "no such congestion control",
			Config:  scenario.Step{Spec: &throughput.Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Window: window, Duration: 30 * time.Second}},
			Metrics: map[string]float64{results.ThroughputMbps: mbps, "cpu_pct.machine": machine, "cpu_pct.engine": engine, "link_utilization_pct.a->b": mbps / 100}}
	}
	w.Steps = []Step{
		step("link", 30e6, 9500, 50, 60, "done"),
		step("window", 1e6, 460, 10, 10, "done"),
		step("testbed", 30e6, 6000, 93, 150, "done"),
		step("tcp", 30e6, 3000, 20, 30, "done"),
		step("missing", 30e6, 0, 0, 0, "failed"),
	}
	var ws WorkloadSteps
	for _, s := range w.Steps {
		ws.Steps = append(ws.Steps, verdict(w, s, DefaultOptions))
	}
	if ws.Steps[2].Bottleneck != Testbed || ws.Steps[3].Bottleneck == Testbed {
		t.Errorf("verdicts: testbed step %q, tcp step %q", ws.Steps[2].Bottleneck, ws.Steps[3].Bottleneck)
	}
	f := limitingFactor(w, ws)
	if len(f) != 1 {
		t.Fatalf("%d findings, want 1", len(f))
	}
	text := f[0].Text
	for _, want := range []string{
		"link: 9.5 Gbit/s, 96% of the 9.94 Gbit/s the path allows (the link, 10 Gbit/s): the path held it",
		"window: 460 Mbit/s, 98% of the 470.6 Mbit/s the path allows (the window, 1 stream x 1MB over 17 ms): the path held it",
		"testbed: 6 Gbit/s, 60% of the 9.94 Gbit/s the path allows (the link, 10 Gbit/s): the test-bed held it, not the path (the machine's CPUs were 93% busy",
		"tcp: 3 Gbit/s, 30% of the 9.94 Gbit/s the path allows (the link, 10 Gbit/s): TCP itself fell short",
		"missing failed (no such congestion control)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("finding lacks %q:\n%s", want, text)
		}
	}
	if f[0].Values["link_steps"] != 1 || f[0].Values["window_steps"] != 1 || f[0].Values["testbed_steps"] != 1 || f[0].Values["tcp_steps"] != 1 || f[0].Values["failed_steps"] != 1 {
		t.Errorf("values %v", f[0].Values)
	}
}

// TestSingleThroughputFinding: an imported UDP test's finding showed
// retransmits (none in UDP) and neither its loss nor its jitter, though
// both are stored.
func TestSingleThroughputFinding(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		metrics  map[string]float64
		text     string
		values   map[string]float64
	}{
		{"tcp", map[string]float64{"throughput_mbps": 941.5, "retransmits": 9},
			"127.0.0.1->10.0.0.2: 941.50 Mbit/s with 2 streams (9 retransmits).", map[string]float64{"retransmits": 9}},
		{"udp", map[string]float64{"throughput_mbps": 20.18, "lost_percent": 0.25, "jitter_ms": 0.0672},
			"127.0.0.1->10.0.0.2: 20.18 Mbit/s of UDP with 2 streams, 0.25% lost, jitter 0.067 ms.", map[string]float64{"lost_percent": 0.25, "jitter_ms": 0.0672}},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			w := Workload{Name: "iperf3", Kind: "throughput", Steps: []Step{{Status: "done", Metrics: tc.metrics,
				Config: scenario.Step{Spec: &throughput.Step{From: "127.0.0.1", To: "10.0.0.2", Protocol: tc.protocol, Streams: 2}}}}}
			f := find(t, Of([]Workload{w}, DefaultOptions), "throughput")
			if f.Text != tc.text {
				t.Errorf("text %q, want %q", f.Text, tc.text)
			}
			for k, v := range tc.values {
				if got, ok := f.Values[k]; !ok || got != v {
					t.Errorf("values %v: want %s = %v", f.Values, k, v)
				}
			}
			if _, ok := f.Values["retransmits"]; ok && tc.protocol == "udp" {
				t.Errorf("a UDP test's finding has retransmits: %v", f.Values)
			}
		})
	}
}

// TestVerdictCPUOverQuota: a server with a quota was judged, and shown, at
// 124-250% of it on steps under a second: a share of a quota over so short
// a window is no measurement (results.QuotaShare), nor is one over 100%.
func TestVerdictCPUOverQuota(t *testing.T) {
	tb := testbedOf(t, serverClient) // the server has half a core
	w := Workload{Name: "w", Kind: "eventdb", Testbed: tb}
	cfg := scenario.Step{Spec: &eventdb.Spec{Server: "server", Clients: []string{"client"}, ServerModel: "threads"}}
	for _, tc := range []struct {
		name      string
		seconds   float64
		serverPct float64 // of one core
		want      string
		evidence  float64
	}{
		{"124% over 0.4 s", 0.4, 62, Latency, 0},
		{"250%, time not stored", 0, 125, Latency, 0},
		{"105% over 2 s", 2, 52.5, ServerCPU, 100},
		{"96% over 10 s", 10, 48, ServerCPU, 96},
		{"96%, time not stored", 0, 48, ServerCPU, 96},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]float64{"throughput_mbps": 1, "link_utilization_pct.server->client": 2, "cpu_pct.server": tc.serverPct, "cpu_pct.client": 3}
			v := verdict(w, Step{Metrics: m, Seconds: tc.seconds, Config: cfg, Status: "done"}, DefaultOptions)
			if v.Bottleneck != tc.want || tc.evidence > 0 && math.Abs(v.Evidence["server_cpu_pct"]-tc.evidence) > 1e-9 {
				t.Errorf("%+v, want %s at %v%%", v, tc.want, tc.evidence)
			}
			if unknown := tc.evidence == 0; unknown != strings.Contains(v.Why, "not known") || unknown && v.Confidence != "low" {
				t.Errorf("%+v: the server's CPU unknown: %v, want it said, at low confidence", v, unknown)
			}
			for k, e := range v.Evidence {
				if strings.Contains(k, "cpu") && e > 100 {
					t.Errorf("evidence %s = %v%%", k, e)
				}
			}
		})
	}
}

// TestVerdictCPUNotKnown: a step under a second cannot tell a share of
// a host's quota; its verdict said the step waited on round trips, or
// named the link, as confidently as with the CPU known. It says which CPU
// is not known, one confidence lower.
func TestVerdictCPUNotKnown(t *testing.T) {
	serverQuota := testbedOf(t, "name: t\nhosts:\n  server: {cpus: 0.5}\n  client: {}\nlinks:\n  - {between: [client, server], rate: 100Mbit, delay: 0.1ms}\n")
	bothQuotas := testbedOf(t, serverClient)
	cfg := scenario.Step{Spec: &eventdb.Spec{Server: "server", Clients: []string{"client"}, ServerModel: "threads"}}
	const short = "(a step of 0.5 s is too short to tell a share of a CPU quota, which takes 1s)"
	for _, tc := range []struct {
		name       string
		testbed    *scenario.Testbed
		seconds    float64
		link       float64
		bottleneck string
		confidence string
		why        string
	}{
		{"latency, the CPU known", serverQuota, 2, 40, Latency, "medium", "no resource was full (busiest: link server->client at 40%): the step waited on round trips"},
		{"latency, the CPU not known", serverQuota, 0.5, 40, Latency, "low", "no resource known was full (busiest: link server->client at 40%), " +
			"but the CPU of the server (host server) is not known " + short + ": the step waited on round trips, or on that CPU"},
		{"latency, two CPUs not known", bothQuotas, 0.5, 40, Latency, "low", "no resource known was full (busiest: link server->client at 40%), " +
			"but the CPU of the server (host server) and the CPU of the client (host client) are not known " + short + ": the step waited on round trips, or on those CPUs"},
		{"a full link, the CPU known", serverQuota, 2, 98, Network, "high", "link server->client was 98% busy"},
		{"a full link, the CPU not known", serverQuota, 0.5, 98, Network, "medium", "link server->client was 98% busy; but the CPU of the server (host server) is not known " + short},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Name: "w", Kind: "eventdb", Testbed: tc.testbed}
			m := map[string]float64{"throughput_mbps": 1, "link_utilization_pct.server->client": tc.link, "cpu_pct.server": 20, "cpu_pct.client": 3}
			v := verdict(w, Step{Metrics: m, Seconds: tc.seconds, Config: cfg, Status: "done"}, DefaultOptions)
			if v.Bottleneck != tc.bottleneck || v.Confidence != tc.confidence || v.Why != tc.why {
				t.Errorf("got %s (%s): %q\nwant %s (%s): %q", v.Bottleneck, v.Confidence, v.Why, tc.bottleneck, tc.confidence, tc.why)
			}
		})
	}
}

// TestJobStatusesKnown: the failures finding counts a step's jobs by the
// statuses results knows (jobs_STATUS); a job can end with no other.
func TestJobStatusesKnown(t *testing.T) {
	for _, st := range []string{job.OK, job.Timeout, job.Failed, job.Corrupt, job.Cancelled} {
		if f, ok := results.ParseFigure(results.JobsWith(st).String()); !ok || f.Status != st {
			t.Errorf("jobs that ended %q: %+v, %v", st, f, ok)
		}
	}
}
