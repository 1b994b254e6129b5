package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// TestRunBadInput: a scenario that cannot run is refused before anything
// starts, with the place in the file; exit 2.
func TestRunBadInput(t *testing.T) {
	testsupport.NeedRoot(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: e2e-bad\nhosts:\n  a: {}\n  b: {}\nworkloads:\n  - eventdb: {server: a, clients: [c]}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", bad}, 2, `bad.yaml:6: workloads[0].eventdb.clients[0]: unknown host "c"`},
		{[]string{"run", "no-such-scenario"}, 2, "no scenario file or built-in scenario"},
		{[]string{"run"}, 2, "accepts 1 arg"},
		{[]string{"run", "--resume", "5", bad}, 2, "unknown command"},
		{[]string{"run", "--resume", "5", "--db", filepath.Join(dir, "empty.db")}, 1, "run 5: no such run"},
	} {
		r := wanlab(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("wanlab %v: exit %d: %s\nwant exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	// No test-bed was built for a scenario that does not parse.
	assertNothingLeft(t, "e2e-bad")
}

// TestRunPostgres stores a run in PostgreSQL (the suite's private server, or
// WANLAB_TEST_POSTGRES's) and reads it back through the archive verbs.
func TestRunPostgres(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "postgresql-client")
	url := pgSchema(t, testsupport.Postgres(t))
	dir := t.TempDir()
	path := filepath.Join(dir, "pg.yaml")
	os.WriteFile(path, []byte("name: e2e-pg\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b], rate: 10Mbit, delay: 5ms}\nworkloads:\n  - probe: {from: a, to: b, count: 20, interval: 10ms}\n    sweep: {count: [10, 20]}\n"), 0o644)
	if r := wanlab(t, "run", path, "--db", url); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	r := wanlab(t, "runs", "--db", url, "--json")
	if !strings.Contains(r.stdout, `"status": "done"`) {
		t.Fatalf("runs from PostgreSQL: %s %s", r.stdout, r.stderr)
	}
	out := wanlab(t, "export", "1", "--db", url, "--format", "csv").stdout
	if n := strings.Count(out, "delay.roundtrip"); n != 30 {
		t.Errorf("exported %d round trips of 30 probes", n)
	}
	if strings.Contains(r.stderr, "secret") {
		t.Error("a password was printed")
	}
}

// pgSchema creates a schema for one test and returns a URL that uses it.
func pgSchema(t *testing.T, url string) string {
	schema := fmt.Sprintf("wanlab_e2e_%d", time.Now().UnixNano())
	out, err := exec.Command("psql", url, "-c", "CREATE SCHEMA "+schema).CombinedOutput()
	if err != nil {
		t.Fatalf("creating a schema: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("psql", url, "-c", "DROP SCHEMA "+schema+" CASCADE").Run() })
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

// TestRunBuiltin runs a built-in scenario by name: objectivity-lan-100m
// stands in for the seed's LAN 2, where the single-threaded server's CPU,
// not the 100 Mbit/s link, is the limit.
func TestRunBuiltin(t *testing.T) {
	testsupport.NeedRoot(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	r := wanlab(t, "run", "objectivity-lan-100m", "--quick", "--json", "--db", db)
	assertNothingLeft(t, "objectivity-lan-100m")
	var res controller.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 {
		t.Fatalf("exit %d: %v\n%s", r.code, err, r.stderr)
	}
	last := res.Steps[len(res.Steps)-1].Metrics
	if last["server_cpu_quota_pct"] < 90 {
		t.Errorf("server at %.0f%% of its quota with %v jobs: the seed's server saturates", last["server_cpu_quota_pct"], last["jobs"])
	}
	if u := last["link_utilization_pct.server->client"]; u > 93 {
		t.Errorf("the link is %.0f%% busy: the server's CPU should limit before the link does", u)
	}
	if last["jobs_ok"] != last["jobs"] || res.Steps[0].Params["jobs"] != "1" {
		t.Errorf("steps %+v", res.Steps)
	}
}

// TestObjectivityBottlenecks: on the built-in Objectivity scenarios the
// analysis names the bottleneck the seed names for each link speed: the
// client's CPU at 1000 Mbit/s, the server's at 100 Mbit/s. The CPU-bound
// cases run alone; TestObjectivityNetworkBound has the slow links.
func TestObjectivityBottlenecks(t *testing.T) {
	testsupport.NeedRoot(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	runBottleneck(t, db, "objectivity-lan-1000m", "client_cpu")
	runBottleneck(t, db, "objectivity-lan-100m", "server_cpu")
	// The analysis verb reads the same from the archive.
	r := wanlab(t, "analyze", "2", "--db", db)
	if r.code != 0 || !strings.Contains(r.stdout, "bottleneck: server_cpu") || !strings.Contains(r.stdout, "Efficient running") {
		t.Errorf("analyze 2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestObjectivityNetworkBound: at 10 and 2 Mbit/s the analysis names the
// network, as the seed does. Those runs spend their time waiting on slow
// links, so they run beside the other tests that mostly wait.
func TestObjectivityNetworkBound(t *testing.T) {
	t.Parallel()
	testsupport.NeedRoot(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	runBottleneck(t, db, "objectivity-lan-10m", "network")
	runBottleneck(t, db, "objectivity-wan-2m", "network")
}

// runBottleneck runs a built-in scenario with --quick and checks the
// bottleneck its analysis names.
func runBottleneck(t *testing.T, db, scenario, want string) {
	t.Helper()
	r := wanlab(t, "run", scenario, "--quick", "--json", "--db", db)
	var doc struct {
		controller.Result
		Analysis struct {
			Bottleneck string `json:"bottleneck"`
			Findings   []struct {
				Kind       string `json:"kind"`
				Bottleneck string `json:"bottleneck"`
				Text       string `json:"text"`
			} `json:"findings"`
		} `json:"analysis"`
	}
	r.decode(t, scenario+": ", &doc)
	if doc.Analysis.Bottleneck != want {
		t.Errorf("%s: bottleneck %q, want %q (the seed's); findings: %+v", scenario, doc.Analysis.Bottleneck, want, doc.Analysis.Findings)
	}
	assertNothingLeft(t, scenario)
}

// TestDiskCap: a host whose disk reads 4 MB/s sends a file over a
// 100 Mbit/s path. The transfer runs at the disk's 32 Mbit/s, the sampler
// sees the disk reads, and the analysis names the disk; dd in the host,
// with O_DIRECT, sees the write cap too.
func TestDiskCap(t *testing.T) {
	testsupport.NeedRoot(t)
	const scenario = `name: e2e-disk
hosts:
  a: {disk: {read: 4MB/s, write: 8MB/s}}
  b: {}
links:
  - between: [a, b]
    rate: 100Mbit
    delay: 2ms
workloads:
  - name: send
    transfer: {from: a, to: b, size: 16MB, streams: 4}
`
	dir := t.TempDir()
	path, db := filepath.Join(dir, "disk.yaml"), filepath.Join(dir, "runs.db")
	os.WriteFile(path, []byte(scenario), 0o644)
	r := wanlab(t, "run", path, "--json", "--db", db)
	var doc struct {
		controller.Result
		Analysis struct {
			Bottleneck string `json:"bottleneck"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || len(doc.Steps) != 1 {
		t.Fatalf("wanlab run: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	m := doc.Steps[0].Metrics
	// 4 MB/s is 32 Mbit/s; the path's TCP ceiling is 96.5.
	if got := m["throughput_mbps"]; got < 0.85*32 || got > 1.05*32 {
		t.Errorf("transfer from a host whose disk reads 4 MB/s: %.1f Mbit/s, want about 32", got)
	}
	if doc.Analysis.Bottleneck != "disk" {
		t.Errorf("bottleneck %q, want disk; metrics %v", doc.Analysis.Bottleneck, m)
	}
	// The step's mean disk read covers the file's making too: most of 16 MB over the step.
	if got := m["disk_read_mbs.a"] * doc.Steps[0].Seconds; got < 14 || got > 20 {
		t.Errorf("host a read %.1f MB from its disk by its cgroup's counters, want about the 16 MB file", got)
	}
	// Sending 16 MB at 4 MB/s keeps the disk at its cap for about 4 s: 40
	// samples at 10 Hz.
	if n := query(t, db, `SELECT count(*) FROM samples WHERE metric = 'disk.read' AND subject = 'host a' AND value >= 0.9 * 4e6`); n < 30 || n > 60 {
		t.Errorf("%.0f disk.read samples of host a at its 4 MB/s cap, want about 40", n)
	}
	assertNothingLeft(t, "e2e-disk")

	// The same cap for a real tool: dd writing with O_DIRECT in the host,
	// into its data directory.
	name := up(t, "name: e2e-dd\nhosts:\n  a: {disk: {write: 4MB/s}}\n")
	rate, err := runner(name).DD(context.Background(), "a", `if=/dev/zero of="$TMPDIR/f" bs=1M count=12 oflag=direct`)
	if err != nil {
		t.Fatal(err)
	}
	if rate < 0.8*4e6 || rate > 1.2*4e6 {
		t.Errorf("dd wrote at %.2f MB/s in a host capped at 4 MB/s", rate/1e6)
	}
	out, err := exec.Command(wanlabBin, "testbed", "exec", name, "a", "--", "sh", "-c", `echo "$TMPDIR"`).Output()
	if err != nil || strings.TrimSpace(string(out)) != "/var/lib/wanlab/testbeds/e2e-dd/a" {
		t.Errorf("TMPDIR in host a: %q, %v; want its data directory /var/lib/wanlab/testbeds/e2e-dd/a", out, err)
	}
}

// TestAliceDisks: the built-in alice-disks finds, as the seed's bonnie++
// figures imply, that Padova's 5 MB/s disk limits what it sends and
// receives over its 155 Mbit/s link, and Catania's 34 Mbit/s link what it
// sends. Bologna's 3 MB/s disk behind a 32 Mbit/s link is the busiest
// resource, though the two are close enough that the transfer alternates
// bursts and stalls and gets 84-96% of the disk (disk, with high or low
// confidence).
func TestAliceDisks(t *testing.T) {
	testsupport.NeedRoot(t)
	r := wanlab(t, "run", "alice-disks", "--quick", "--json", "--db", filepath.Join(t.TempDir(), "runs.db"))
	assertNothingLeft(t, "alice-disks")
	type verdict struct {
		Label      string             `json:"label"`
		Bottleneck string             `json:"bottleneck"`
		Why        string             `json:"why"`
		Evidence   map[string]float64 `json:"evidence"`
	}
	var doc struct {
		Analysis struct {
			Workloads []struct {
				Name  string    `json:"name"`
				Steps []verdict `json:"steps"`
			} `json:"workloads"`
		} `json:"analysis"`
	}
	r.decode(t, "", &doc)
	got := map[string]verdict{}
	for _, w := range doc.Analysis.Workloads {
		for _, s := range w.Steps {
			got[w.Name+" "+s.Label] = s
		}
	}
	for step, want := range map[string]string{"to-cnaf from=padova": "disk", "to-cnaf from=catania": "network", "from-cnaf to=padova": "disk"} {
		if got[step].Bottleneck != want {
			t.Errorf("%s: %+v, want %s", step, got[step], want)
		}
	}
	bologna := got["to-cnaf from=bologna"]
	if e := bologna.Evidence; bologna.Bottleneck != "disk" || e["disk_pct"] < 84 || e["disk_pct"] < e["network_pct"] || e["disk_pct"] < e["server_cpu_pct"] {
		t.Errorf("to-cnaf from=bologna: %+v, want the disk, busiest at 84%% or more", bologna)
	}
}

// TestRunArchiveDiskFull: the archive's disk fills up mid-run (a 512 KiB
// tmpfs). wanlab stops with an error naming the archive, exit 1, tears the
// test-bed down, and the steps stored before stay readable.
func TestRunArchiveDiskFull(t *testing.T) {
	// Mostly waiting on a slow link (10 Mbit/s): it runs beside the
	// other tests that do.
	t.Parallel()
	testsupport.NeedRoot(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.Mkdir(full, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", full).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here: %v %s", err, out)
	}
	defer exec.Command("umount", full).Run()
	path := filepath.Join(dir, "full.yaml")
	os.WriteFile(path, []byte(pairBed("e2e-full", "rate: 10Mbit", "delay: 1ms")+`workloads:
  - throughput: {from: a, to: b, duration: 1s}
    repeat: 12
`), 0o644)
	db := filepath.Join(full, "runs.db")
	r := wanlab(t, "run", path, "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, db) || !strings.Contains(strings.ToLower(r.stderr), "full") {
		t.Errorf("a full archive disk: exit %d\n%s\nwant exit 1 naming %s and saying it is full", r.code, r.stderr, db)
	}
	assertNothingLeft(t, "e2e-full")
	// Copy the archive off the full disk, as a user would, and read it.
	saved := filepath.Join(dir, "saved.db")
	if out, err := exec.Command("sh", "-c", "cp "+db+"* "+dir+"/ && mv "+dir+"/runs.db "+saved+" && for f in "+dir+"/runs.db-*; do mv $f "+saved+"${f##*runs.db}; done").CombinedOutput(); err != nil {
		t.Fatalf("copying the archive: %v %s", err, out)
	}
	steps := query(t, saved, `SELECT count(*) FROM steps WHERE status = 'done'`)
	if steps < 1 || steps >= 12 {
		t.Fatalf("%.0f steps stored done before the disk filled, want some and not all", steps)
	}
	if n := query(t, saved, `SELECT count(*) FROM samples s JOIN steps p ON s.step_id = p.id WHERE p.status = 'done'`); n < steps*10 {
		t.Errorf("%.0f samples for %.0f stored steps", n, steps)
	}
	// A step whose samples could not be stored is not done (it once was,
	// with no samples, and --resume skipped it).
	if n := query(t, saved, `SELECT count(*) FROM steps p WHERE p.status = 'done' AND NOT EXISTS (SELECT 1 FROM samples s WHERE s.step_id = p.id)`); n != 0 {
		t.Errorf("%.0f steps stored done without their samples", n)
	}
	// Where there is room, --resume measures the rest.
	if r := wanlab(t, "run", "--resume", "1", "--db", saved); r.code != 0 {
		t.Fatalf("resuming on a disk with room: exit %d\n%s", r.code, r.stderr)
	}
	if n := query(t, saved, `SELECT count(DISTINCT idx) FROM steps WHERE status = 'done'`); n != 12 {
		t.Errorf("after resuming, %.0f of 12 steps done", n)
	}
	assertNothingLeft(t, "e2e-full")
}

// TestRunMeshDisk: with disk: true a mesh moves its files from disk to
// disk. Two nodes, one with a 2 MB/s disk each way over 50 Mbit/s: every
// transfer is checked, and what the slow node moved went through its disk,
// whose cap then limits it.
func TestRunMeshDisk(t *testing.T) {
	testsupport.NeedRoot(t)
	res, _, r := runScenario(t, `name: e2e-meshdisk
hosts:
  a: {disk: {read: 2MB/s, write: 2MB/s}}
  b: {}
links:
  - {between: [a, b], rate: 50Mbit, delay: 2ms}
workloads:
  - mesh: {duration: 5s, max_wait: 100ms, sizes: [2MB], streams: 4, disk: true}
`)
	if r.code != 0 || len(res.Steps) != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m := res.Steps[0].Metrics
	if m["transfers"] < 2 || m["jobs_ok"] != m["transfers"] {
		t.Fatalf("%v transfers, %v ok: %v", m["transfers"], m["jobs_ok"], m)
	}
	// Every transfer involves a: it sends 2 MB and receives 2 MB per transfer.
	read, written := m["disk_read_mbs.a"]*res.Steps[0].Seconds, m["disk_write_mbs.a"]*res.Steps[0].Seconds
	if want := m["transfers"] * 2; read < 0.9*want || written < 0.9*want {
		t.Errorf("host a read %.1f MB and wrote %.1f MB from its disk for %.0f transfers of 2 MB each way", read, written, m["transfers"])
	}
	// The cap binds: moving 2 MB off a's disk and 2 MB onto it takes 2 s at
	// 2 MB/s, where the link alone would take 0.7 s.
	if m["min_wallclock_s"] < 1.6 {
		t.Errorf("the fastest transfer took %.2f s: host a's 2 MB/s disk cap did not hold it back", m["min_wallclock_s"])
	}
	for _, dir := range []string{"read", "write"} {
		if mbs, pct := m["disk_"+dir+"_mbs.a"], m["disk_"+dir+"_pct.a"]; math.Abs(pct-mbs/2*100) > 0.1 {
			t.Errorf("host a's disk %s: %.2f MB/s of its 2 MB/s cap is not %.1f%%", dir, mbs, pct)
		}
	}
}

// TestRunProgressBar: under a terminal, wanlab run draws a progress bar
// (step, elapsed time, ETA) on stderr; in a log it writes plain lines and
// no control characters.
func TestRunProgressBar(t *testing.T) {
	testsupport.NeedRoot(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "bar.yaml")
	os.WriteFile(path, []byte("name: e2e-bar\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b], rate: 10Mbit, delay: 1ms}\nworkloads:\n  - throughput: {from: a, to: b, duration: 2s}\n    repeat: 2\n"), 0o644)

	cmd := exec.Command(wanlabBin, "run", path, "--db", filepath.Join(dir, "tty.db"))
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatalf("starting wanlab on a pseudo-terminal: %v", err)
	}
	var screen bytes.Buffer
	io.Copy(&screen, tty) // until the process closes the terminal (EIO)
	tty.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wanlab run on a terminal: %v\n%s", err, screen.String())
	}
	assertNothingLeft(t, "e2e-bar")
	got := screen.String()
	for _, want := range []string{"run 1/2", "run 2/2", "elapsed", "ETA", "\r"} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal shows no %q:\n%q", want, got)
		}
	}

	r := wanlab(t, "run", path, "--db", filepath.Join(dir, "log.db"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "wanlab: run step 2/2: throughput repeat=2") || strings.ContainsAny(r.stderr, "\r\x1b") {
		t.Errorf("in a log, stderr should be plain lines:\n%q", r.stderr)
	}
}
