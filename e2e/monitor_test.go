package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/cost"
	"github.com/wanlab/wanlab/internal/monitor"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// server is a running wanlab serve.
type server struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	base   string
}

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe runs wanlab serve and waits until it serves.
func startServe(t testing.TB, args ...string) *server {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(wanlabBin, append([]string{"serve", "--http", addr}, args...)...)
	s := &server{t: t, cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, base: "http://" + addr}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	// Should this test binary die (a -timeout panic runs no cleanup), the
	// service shuts down and takes its test-bed with it.
	if err := testsupport.StartBound(cmd, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGINT)
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			select {
			case <-exited:
			case <-time.After(time.Minute):
				t.Errorf("wanlab serve did not exit within a minute of Ctrl-C: killed")
				cmd.Process.Kill()
				<-exited
			}
		}
	})
	if !waitFor(2*time.Minute, func() bool { return strings.Contains(s.stdout.String(), "monitoring ") || cmd.ProcessState != nil }) {
		t.Fatalf("wanlab serve did not start: %s", s.stderr)
	}
	return s
}

// stop ends the service with Ctrl-C and checks that it exits cleanly.
func (s *server) stop() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			s.t.Errorf("wanlab serve exited with %v after Ctrl-C: %s", err, s.stderr)
		}
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		s.t.Fatalf("wanlab serve did not stop within a minute of Ctrl-C: %s", s.stderr)
	}
}

func (s *server) get(path string, into any) {
	s.t.Helper()
	resp, err := http.Get(s.base + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		s.t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

func (s *server) status() core.Snapshot {
	var snap core.Snapshot
	s.get("/api/v1/status", &snap)
	return snap
}

func (s *server) paths() map[string]core.PathView {
	var doc struct{ Paths []core.PathView }
	s.get("/api/v1/paths", &doc)
	out := map[string]core.PathView{}
	for _, p := range doc.Paths {
		out[p.Test+" "+p.Src+"->"+p.Dst] = p
	}
	return out
}

func (s *server) alerts() []archive.Alert {
	var doc struct{ Alerts []archive.Alert }
	s.get("/api/v1/alerts", &doc)
	return doc.Alerts
}

func waitFor(limit time.Duration, ok func() bool) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}

// bufferedPoints counts the points of src->dst's metric since since that
// wait in the service's buffer file; a line being written is not counted yet.
func bufferedPoints(file, src, dst, metric string, since time.Time) int {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		var r struct{ Points []archive.Point }
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		for _, p := range r.Points {
			if p.Src == src && p.Dst == dst && p.Metric == metric && !p.T.Before(since) {
				n++
			}
		}
	}
	return n
}

func alertList(alerts []archive.Alert) string {
	var out []string
	for _, a := range alerts {
		test := a.Test
		if a.Family != "" {
			test += ", " + a.Family + ", scope " + a.Scope
		}
		out = append(out, fmt.Sprintf("%s %s->%s (%s): %s", a.Rule, a.Src, a.Dst, test, a.Message))
	}
	return strings.Join(out, "; ")
}

func hasAlert(alerts []archive.Alert, rule, src, dst string) bool {
	for _, a := range alerts {
		if a.Rule == rule && a.Src == src && a.Dst == dst {
			return true
		}
	}
	return false
}

// webhookSink collects what the service posts.
type webhookSink struct {
	mu   sync.Mutex
	msgs []string
}

func (w *webhookSink) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	w.msgs = append(w.msgs, string(b))
	w.mu.Unlock()
}

