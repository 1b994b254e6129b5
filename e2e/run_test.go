package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// runScenario writes a scenario and runs it with wanlab run --json, returning
// the result, the archive's path and how the command ended.
func runScenario(t *testing.T, yaml string, extra ...string) (*controller.Result, string, result) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, scenarioName(t, yaml)+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	r := wanlab(t, append([]string{"run", path, "--json", "--db", db}, extra...)...)
	t.Cleanup(func() { assertNothingLeft(t, scenarioName(t, yaml)) })
	var res controller.Result
	if r.stdout != "" {
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("wanlab run --json: %v\n%s\n%s", err, r.stdout, r.stderr)
		}
	}
	return &res, db, r
}

// syncBuffer is a buffer a child process writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startRun starts wanlab in the background and returns once its progress
// (on stderr) shows mark, or after a minute.
func startRun(t *testing.T, mark string, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(wanlabBin, args...)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(stderr.String(), mark) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	return cmd, stdout, stderr
}

// query runs one SQL query on an archive and returns the first column of
// the first row.
func query(t *testing.T, db, q string, args ...any) float64 {
	t.Helper()
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var v float64
	if err := conn.QueryRow(q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// TestRunEventDBNetworkBound: with no CPU costs and enough jobs, an event
// server moves close to the link's rate, every job reads what it should,
// and the archive holds the steps, jobs and 10 Hz link samples.
func TestRunEventDBNetworkBound(t *testing.T) {
	testsupport.NeedRoot(t)
	res, db, r := runScenario(t, `name: e2e-evdb
hosts:
  server: {}
  client: {}
links:
  - between: [client, server]
    rate: 10Mbit
    delay: 1ms
workloads:
  - name: ramp
    eventdb: {server: server, clients: [client], events: 1000, events_per_job: 40, server_model: connection}
    sweep: {jobs: [1, 8]}
`)
	if r.code != 0 || res.Status != "done" || len(res.Steps) != 2 {
		t.Fatalf("exit %d, status %s, %d steps\n%s", r.code, res.Status, len(res.Steps), r.stderr)
	}
	ceiling := 10e6 * 1448 / 1500 / 1e6
	for _, s := range res.Steps {
		m := s.Metrics
		if m["jobs_ok"] != m["jobs"] {
			t.Errorf("step %s: %v of %v jobs ok", s.Label, m["jobs_ok"], m["jobs"])
		}
		// 40 events of 40,000 B span 196 or 197 pages of 8 KiB.
		perJob := query(t, db, `SELECT AVG(bytes) FROM jobs j JOIN steps s ON s.id = j.step_id WHERE s.idx = ?`, s.Index)
		if perJob < 196*8192 || perJob > 197*8192 {
			t.Errorf("step %s: a job read %.0f B, want 196-197 pages", s.Label, perJob)
		}
	}
	eight := res.Steps[1].Metrics
	if got := eight["throughput_mbps"]; got < 0.85*ceiling || got > ceiling*1.01 {
		t.Errorf("8 jobs moved %.2f Mbit/s of user data; the link carries at most %.2f", got, ceiling)
	}
	if u := eight["link_utilization_pct.server->client"]; u < 85 {
		t.Errorf("server->client utilisation %.1f%%, want >= 85%%", u)
	}
	// One job alone is bound by the round trip of page requests: slower.
	if one := res.Steps[0].Metrics["throughput_mbps"]; one >= eight["throughput_mbps"] {
		t.Errorf("one job %.2f Mbit/s, eight %.2f: one page at a time should not fill the link", one, eight["throughput_mbps"])
	}
	// Every job's connection has its TCP round trip: at least the path's 2 ms.
	if rtt := query(t, db, `SELECT MIN(tcp_rtt_ms) FROM jobs`); rtt < 2 || rtt > 100 {
		t.Errorf("jobs' TCP round trip min %.2f ms, want at least the path's 2 ms", rtt)
	}
	// Samples: link and CPU at 10 Hz for the step's duration.
	rate := query(t, db, `SELECT COUNT(*) / (MAX(t) - MIN(t)) FROM samples WHERE metric = 'bandwidth.utilized' AND subject = 'link server->client'`)
	if rate < 8 || rate > 12 {
		t.Errorf("link samples at %.1f Hz, want about 10", rate)
	}
	if n := query(t, db, `SELECT COUNT(*) FROM samples WHERE metric = 'cpu.utilization' AND subject = 'host server'`); n < 5 {
		t.Errorf("%v server CPU samples", n)
	}
	if res.Samples == 0 || res.StoredBytes == 0 {
		t.Errorf("result says %d samples, %d B stored", res.Samples, res.StoredBytes)
	}
}

// TestRunEventDBTimeouts: a single-threaded server that is too slow for
// its clients' RPC timeout fails jobs as timeouts, with the reason, and the
// run is still done (the step measured what happened). 20 jobs queue for
// one request at a time of 5 ms of CPU at a 0.2 core quota (~25 ms each):
// the last in line waits ~500 ms, past the 300 ms timeout.
func TestRunEventDBTimeouts(t *testing.T) {
	testsupport.NeedRoot(t)
	res, db, r := runScenario(t, `name: e2e-evto
hosts:
  server: {cpus: 0.2}
  client: {}
links:
  - between: [client, server]
    rate: 100Mbit
workloads:
  - eventdb: {server: server, clients: [client], events: 1000, events_per_job: 4, jobs: 20, server_cpu_per_page: 5ms, timeout: 300ms}
`)
	if r.code != 0 || len(res.Steps) != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m := res.Steps[0].Metrics
	if m["jobs_timeout"] == 0 {
		t.Fatalf("no job timed out: %v", m)
	}
	if n := query(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'timeout' AND reason LIKE '%page%'`); n != m["jobs_timeout"] {
		t.Errorf("%v timeouts stored with a reason naming the page, %v counted", n, m["jobs_timeout"])
	}
	if n := query(t, db, `SELECT COUNT(*) FROM events WHERE message LIKE '%timed out%'`); n != 1 {
		t.Errorf("%v events about the timeouts", n)
	}
}

// TestRunTaskFarm: the farm's total time is the ideal time plus a round
// trip per task when the master hands out one task at a time.
func TestRunTaskFarm(t *testing.T) {
	testsupport.NeedRoot(t)
	res, _, r := runScenario(t, `name: e2e-farm
hosts:
  master: {}
  w1: {}
  w2: {}
links:
  - {between: [master, w1], rate: 100Mbit, delay: 10ms}
  - {between: [master, w2], rate: 100Mbit, delay: 10ms}
workloads:
  - taskfarm: {master: master, workers: [w1, w2], count: 4, tasks: 40, duration: 100ms}
    sweep: {prefetch: [1, 2]}
`)
	if r.code != 0 || len(res.Steps) != 2 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	one, two := res.Steps[0].Metrics, res.Steps[1].Metrics
	// 10 rounds of (100 ms task + 20 ms round trip).
	if got := one["seconds"]; got < 1.2 || got > 1.2*1.25 {
		t.Errorf("prefetch 1 took %.2f s, want about 1.2 s (40 x (0.1 + 0.02) / 4)", got)
	}
	if got := one["roundtrip_p50_ms"]; got < 119 || got > 135 {
		t.Errorf("prefetch 1 task round trip p50 %.1f ms, want about 120", got)
	}
	// With a task waiting at each worker the round trip is hidden.
	if got := two["seconds"]; got > 1.0*1.15+0.03 || got >= one["seconds"] {
		t.Errorf("prefetch 2 took %.2f s, want about 1.0 s and less than prefetch 1's %.2f", got, one["seconds"])
	}
	if one["tasks_done"] != 40 || two["tasks_done"] != 40 {
		t.Errorf("tasks done %v, %v", one["tasks_done"], two["tasks_done"])
	}
}

// TestRunMesh: every node transfers to its peers there and back with
// checksums; the links show the traffic.
func TestRunMesh(t *testing.T) {
	testsupport.NeedRoot(t)
	res, db, r := runScenario(t, `name: e2e-mesh
hosts:
  a: {site: a}
  b: {site: b}
  c: {site: c}
sites:
  a: {rate: 50Mbit, delay: 2ms}
  b: {rate: 20Mbit, delay: 2ms}
  c: {rate: 20Mbit, delay: 2ms}
workloads:
  - mesh: {duration: 4s, max_wait: 200ms, sizes: [2MB, 1MB], streams: 4}
`)
	if r.code != 0 || len(res.Steps) != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m := res.Steps[0].Metrics
	if m["transfers"] < 3 || m["jobs_ok"] != m["transfers"] {
		t.Fatalf("%v transfers, %v ok", m["transfers"], m["jobs_ok"])
	}
	if n := query(t, db, `SELECT COUNT(DISTINCT host) FROM jobs`); n != 3 {
		t.Errorf("transfers from %v hosts, want all 3", n)
	}
	if n := query(t, db, `SELECT COUNT(*) FROM jobs WHERE bytes NOT IN (4000000, 2000000)`); n != 0 {
		t.Errorf("%v transfers did not move their file there and back", n)
	}
	// What the nodes moved crossed the sites' up links (plus headers).
	var up float64
	for _, site := range []string{"a", "b", "c"} {
		up += m["link_mbps.site "+site+" up"]
	}
	moved := m["bytes"] * 8 / res.Steps[0].Seconds / 1e6
	if up < moved*0.95 {
		t.Errorf("up links carried %.1f Mbit/s, the transfers %.1f", up, moved)
	}
}

// TestRunInterruptAndResume: Ctrl-C during a run keeps the finished steps,
// marks the run interrupted and tears the test-bed down; --resume runs the
// rest.
func TestRunInterruptAndResume(t *testing.T) {
	testsupport.NeedRoot(t)
	yaml := `name: e2e-resume
hosts:
  a: {}
  b: {}
links:
  - {between: [a, b], rate: 20Mbit, delay: 2ms}
workloads:
  - throughput: {from: a, to: b, duration: 2s}
    sweep: {streams: [1, 2, 4]}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "resume.yaml")
	os.WriteFile(path, []byte(yaml), 0o644)
	db := filepath.Join(dir, "runs.db")
	cmd, _, stderr := startRun(t, "step 2/3", "run", path, "--db", db)
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("interrupted run: %v\n%s", err, stderr.String())
	}
	assertNothingLeft(t, "e2e-resume")
	if s := query(t, db, `SELECT COUNT(*) FROM steps WHERE status = 'done'`); s != 1 {
		t.Errorf("%v steps done after the interruption, want 1", s)
	}
	if s := query(t, db, `SELECT COUNT(*) FROM runs WHERE status = 'interrupted' AND reason LIKE '%interrupt%'`); s != 1 {
		t.Errorf("the run is not marked interrupted")
	}
	if s := query(t, db, `SELECT COUNT(*) FROM steps WHERE status = 'interrupted'`); s != 1 {
		t.Errorf("the step under way is not marked interrupted")
	}

	r := wanlab(t, "run", "--resume", "1", "--db", db, "--json")
	var res controller.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 {
		t.Fatalf("resume: exit %d: %v\n%s", r.code, err, r.stderr)
	}
	if res.Status != "done" || len(res.Steps) != 3 || !res.Steps[0].Resumed || res.Steps[1].Resumed || res.Steps[2].Metrics["throughput_mbps"] < 15 {
		t.Errorf("resumed run: %+v", res)
	}
	assertNothingLeft(t, "e2e-resume")
	if r := wanlab(t, "run", "--resume", "1", "--db", db); r.code != 1 || !strings.Contains(r.stderr, "nothing to resume") {
		t.Errorf("resuming a finished run: exit %d: %s", r.code, r.stderr)
	}
}

// TestRunHangUp: a hang-up (the terminal of a long run closed) stops the run
// as Ctrl-C does: test-bed down, the run marked interrupted with the reason.
func TestRunHangUp(t *testing.T) {
	testsupport.NeedRoot(t)
	cmd, stderr, db := startLongRun(t, "e2e-hup")
	cmd.Process.Signal(syscall.SIGHUP)
	if err := cmd.Wait(); err == nil || !strings.Contains(stderr.String(), "hangup received") {
		t.Fatalf("hung-up run: %v\n%s", err, stderr.String())
	}
	assertNothingLeft(t, "e2e-hup")
	if s := query(t, db, `SELECT COUNT(*) FROM runs WHERE status = 'interrupted' AND reason LIKE '%hangup%'`); s != 1 {
		t.Errorf("the run is not marked interrupted by the hang-up")
	}
}

// startLongRun starts a run of scenario name (one 30 s throughput step) and
// returns once the step has been under way a second.
func startLongRun(t *testing.T, name string) (cmd *exec.Cmd, stderr *syncBuffer, db string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name+".yaml")
	os.WriteFile(path, []byte("name: "+name+"\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b], rate: 10Mbit}\nworkloads:\n  - throughput: {from: a, to: b, duration: 30s}\n"), 0o644)
	db = filepath.Join(dir, "runs.db")
	cmd, _, stderr = startRun(t, "step 1/1", "run", path, "--db", db)
	time.Sleep(time.Second)
	return cmd, stderr, db
}

