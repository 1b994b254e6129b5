package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/controller"
	"github.com/wanlab/wanlab/internal/golden"
)

func TestExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--help"}, exitOK, ""},
		{[]string{"testbed", "validate", "../scenario/testdata/two-hosts.good.yaml"}, exitOK, ""},
		{[]string{"testbed", "validate", "../scenario/testdata/unknown-host.bad.yaml"}, exitUsage, `unknown host "c"`},
		{[]string{"testbed", "validate", "no-such-file.yaml"}, exitUsage, "no scenario file or built-in scenario \"no-such-file.yaml\""},
		{[]string{"testbed", "validate", "testdata"}, exitUsage, "testdata is a directory: give a scenario file"},
		{[]string{"testbed", "up", "no-such-file.yaml"}, exitUsage, "no scenario file or built-in scenario"},
		{[]string{"testbed", "up", "testdata"}, exitUsage, "is a directory"},
		{[]string{"testbed", "check", "no-such-file.yaml"}, exitUsage, "no scenario file or built-in scenario"},
		{[]string{"run", "testdata"}, exitUsage, "testdata is a directory"},
		{[]string{"version", "extra"}, exitUsage, "unknown command"},
		{[]string{"testbed", "validate"}, exitUsage, "accepts 1 arg"},
		{[]string{"testbed", "validate", "--bogus", "x"}, exitUsage, "unknown flag"},
		{[]string{"nosuchverb"}, exitUsage, `unknown verb "nosuchverb" for wanlab`},
		{[]string{"testbed", "nosuch"}, exitUsage, `unknown verb "nosuch" for wanlab testbed: give one of`},
		{[]string{"measure", "nosuch"}, exitUsage, `unknown verb "nosuch" for wanlab measure`},
		{[]string{"import", "csv"}, exitUsage, `unknown verb "csv" for wanlab import`},
		{[]string{"testbed"}, exitOK, ""},
		{[]string{"testbed", "down", "a", "--all"}, exitUsage, "give one test-bed NAME or --all"},
		{[]string{"testbed", "check", "x.yaml", "--max-pairs", "-1"}, exitUsage, "--max-pairs"},
		{[]string{"run"}, exitUsage, "accepts 1 arg"},
		{[]string{"run", "no-such-scenario"}, exitUsage, "no scenario file or built-in scenario"},
		{[]string{"run", "../scenario/testdata/unknown-host.bad.yaml"}, exitUsage, `unknown host "c"`},
		{[]string{"run", "monarc-wan"}, exitUsage, "scenario monarc-wan has backend: simulated: it says it is past what one machine emulates (303 hosts); predict it on the simulator instead: wanlab predict monarc-wan"},
		{[]string{"run", "alice-grid", "--quick"}, exitUsage, "wanlab predict alice-grid"},
		{[]string{"run", "alice-grid", "--inventory", "no-such-inventory.yaml"}, exitUsage, "has backend: simulated"},
		{[]string{"testbed", "up", "monarc-wan"}, exitUsage, "has backend: simulated"},
		{[]string{"run", "--resume", "-3"}, exitUsage, "--resume -3"},
		{[]string{"run", "--resume", "2", "--quick"}, exitUsage, "--quick cannot change a resumed run"},
		{[]string{"predict"}, exitUsage, "accepts 1 arg"},
		{[]string{"predict", "no-such-scenario"}, exitUsage, "no scenario file or built-in scenario"},
		{[]string{"predict", "testdata"}, exitUsage, "testdata is a directory"},
		{[]string{"predict", "../scenario/testdata/unknown-host.bad.yaml"}, exitUsage, `unknown host "c"`},
		{[]string{"predict", "a.yaml", "b.yaml"}, exitUsage, "accepts 1 arg"},
		{[]string{"predict", "../scenario/testdata/two-hosts.good.yaml", "--calibrate", "3"}, exitUsage, "--calibrate 3: no archive at"},
		{[]string{"predict", "../scenario/testdata/two-hosts.good.yaml", "--set", "x"}, exitUsage, `--set "x": give KEY=VALUE`},
		{[]string{"predict", "../scenario/testdata/two-hosts.good.yaml", "--set", "x=1"}, exitUsage, "--set x: not a parameter of the models of this scenario's kinds"},
		{[]string{"predict", "testdata/command-only.yaml"}, exitUsage, "no workload of testdata/command-only.yaml can be simulated: the kinds of mine (command) have no simulation model"},
		{[]string{"predict", "--check", "-2"}, exitUsage, "--check -2"},
		{[]string{"predict", "--check", "2", "--quick"}, exitUsage, "--quick cannot change a checked run"},
		{[]string{"predict", "--check", "2", "--db", "testdata/no-such.db"}, exitUsage, "no archive at testdata/no-such.db"},
		{[]string{"scenarios", "extra"}, exitUsage, `unknown verb "extra" for wanlab scenarios: give one of show`},
		{[]string{"scenarios", "show"}, exitUsage, "accepts 1 arg"},
		{[]string{"scenarios", "show", "nosuch"}, exitUsage, `no built-in scenario "nosuch" (built-ins: alice-disks, `},
		{[]string{"measure", "throughput", "-u", "-b", "1Mbit", "-l", "4K"}, exitUsage, "give --testbed NAME"},
		{[]string{"measure", "throughput", "-u", "-b", "1Mbit", "-l", "100K"}, exitUsage, "datagram length 102400: give"},
		{[]string{"measure", "throughput", "-u", "-b", "1Mbit", "-l", "4 parsecs"}, exitUsage, `for "-l, --length" flag: size "4 parsecs": unknown unit`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(errb.String(), tt.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), tt.code, tt.msg)
			}
		})
	}
}