func (w *webhookSink) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// TestServe runs the monitoring service on the shipped four-site test-bed
// with a PostgreSQL archive, a real Prometheus and a real snmpd, and checks
// it against the truth the emulated links give: the measured paths, alerts
// that fire on the paths a degradation was injected into (and on no other,
// and on none in the quiet before), an archive that goes away and comes
// back without losing results, an agent that stops answering, a reload,
// and a restart that resumes from the archive.
func TestServe(t *testing.T) {
	// Mostly waiting for schedules and alerts: it runs beside
	// TestRealHostsFaults, which mostly waits for timeouts.
	t.Parallel()
	testsupport.NeedRoot(t)
	dir := t.TempDir()
	pg, err := url.Parse(testsupport.PostgresSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testsupport.NewProxy(t, pg.Host)
	pg.Host = proxy.Addr()
	db := pg.String()
	snmpd := testsupport.Snmpd(t)
	hook := &webhookSink{}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	config := func(throughputBelow string) string {
		return fmt.Sprintf(`testbed: monitor-sites
groups:
  sites: [cern, cnaf, slac, taipei]
  bulkpair: [cern, cnaf]
tests:
  - {name: latency, type: probe, group: sites, rate: 10/s, summary: 3s}
  - {name: bulk, type: throughput, group: bulkpair, every: 10s, slip: 1s, duration: 1s}
  - {name: route, type: trace, group: sites, every: 10s, max_hops: 4, wait: 300ms}
alerts: {throughput_below: %s, loss_above: 5%%, rtt_step: 20ms, for: 2}
baseline: {window: 1h, min_points: 3}
interfaces: {every: 5s}
webhook: %s
snmp:
  - {name: lo-router, address: %q, version: 2c, community: %s, every: 2s, timeout: 1s, interfaces: [lo]}
`, throughputBelow, hookSrv.URL, snmpd, testsupport.SNMPCommunity)
	}
	cfgPath := filepath.Join(dir, "monitor.yaml")
	if err := os.WriteFile(cfgPath, []byte(config("50%")), 0o644); err != nil {
		t.Fatal(err)
	}
	// Bad input first: unknown hosts and an impossible schedule are usage errors.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(config("50%"), "[cern, cnaf]", "[cern, fnal]", 1)), 0o644)
	if r := wanlab(t, "serve", "--config", bad, "--dry-run"); r.code != 2 || !strings.Contains(r.stderr, `group bulkpair names host "fnal"`) {
		t.Errorf("unknown host: exit %d: %s", r.code, r.stderr)
	}
	os.WriteFile(bad, []byte(strings.Replace(config("50%"), "duration: 1s}", "duration: 8s}", 1)), 0o644)
	if r := wanlab(t, "serve", "--config", bad, "--dry-run"); r.code != 2 || !strings.Contains(r.stderr, "impossible schedule") {
		t.Errorf("impossible schedule: exit %d: %s", r.code, r.stderr)
	}
	if r := wanlab(t, "serve", "--config", cfgPath, "--dry-run", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"exclusive_fraction"`) {
		t.Errorf("dry run: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}

	s := startServe(t, "--config", cfgPath, "--db", db, "--buffer", filepath.Join(dir, "buffer"))
	prom := testsupport.Prometheus(t, strings.TrimPrefix(s.base, "http://"), "../deploy/prometheus/wanlab-rules.yml")

	// Quiet: every path measured, throughput baselines learnt, no alert.
	if !waitFor(90*time.Second, func() bool { return s.status().Tests["throughput ok"] >= 6 }) {
		t.Fatalf("throughput baselines not learnt in 90 s: %+v\n%s", s.status().Tests, s.stderr)
	}
	paths := s.paths()
	for _, pair := range [][2]string{{"cern", "taipei"}, {"taipei", "cern"}, {"cnaf", "slac"}} {
		p := paths["latency "+pair[0]+"->"+pair[1]]
		want := map[string]float64{"cern": 1, "cnaf": 5, "slac": 80, "taipei": 150}
		rtt := 2 * (want[pair[0]] + want[pair[1]]) / 1e3
		if got := p.Values["rtt_median_seconds"]; p.State != "ok" || math.Abs(got-rtt) > 0.05*rtt+0.001 {
			t.Errorf("%s->%s: state %s, median RTT %g s, want %g (the emulated links')", pair[0], pair[1], p.State, got, rtt)
		}
	}
	// On the emulated test-bed links join hosts directly: the hop list is the destination.
	if r := paths["route cern->taipei"]; r.State != "ok" || len(r.Hops) != 1 || !strings.HasPrefix(r.Hops[0], "10.") || r.Values["hop_count"] != 1 {
		t.Errorf("route cern->taipei: %+v", r)
	}
	if got := paths["bulk cern->cnaf"].Values["throughput_bits_per_second"]; got < 30e6 || got > 52e6 {
		t.Errorf("cern->cnaf throughput %g bit/s, want near cnaf's 50 Mbit/s", got)
	}
	if a := s.alerts(); len(a) > 0 {
		t.Errorf("alerts in the quiet before any change: %s", alertList(a))
	}
	// Troubleshooting: each throughput test keeps both ends' CPU and what
	// their interfaces carried meanwhile.
	var tests struct {
		Tests []struct {
			Status string
			Result struct {
				Result struct {
					End struct {
						CPU map[string]float64 `json:"cpu_utilization_percent"`
					}
				}
				InterfaceLoad map[string]map[string]map[string]float64 `json:"interface_load"`
			}
		}
	}
	s.get("/api/v1/paths/cern/cnaf/tests?test=bulk&limit=1", &tests)
	if len(tests.Tests) != 1 || tests.Tests[0].Status != "ok" {
		t.Fatalf("the last bulk test of cern->cnaf: %+v", tests)
	}
	last := tests.Tests[0].Result
	sent := 0.0
	for _, r := range last.InterfaceLoad["cern"] {
		sent = max(sent, r["out_bits_per_second"])
	}
	if sent < 1e6 || last.Result.End.CPU["sender_host"] <= 0 || len(last.InterfaceLoad["cnaf"]) == 0 {
		t.Errorf("troubleshooting detail of a bulk test: cern sent %g bit/s, CPU %v, load %v", sent, last.Result.End.CPU, last.InterfaceLoad)
	}
	var ifaces struct{ Interfaces []core.IfaceState }
	s.get("/api/v1/interfaces", &ifaces)
	agents := 0
	for _, i := range ifaces.Interfaces {
		if i.Source == "agent" {
			agents++
		}
	}
	if agents < 4 {
		t.Errorf("the hosts' own interfaces through their agents: %+v", ifaces.Interfaces)
	}
	// The dashboard of the running service: the latency grid full, a path page.
	for path, want := range map[string]string{"/": `<td class="ok" title="cern → taipei: ok"><a href="/path/cern/taipei">302 ms</a>`, "/path/cern/cnaf": "cern → cnaf"} {
		resp, err := http.Get(s.base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s, want %q in:\n%.2000s", path, resp.Status, want, body)
		}
		if path == "/" && strings.Count(string(body), `<td class="ok"`) != 12 {
			t.Errorf("the grid has %d cells ok, want all 12 paths'", strings.Count(string(body), `<td class="ok"`))
		}
	}
	// The network cost: measured throughput on cern->cnaf; a model from
	// probes on cern->taipei; a host the configuration lacks refused.
	if r := wanlab(t, "cost", "--server", s.base, "cern", "cnaf", "100MB", "--mode", "memory", "--json"); r.code != 0 {
		t.Errorf("wanlab cost cern cnaf: exit %d: %s", r.code, r.stderr)
	} else {
		var p cost.Prediction
		json.Unmarshal([]byte(r.stdout), &p)
		if p.Limit != "network" || p.PredictedSeconds < 100e6*8/52e6 || p.PredictedSeconds > 100e6*8/25e6 || p.Streams != 1 {
			t.Errorf("cost of 100 MB cern->cnaf: %+v, want about 16-20 s at cnaf's 50 Mbit/s", p)
		}
	}
	if r := wanlab(t, "cost", "--server", s.base, "cern,slac", "taipei", "10MB"); r.code != 0 || !strings.Contains(r.stdout, "TCP model") || !strings.Contains(r.stdout, "low") {
		t.Errorf("wanlab cost cern,slac taipei (probes only): exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r := wanlab(t, "cost", "--server", s.base, "cern", "fnal", "1GB"); r.code != 1 || !strings.Contains(r.stderr, `no host "fnal"`) {
		t.Errorf("wanlab cost to an unknown host: exit %d: %s", r.code, r.stderr)
	}
	// Prometheus scraped the service: a PromQL query returns the path's RTT.
	var promRTT []testsupport.Sample
	waitFor(30*time.Second, func() bool {
		promRTT, err = prom.Query(`wanlab_path_rtt_seconds{src="cern",dst="taipei",stat="median"}`)
		return err == nil && len(promRTT) == 1
	})
	if len(promRTT) != 1 || math.Abs(promRTT[0].Value-0.302) > 0.02 || promRTT[0].Labels["nmwg"] != "delay.roundtrip" {
		t.Errorf("PromQL cern->taipei median RTT: %+v (%v), want about 0.302 labelled delay.roundtrip", promRTT, err)
	}
	if v, err := prom.Query(`wanlab_interface_bits_per_second{device="lo-router",interface="lo",direction="in"}`); err != nil || len(v) != 1 {
		t.Errorf("SNMP series of lo: %+v %v", v, err)
	}
	health, err := prom.RuleHealth()
	if err != nil || len(health) != 9 {
		t.Errorf("Prometheus loaded %d rules (%v), want the 9 shipped", len(health), err)
	}
	for name, h := range health {
		if h != "ok" {
			t.Errorf("rule %s: %s", name, h)
		}
	}

	// Inject: Taipei's access link 50 ms longer each way (a route change),
	// CNAF's rate a tenth. The alerts must fire on those paths alone.
	injected := time.Now()
	for _, set := range [][]string{{"site taipei", "delay=200ms"}, {"site cnaf", "rate=5Mbit"}} {
		if r := wanlab(t, "testbed", "set", "monitor-sites", set[0], set[1]); r.code != 0 {
			t.Fatalf("testbed set %v: %s", set, r.stderr)
		}
	}
	want := [][3]string{{core.RuleRTTStep, "cern", "taipei"}, {core.RuleRTTStep, "taipei", "slac"}, {core.RuleThroughputBelow, "cern", "cnaf"}}
	ok := waitFor(60*time.Second, func() bool {
		a := s.alerts()
		for _, w := range want {
			if !hasAlert(a, w[0], w[1], w[2]) {
				return false
			}
		}
		return true
	})
	took := time.Since(injected)
	alerts := s.alerts()
	if !ok {
		t.Fatalf("after 60 s, alerts %s; want %v", alertList(alerts), want)
	}
	t.Logf("the alerts fired within %s of the change", took.Round(time.Second))
	for _, a := range alerts {
		if a.Src != "taipei" && a.Dst != "taipei" && a.Rule == core.RuleRTTStep {
			t.Errorf("an RTT alert on a path that did not change: %+v", a)
		}
		if a.Rule == core.RuleRTTStep && (a.Value-a.Baseline < 0.08 || a.Value-a.Baseline > 0.12) {
			t.Errorf("rtt_step evidence: %g over %g, want a step of 100 ms", a.Value, a.Baseline)
		}
	}
	if !waitFor(20*time.Second, func() bool {
		v, _ := prom.Query(`wanlab_alert_active{rule="rtt_step",src="cern",dst="taipei"}`)
		f, _ := prom.Query(`ALERTS{alertname="WanlabPathAlert",alertstate="firing",rule="throughput_below"}`)
		return len(v) == 1 && v[0].Value == 1 && len(f) > 0
	}) {
		t.Error("Prometheus does not see the alerts (wanlab_alert_active, WanlabPathAlert)")
	}
	if !waitFor(20*time.Second, func() bool { return strings.Contains(hook.all(), `"rule":"rtt_step"`) }) {
		t.Errorf("the webhook got %q", hook.all())
	}
	// The injected changes are recorded, each on the paths it touched.
	var changes struct{ Changes []archive.Change }
	s.get("/api/v1/paths/cern/taipei/changes", &changes)
	if len(changes.Changes) != 1 || changes.Changes[0].What != "site taipei: delay=200ms" || changes.Changes[0].T.Before(injected) {
		t.Errorf("link changes on cern->taipei: %+v, want Taipei's delay alone", changes.Changes)
	}

	// The archive goes away: results wait in the buffer, then all land.
	proxy.Cut()
	cut := time.Now()
	if !waitFor(30*time.Second, func() bool { st := s.status(); return !st.Archive.Connected && st.Archive.BufferedBytes > 0 }) {
		t.Fatalf("the service did not buffer with the archive away: %+v", s.status().Archive)
	}
	// A summary of 3 s takes about 5.5 s with the wait for its last
	// replies, and the path shares the schedule: wait for two in the buffer.
	// Beside the other tests that run in parallel, one CI run (2026-11-25)
	// had buffered one in 40 s: the deadline is generous.
	bufferFile := filepath.Join(dir, "buffer", "buffer.jsonl")
	if !waitFor(75*time.Second, func() bool { return bufferedPoints(bufferFile, "cern", "taipei", "rtt_median_seconds", cut) >= 2 }) {
		t.Errorf("after 75 s of outage, %d cern->taipei RTT results in the buffer, want 2", bufferedPoints(bufferFile, "cern", "taipei", "rtt_median_seconds", cut))
	}
	proxy.Restore(t)
	restored := time.Now()
	if !waitFor(60*time.Second, func() bool { st := s.status(); return st.Archive.Connected && st.Archive.BufferedBytes == 0 }) {
		t.Fatalf("the buffer was not replayed: %+v\n%s", s.status().Archive, s.stderr)
	}
	var series struct{ Points []archive.Point }
	s.get(fmt.Sprintf("/api/v1/paths/cern/taipei/series?metric=rtt_median_seconds&from=%d&to=%d", cut.Unix(), restored.Unix()+1), &series)
	if len(series.Points) < 2 {
		t.Errorf("%d points of cern->taipei stored from the outage, want the buffered ones", len(series.Points))
	}

	// An agent stops answering: its paths show no data, never stale values.
	out, _ := exec.Command("pgrep", "-f", "agent --host slac --socket /run/wanlab/monitor-sites/").Output()
	pid, _ := strconv.Atoi(strings.Fields(string(out) + " 0")[0])
	if pid == 0 {
		t.Fatal("no agent of slac")
	}
	syscall.Kill(pid, syscall.SIGSTOP)
	if !waitFor(90*time.Second, func() bool {
		p := s.paths()["latency cern->slac"]
		_, down := s.status().Down["slac"]
		return p.State == "no data" && p.Values == nil && p.Reason != "" && down
	}) {
		t.Errorf("slac stopped: %+v, down %+v", s.paths()["latency cern->slac"], s.status().Down)
	}
	if v, _ := prom.Query(`wanlab_path_rtt_seconds{dst="slac",src="cern"}`); len(v) > 0 {
		// Prometheus keeps a series 5 minutes after its last scrape: ask
		// the service itself for stale values.
		resp, err := http.Get(s.base + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, l := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(l, `wanlab_path_rtt_seconds{dst="slac",`) && strings.Contains(l, `src="cern"`) {
					t.Errorf("/metrics shows an RTT for cern->slac while slac does not answer: %s", l)
				}
			}
		}
	}
	syscall.Kill(pid, syscall.SIGCONT)
	if !waitFor(90*time.Second, func() bool { return s.paths()["latency cern->slac"].State != "no data" }) {
		t.Errorf("slac answers again but its path shows %+v", s.paths()["latency cern->slac"])
	}

	// SIGHUP: a broken file is refused, a good one taken, nothing lost.
	os.WriteFile(cfgPath, []byte("testbed: monitor-sites\ngroups: {x: [cern]}\n"), 0o644)
	s.cmd.Process.Signal(syscall.SIGHUP)
	if !waitFor(10*time.Second, func() bool { return strings.Contains(s.stderr.String(), "the running configuration stays") }) {
		t.Errorf("a broken configuration on SIGHUP: %s", s.stderr)
	}
	os.WriteFile(cfgPath, []byte(config("40%")), 0o644)
	s.cmd.Process.Signal(syscall.SIGHUP)
	if !waitFor(10*time.Second, func() bool { return strings.Contains(s.stderr.String(), "reloaded") }) {
		t.Errorf("no reload on SIGHUP: %s", s.stderr)
	}
	if st := s.status(); st.Tests["probe ok"] == 0 || len(s.alerts()) == 0 {
		t.Errorf("state lost on reload: %+v", st)
	}
	s.stop()
	assertNothingLeft(t, "monitor-sites")

	// A restart resumes from the archive: baselines, schedule, alerts.
	s = startServe(t, "--config", cfgPath, "--db", db, "--buffer", filepath.Join(dir, "buffer"))
	if !waitFor(10*time.Second, func() bool { return strings.Contains(s.stderr.String(), "resumed from the archive") }) {
		t.Errorf("no resume: %s", s.stderr)
	}
	s.stop()
	assertNothingLeft(t, "monitor-sites")
}

// TestServeShared: two service processes share one PostgreSQL archive and
// split the mesh of a test-bed that is already up; their throughput tests
// never meet on a host; one is killed and the other takes its share.
//
// Mostly waiting for schedules and leases, it runs beside the other tests
// that do, on its own copy of the sites' test-bed.
func TestServeShared(t *testing.T) {
	t.Parallel()
	testsupport.NeedRoot(t)
	db := testsupport.PostgresSchema(t)
	sites, err := os.ReadFile("../examples/monitor-sites.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const bed = "monitor-shared"
	bedFile := filepath.Join(t.TempDir(), bed+".yaml")
	if err := os.WriteFile(bedFile, bytes.Replace(sites, []byte("\nname: monitor-sites\n"), []byte("\nname: "+bed+"\n"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := wanlab(t, "testbed", "up", bedFile); r.code != 0 {
		t.Fatalf("testbed up: %s", r.stderr)
	}
	t.Cleanup(func() {
		wanlab(t, "testbed", "down", bed)
		assertNothingLeft(t, bed)
	})
	cfg := filepath.Join(t.TempDir(), "shared.yaml")
	os.WriteFile(cfg, []byte(`testbed: `+bedFile+`
groups:
  sites: [cern, cnaf, slac, taipei]
tests:
  - {name: latency, type: probe, group: sites, rate: 5/s, summary: 2s}
  - {name: bulk, type: throughput, group: sites, every: 30s, slip: 2s, duration: 1s}
`), 0o644)
	a := startServe(t, "--config", cfg, "--db", db, "--buffer", filepath.Join(t.TempDir(), "a"))
	b := startServe(t, "--config", cfg, "--db", db, "--buffer", filepath.Join(t.TempDir(), "b"))
	split := func() bool {
		sa, sb := a.status(), b.status()
		if sa.Members != 2 || sb.Members != 2 || len(sa.Shares)+len(sb.Shares) != monitor.Shares {
			return false
		}
		for _, i := range sa.Shares {
			if slices.Contains(sb.Shares, i) {
				return false
			}
		}
		return true
	}
	if !waitFor(40*time.Second, split) {
		t.Fatalf("the mesh was not split: a %+v (of %d), b %+v (of %d)", a.status().Shares, a.status().Members, b.status().Shares, b.status().Members)
	}
	// Each path is measured by one process, and by one only.
	both := func() (int, int, int) {
		pa, pb := a.paths(), b.paths()
		measured, twice, none := 0, 0, 0
		for k, p := range pa {
			if !strings.HasPrefix(k, "latency ") {
				continue
			}
			q := pb[k]
			switch {
			case p.State == "ok" && q.State == core.Elsewhere, q.State == "ok" && p.State == core.Elsewhere:
				measured++
			case p.State != core.Elsewhere && q.State != core.Elsewhere:
				twice++
			default:
				none++
			}
		}
		return measured, twice, none
	}
	if !waitFor(30*time.Second, func() bool { m, _, _ := both(); return m == 12 }) {
		m, tw, n := both()
		t.Fatalf("of 12 paths, %d measured by one process, %d by both, %d by neither", m, tw, n)
	}
	// Let the throughput tests run, then check that none met another on a host.
	conn, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var tests, overlaps int
	waitFor(40*time.Second, func() bool {
		return conn.QueryRow(`SELECT COUNT(*) FROM mon_tests`).Scan(&tests) == nil && tests >= 6
	})
	conn.QueryRow(`SELECT COUNT(*) FROM mon_tests`).Scan(&tests)
	conn.QueryRow(`SELECT COUNT(*) FROM mon_tests x JOIN mon_tests y ON x.id < y.id
		AND x.started < y.ended AND y.started < x.ended
		AND (x.src IN (y.src, y.dst) OR x.dst IN (y.src, y.dst))`).Scan(&overlaps)
	if tests < 6 || overlaps > 0 {
		t.Errorf("%d throughput tests, %d pairs of them on one host at once; want several and none", tests, overlaps)
		rows, _ := conn.Query(`SELECT x.src, x.dst, x.started, x.ended, x.status, x.reason, y.src, y.dst, y.started, y.ended, y.status, y.reason
			FROM mon_tests x JOIN mon_tests y ON x.id < y.id AND x.started < y.ended AND y.started < x.ended
			AND (x.src IN (y.src, y.dst) OR x.dst IN (y.src, y.dst))`)
		for rows != nil && rows.Next() {
			var xs, xd, xst, xr, ys, yd, yst, yr string
			var x0, x1, y0, y1 float64
			rows.Scan(&xs, &xd, &x0, &x1, &xst, &xr, &ys, &yd, &y0, &y1, &yst, &yr)
			t.Logf("%s->%s %.3f-%.3f %s %s | %s->%s %.3f-%.3f %s %s", xs, xd, x0, x1, xst, xr, ys, yd, y0, y1, yst, yr)
		}
		t.Logf("a: %s\nb: %s", a.stderr, b.stderr)
	}
	// One process dies: the other takes the whole mesh.
	a.cmd.Process.Kill()
	a.cmd.Wait()
	killed := time.Now()
	if !waitFor(60*time.Second, func() bool {
		st := b.status()
		if len(st.Shares) != monitor.Shares {
			return false
		}
		for k, p := range b.paths() {
			if strings.HasPrefix(k, "latency ") && p.State != "ok" {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("after a was killed, b measures %d of %d shares: %+v", len(b.status().Shares), monitor.Shares, b.paths())
	}
	t.Logf("b took the whole mesh over %s after a was killed", time.Since(killed).Round(time.Second))
	b.stop()
}

// TestServeRealHosts: the same service on real hosts, through an
// inventory of agents over TLS: probes, throughput and traces land, and an
// agent that dies leaves its paths with no data and its host down.
func TestServeRealHosts(t *testing.T) {
	l := labUp(t, "a", "b", "c")
	inv := l.inventory("ctl", "wait: 0s\n", "a", "b", "c")
	cfg := l.file("monitor.yaml", fmt.Sprintf(`inventory: %s
groups:
  all: [a, b, c]
  pair: [a, b]
tests:
  - {name: latency, type: probe, group: all, rate: 5/s, summary: 2s}
  - {name: bulk, type: throughput, group: pair, every: 15s, slip: 1s, duration: 1s}
  - {name: disk, type: transfer, group: pair, every: 90s, slip: 1s, bytes: 1MB}
  - {name: route, type: trace, group: all, every: 10s, max_hops: 3, wait: 300ms}
interfaces: {every: 5s}
`, inv))
	s := startServe(t, "--config", cfg, "--db", l.path("monitor.db"), "--buffer", l.path("buffer"))
	ready := func() bool {
		paths := s.paths()
		for k, p := range paths {
			if p.State != "ok" && !strings.HasPrefix(k, "bulk ") && !strings.HasPrefix(k, "disk ") {
				return false
			}
		}
		st := s.status()
		return len(paths) == 16 && st.Tests["throughput ok"] >= 2 && st.Tests["transfer ok"] >= 1
	}
	if !waitFor(90*time.Second, ready) {
		t.Fatalf("not every path measured on the real hosts: %+v %+v\n%s", s.status().Tests, s.paths(), s.stderr)
	}
	// The dashboard of real hosts: the latency grid, every path measured.
	resp, err := http.Get(s.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Count(string(page), `<td class="ok"`) != 6 {
		t.Errorf("GET /: %s, %d paths ok on the grid, want the 6 of three hosts", resp.Status, strings.Count(string(page), `<td class="ok"`))
	}
	if r := s.paths()["route a->b"]; len(r.Hops) != 1 || r.Hops[0] != l.host("b").addr {
		t.Errorf("route a->b: %+v, want b's address as the one hop", r)
	}
	// b's agent dies: b's paths have no data, and b is down.
	l.stop("b", true)
	if !waitFor(40*time.Second, func() bool {
		_, down := s.status().Down["b"]
		p := s.paths()["latency a->b"]
		return down && p.State == "no data" && p.Values == nil && s.paths()["latency a->c"].State == "ok"
	}) {
		t.Errorf("b's agent killed: down %+v, a->b %+v, a->c %+v", s.status().Down, s.paths()["latency a->b"], s.paths()["latency a->c"])
	}
	s.stop()
}