// TestRunControllerKilled: SIGKILL of wanlab run takes the test-bed down
// (its daemon watches its owner) and the next look at the archive marks the
// run interrupted with the reason.
func TestRunControllerKilled(t *testing.T) {
	testsupport.NeedRoot(t)
	cmd, _, db := startLongRun(t, "e2e-killed")
	cmd.Process.Kill()
	cmd.Wait()
	for range 40 {
		if _, err := os.Stat("/run/wanlab/e2e-killed"); err != nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	assertNothingLeft(t, "e2e-killed")
	// The scenario reaches the test-bed's daemon as text: no copy of it is
	// left in /tmp for a killed run to strand.
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "wanlab-run-e2e-killed-*")); len(left) > 0 {
		t.Errorf("a killed run left %v behind", left)
	}
	r := wanlab(t, "runs", "--db", db, "--json")
	if !strings.Contains(r.stdout, `"status": "interrupted"`) || !strings.Contains(r.stdout, "killed") {
		t.Errorf("after SIGKILL, runs says:\n%s", r.stdout)
	}
}

// TestRunAgentKilled: a client's agent killed mid-step fails that step with
// the host named; the run goes on and ends partial.
func TestRunAgentKilled(t *testing.T) {
	testsupport.NeedRoot(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.yaml")
	os.WriteFile(path, []byte(`name: e2e-agentkill
hosts:
  server: {}
  client: {}
links:
  - {between: [client, server], rate: 2Mbit, delay: 5ms}
workloads:
  - eventdb: {server: server, clients: [client], events: 1000, events_per_job: 100, jobs: 4}
  - name: after
    probe: {from: client, to: server, count: 5, interval: 20ms}
`), 0o644)
	db := filepath.Join(dir, "runs.db")
	cmd, stdout, stderr := startRun(t, "step 1/2", "run", path, "--db", db, "--json")
	time.Sleep(1500 * time.Millisecond)
	if out, err := exec.Command("pkill", "-KILL", "-f", "agent --host client --socket /run/wanlab/e2e-agentkill/").CombinedOutput(); err != nil {
		t.Fatalf("killing the agent: %v %s", err, out)
	}
	err := cmd.Wait()
	assertNothingLeft(t, "e2e-agentkill")
	var res controller.Result
	if jerr := json.Unmarshal([]byte(stdout.String()), &res); jerr != nil {
		t.Fatalf("%v: %v\n%s\n%s", err, jerr, stdout.String(), stderr.String())
	}
	if res.Status != "partial" || len(res.Steps) != 2 {
		t.Fatalf("run %s with %d steps, want partial with 2", res.Status, len(res.Steps))
	}
	first := res.Steps[0]
	if first.Status == "done" || !strings.Contains(first.Reason, "client") {
		t.Errorf("step with the killed agent: %s: %s", first.Status, first.Reason)
	}
	if res.Steps[1].Status != "done" {
		t.Errorf("the next step (the agent restarted): %s %s", res.Steps[1].Status, res.Steps[1].Reason)
	}
}