// TestEveryVerbHasHelp checks --help on every command, as the conventions ask.
func TestEveryVerbHasHelp(t *testing.T) {
	root := newRoot()
	for _, c := range append(root.Commands(), root) {
		for _, sub := range append(c.Commands(), c) {
			args := append(strings.Fields(strings.TrimPrefix(sub.CommandPath(), "wanlab")), "--help")
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != exitOK || !strings.Contains(out.String(), "Usage:") {
				t.Errorf("wanlab %v: exit %d, no usage: %q", args, code, out.String()+errb.String())
			}
		}
	}
}

func TestValidateGolden(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"validate-sites.txt", []string{"testbed", "validate", "../scenario/testdata/sites.good.yaml"}},
		{"validate-sites.json", []string{"testbed", "validate", "--json", "../scenario/testdata/sites.good.yaml"}},
		{"validate-wan-lan.txt", []string{"testbed", "validate", "../../examples/wan-lan.yaml"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != exitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			golden.Check(t, "testdata/"+tt.golden, out.String())
		})
	}
}

func TestScenariosGolden(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"scenarios.txt", []string{"scenarios"}},
		{"scenarios.json", []string{"scenarios", "--json"}},
	} {
		var out, errb bytes.Buffer
		if code := run(tt.args, &out, &errb); code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		golden.Check(t, "testdata/"+tt.golden, out.String())
	}
}

// TestPrintRun checks the summary table of a run, with a step the test-bed
// limited and one that failed.
func TestPrintRun(t *testing.T) {
	res := &controller.Result{Run: 4, Scenario: "objectivity-lan-100m", Testbed: "objectivity-lan-100m", Quick: true, Status: "partial",
		Reason: "some steps failed", Seconds: 73.4, Archive: "wanlab.db", Samples: 1584, StoredBytes: 119000,
		Steps: []controller.StepResult{
			{Workload: "ramp", Kind: "eventdb", Label: "jobs=1", Status: "done", Metrics: map[string]float64{
				"jobs": 1, "jobs_ok": 1, "throughput_mbps": 35.5, "server_cpu_quota_pct": 50.2, "server_cpu_pct": 25.1, "client_cpu_pct": 34, "mean_wallclock_s": 0.52}},
			{Workload: "ramp", Kind: "eventdb", Label: "jobs=30", Status: "done", TestbedLimited: true, LimitedBy: []string{"the machine's CPUs were 97% busy (2 cores)"},
				Metrics: map[string]float64{"jobs": 30, "jobs_ok": 28, "jobs_timeout": 2, "throughput_mbps": 78.5, "server_cpu_quota_pct": 99.1, "client_cpu_pct": 59, "mean_wallclock_s": 7.2}},
			{Workload: "streams", Kind: "throughput", Label: "streams=4", Status: "failed", Reason: "the agent on b stopped answering", Metrics: map[string]float64{}},
		}}
	var out bytes.Buffer
	printRun(&out, res)
	golden.Check(t, "testdata/run-summary.txt", out.String())
}

// TestRunsAndExport stores a run in a fresh archive and reads it back
// through the CLI.
func TestRunsAndExport(t *testing.T) {
	db := t.TempDir() + "/w.db"
	rec, err := startRecord(db, "measure probe", "a->b", "t1", map[string]int{"count": 2})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0).UTC()
	if err := rec.Finish([]archive.Sample{{T: t0, Metric: "delay.roundtrip", Subject: "a->b", Value: 0.051, Unit: "s"}}, map[string]int{"lost": 0}, nil); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"runs", "--db", db}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "measure probe") || !strings.Contains(out.String(), "done") {
		t.Errorf("runs: exit %d: %s %s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"export", "1", "--db", db}, &out, &errb); code != exitOK {
		t.Fatalf("export: exit %d: %s", code, errb.String())
	}
	golden.Check(t, "testdata/export-run1.csv", out.String())
	out.Reset()
	if code := run([]string{"export", "1", "--db", db, "--format", "jsonl"}, &out, &errb); code != exitOK || !strings.Contains(out.String(), `"subject":"a->b"`) {
		t.Errorf("jsonl export: %s", out.String())
	}
	out.Reset()
	if code := run([]string{"export", "7", "--db", db}, &out, &errb); code != exitFailure || out.Len() != 0 {
		t.Errorf("export of a missing run: exit %d, wrote %q", code, out.String())
	}
	if code := run([]string{"runs", "--db", t.TempDir() + "/none.db"}, &out, &errb); code != exitFailure {
		t.Errorf("runs on a missing archive: exit %d", code)
	}
}

// TestControlCharactersAreShown: an imported iperf3 file's local_host with
// terminal escapes was printed raw.
func TestControlCharactersAreShown(t *testing.T) {
	var b strings.Builder
	w := newSafeText(&b)
	w.Write([]byte("host \x1b]0;pwned\x07 \u009b2J ok\ttab\nline ä"))
	w.Write([]byte{0xc3}) // half of ä ...
	w.Write([]byte{0xa4, 0xff, '\n'})
	want := `host \x1b]0;pwned\x07 \u009b2J ok` + "\ttab\nline ää" + `\xff` + "\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

// TestImportedEscapesAreNotPrinted imports an iperf3 file whose host names
// hold terminal escapes, and reads it back through every printing verb.
func TestImportedEscapesAreNotPrinted(t *testing.T) {
	data, err := os.ReadFile("../workload/throughput/testdata/iperf3-tcp.json")
	if err != nil {
		t.Fatal(err)
	}
	evil := strings.Replace(string(data), `"local_host":`, `"local_host": "\u001b]0;owned\u0007\u001b[2J",  "x":`, 1)
	file := filepath.Join(t.TempDir(), "evil.json")
	os.WriteFile(file, []byte(evil), 0o600)
	db := filepath.Join(t.TempDir(), "a.db")
	for _, argv := range [][]string{{"import", "iperf3", file, "--db", db}, {"runs", "--db", db}, {"analyze", "1", "--db", db}, {"export", "1", "--db", db}} {
		var out, errb strings.Builder
		code := run(argv, &out, &errb)
		if strings.ContainsAny(out.String()+errb.String(), "\x1b\x07") {
			t.Errorf("wanlab %v (exit %d) printed a raw escape:\n%q", argv, code, out.String()+errb.String())
		}
	}
}

// TestValidateRefusesWhatCannotRun: a test-bed this machine cannot hold,
// and workloads over an agent's limits, are refused at validate time (a
// 1,000-host site took 36 s and 873 MB to validate, and a 5 TB transfer,
// a 100 TB mesh for a million hours and a 100 Tbit/s UDP test passed).
func TestValidateRefusesWhatCannotRun(t *testing.T) {
	var hosts strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&hosts, "  h%d: {site: s}\n", i)
	}
	two := "name: v\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b], rate: 1Gbit}\nworkloads:\n"
	for _, tc := range []struct {
		name, yaml, want string
		code             int
	}{
		{"1000 hosts", "name: big\nsites:\n  s: {rate: 1Gbit, lan: {rate: 1Gbit}}\nhosts:\n" + hosts.String(), "one machine holds at most", exitUsage},
		{"5 TB transfer", two + "  - transfer: {from: a, to: b, size: 5TB}\n", "size 5000000000000 bytes: over the agent's limit", exitUsage},
		{"100 TB mesh", two + "  - mesh: {hosts: [a, b], sizes: [100TB], duration: 1000000h}\n", "over the agent's limit", exitUsage},
		{"100 Tbit/s UDP", two + "  - throughput: {from: a, to: b, protocol: udp, rate: 100Tbit}\n", "rate 100000000000000 bit/s: over the agent's limit", exitUsage},
		{"NaN cpus", "name: n\nhosts:\n  a: {cpus: .nan}\n  b: {}\nlinks:\n  - {between: [a, b]}\n", "cores is impossible", exitUsage},
		{"a delay of 2562047h", "name: d\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b], delay: 2562047h}\n", "above the maximum of 1m0s", exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "s.yaml")
			os.WriteFile(file, []byte(tc.yaml), 0o600)
			var out, errb strings.Builder
			start := time.Now()
			code := run([]string{"testbed", "validate", file}, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d (want %d): %s", code, tc.code, errb.String())
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("validation took %v", d)
			}
		})
	}
}

// TestVersion: `wanlab version` was an unknown verb.
func TestVersion(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"version"}, "wanlab version " + Version + "\n"},
		{[]string{"version", "--json"}, `"version": "` + Version + `"`},
		{[]string{"--version"}, "wanlab version " + Version + "\n"},
	} {
		var out, errb bytes.Buffer
		if code := run(tt.args, &out, &errb); code != exitOK || !strings.Contains(out.String(), tt.want) {
			t.Errorf("wanlab %v: exit %d, stdout %q, stderr %q; want %q", tt.args, code, out.String(), errb.String(), tt.want)
		}
	}
}

// TestBuiltinNames: the verbs that take a scenario file take a built-in's
// name as run does, and scenarios show prints a built-in's YAML.
func TestBuiltinNames(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"testbed", "validate", "objectivity-demo"}, &out, &errb); code != exitOK || !strings.HasPrefix(out.String(), `objectivity-demo: test-bed "`) {
		t.Errorf("validate of a built-in: exit %d: %s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"scenarios", "show", "alice-streams"}, &out, &errb); code != exitOK {
		t.Fatalf("scenarios show: exit %d: %s", code, errb.String())
	}
	want, err := os.ReadFile("../../examples/alice-streams.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("scenarios show printed\n%s\nwant examples/alice-streams.yaml", out.String())
	}
	out.Reset()
	if code := run([]string{"scenarios"}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "alice-streams") {
		t.Errorf("scenarios alone no longer lists: exit %d: %s", code, out.String())
	}
}

// TestRunInventoryMissingHosts: a scenario whose hosts an inventory does not
// name is refused as a usage error that names them, before anything starts
// (docs/deploy.md ran alice-streams on an inventory of cnaf, cern and t2).
func TestRunInventoryMissingHosts(t *testing.T) {
	dir := t.TempDir()
	inv := filepath.Join(dir, "sites.yaml")
	os.WriteFile(inv, []byte("tls: {ca: ca.crt, cert: ctl.crt, key: ctl.key}\nhosts:\n  cnaf: {agent: 10.1.0.1:7400}\n  cern: {agent: 10.2.0.1:7400}\n"), 0o600)
	db := filepath.Join(dir, "w.db")
	var out, errb bytes.Buffer
	code := run([]string{"run", "alice-streams", "--inventory", inv, "--db", db}, &out, &errb)
	want := "has no agent for hosts bologna, cagliari, catania, padova, torino, trieste of scenario alice-streams"
	if code != exitUsage || !strings.Contains(errb.String(), want) {
		t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errb.String(), want)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the archive was created for a run refused as a usage error")
	}
}

// TestThroughputRateHelp: -b is the total over all streams, where iperf3's
// is per stream; the flag's help says so.
func TestThroughputRateHelp(t *testing.T) {
	var out, errb bytes.Buffer
	run([]string{"measure", "throughput", "--help"}, &out, &errb)
	for _, want := range []string{"the total over all streams", "iperf3's -b is per stream", "-l, --length size"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help has no %q:\n%s", want, out.String())
		}
	}
}

// TestImportIperf3Error: iperf3's own error was reported as "not iperf3
// JSON output".
func TestImportIperf3Error(t *testing.T) {
	file := filepath.Join(t.TempDir(), "failed.json")
	os.WriteFile(file, []byte(`{"start": {"connected": [], "version": "iperf 3.16", "system_info": "Linux x", "timestamp": {"time": "Tue, 01 Dec 2026 10:00:00 GMT", "timesecs": 1795946400}, "connecting_to": {"host": "10.9.9.9", "port": 5201}},
 "intervals": [], "end": {}, "error": "unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.: Connection refused"}`), 0o600)
	var out, errb bytes.Buffer
	code := run([]string{"import", "iperf3", file, "--db", filepath.Join(t.TempDir(), "w.db")}, &out, &errb)
	if code != exitFailure || !strings.Contains(errb.String(), "iperf3 reported an error: unable to connect to server") || strings.Contains(errb.String(), "not iperf3 JSON") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

// TestRunRefusesTooLargePlan: run refuses a test-bed over the host limit as
// validate does, as a usage error, before it opens the archive.
func TestRunRefusesTooLargePlan(t *testing.T) {
	var hosts strings.Builder
	for i := range 600 {
		fmt.Fprintf(&hosts, "  h%d: {}\n", i)
	}
	dir := t.TempDir()
	file, db := filepath.Join(dir, "s.yaml"), filepath.Join(dir, "w.db")
	os.WriteFile(file, []byte("name: big\nhosts:\n"+hosts.String()+"links:\n  - {between: [h0, h1]}\nworkloads:\n  - probe: {from: h0, to: h1}\n"), 0o600)
	var out, errb bytes.Buffer
	if code := run([]string{"run", file, "--db", db}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "one machine holds at most") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the archive was created for a refused run")
	}
}
