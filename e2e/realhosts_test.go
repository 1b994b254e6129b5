package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/realhosts"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// TestRealHostsMeasure runs every measure verb against real hosts through
// an inventory, checks throughput against iperf3 on the same kernel-shaped
// path in the same run, and finds each test in the agents' audit logs.
func TestRealHostsMeasure(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iperf3", "iproute2")
	l := newLab(t, "a", "b")
	// A 200 Mbit/s bottleneck toward b, by the kernel's tbf.
	l.ip("link", "set", l.host("b").veth, "up")
	if out, err := exec.Command("tc", "qdisc", "add", "dev", l.host("b").veth, "root", "tbf", "rate", "200mbit", "burst", "64kb", "latency", "20ms").CombinedOutput(); err != nil {
		t.Fatalf("tc: %v: %s", err, out)
	}
	l.start("a")
	l.start("b", "--test-ports", "5301-5399")
	inv := l.inventory("ctl", "", "a", "b")

	r := wanlab(t, "hosts", "check", inv, "--json")
	var sts []realhosts.Status
	if err := json.Unmarshal([]byte(r.stdout), &sts); err != nil || r.code != 0 {
		t.Fatalf("hosts check: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	for _, st := range sts {
		if !st.Reachable || st.Identity != "cn:ctl" || st.Grant == nil || st.Grant.Rule != "default" || st.TestAddress != l.host(st.Host).addr || st.Clock == nil {
			t.Errorf("hosts check of %s: %+v", st.Host, st)
		}
	}

	res, r := measureJSON(t, "--inventory", inv, "--from", "a", "--to", "b", "-t", "4")
	if r.code != 0 {
		t.Fatalf("measure throughput: exit %d: %s", r.code, r.stderr)
	}
	got := res.End.SumReceived.BitsPerSecond
	ref := iperf3In(t, l, "a", "b", 4)
	t.Logf("a->b over tbf 200 Mbit/s: wanlab %.1f Mbit/s, iperf3 %.1f Mbit/s", got/1e6, ref/1e6)
	if got < 0.9*ref || got > 1.1*ref || got > 205e6 {
		t.Errorf("wanlab %.1f Mbit/s against iperf3's %.1f on the same path: want within 10%%, under the 200 Mbit/s tbf", got/1e6, ref/1e6)
	}
	if res.Alongside != 0 {
		t.Errorf("a test alone on its hosts says %d tests ran alongside", res.Alongside)
	}

	r = wanlab(t, "measure", "probe", "--inventory", inv, "--from", "a", "--to", "b", "--count", "20", "--interval", "10ms", "--json")
	var pr probe.Summary
	if err := json.Unmarshal([]byte(r.stdout), &pr); err != nil || r.code != 0 || pr.Received != 20 || pr.RTTms.P50 <= 0 {
		t.Errorf("measure probe: exit %d, %+v: %v %s", r.code, pr, err, r.stderr)
	}
	if !pr.OneWay.Reliable || pr.OneWay.Clock != "shared" {
		t.Errorf("hosts of one machine: clock %q, reliable %v", pr.OneWay.Clock, pr.OneWay.Reliable)
	}
	// On one bridge, b is a's first hop; over TLS, as a probe of the policy.
	r = wanlab(t, "measure", "trace", "--inventory", inv, "--from", "a", "--to", "b", "--max-hops", "4", "--json")
	var tr probe.TraceResult
	if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil || r.code != 0 || !tr.Reached || len(tr.Hops) != 1 || tr.Hops[0].Addr != l.host("b").addr {
		t.Errorf("measure trace: exit %d, %+v: %v %s", r.code, tr, err, r.stderr)
	}
	r = wanlab(t, "measure", "transfer", "--inventory", inv, "--from", "a", "--to", "b", "--size", "20MB", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"checksum_ok": true`) {
		t.Errorf("measure transfer: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	r = wanlab(t, "measure", "disk", "--inventory", inv, "--host", "a", "--size", "16MB")
	if r.code != 0 {
		t.Errorf("measure disk: exit %d: %s", r.code, r.stderr)
	}
	r = wanlab(t, "measure", "tune", "--inventory", inv, "--from", "a", "--to", "b", "--streams", "1,2", "--windows", "256KiB", "-t", "1", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"best"`) {
		t.Errorf("measure tune: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	r = wanlab(t, "measure", "impact", "--inventory", inv, "--from", "a", "--to", "b", "--load-duration", "3s", "--phase", "1s", "--json")
	if r.code != 0 {
		t.Errorf("measure impact: exit %d: %s", r.code, r.stderr)
	}

	// A scenario whose hosts name their agents runs on them as it is, with
	// the controller's default TLS files.
	l.file("controller.yaml", "tls: {ca: pki/ca.crt, cert: pki/ctl.crt, key: pki/ctl.key}\n")
	t.Setenv("WANLAB_CONTROLLER_CONFIG", l.path("controller.yaml"))
	sc := l.file("pair.yaml", "name: pair\nhosts:\n  a: {agent: \""+l.host("a").agent()+"\"}\n  b: {agent: \""+l.host("b").agent()+"\"}\n"+
		"links:\n  - {between: [a, b], rate: 100Mbit, delay: 5ms}\nworkloads:\n  - name: rtt\n    probe: {from: a, to: b, count: 20, interval: 20ms}\n")
	if r := wanlab(t, "hosts", "check", sc); r.code != 0 {
		t.Errorf("hosts check of a scenario with agents: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	r = wanlab(t, "run", sc, "--db", l.path("pair.db"))
	if r.code != 0 || !strings.Contains(r.stdout, "a->b: expected 100 Mbit/s, 10 ms") {
		t.Errorf("run of a scenario with agents: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}

	// b's test listeners opened in its range, on its own address only.
	for _, e := range l.audit("b") {
		if e.Identity != "cn:ctl" || e.Rule != "default" {
			t.Errorf("audit entry of b: %+v", e)
		}
	}
	for _, end := range []struct{ host, kind string }{{"b", "throughput"}, {"b", "transfer"}, {"a", "probe"}, {"a", "throughput"}} {
		if _, ok := l.waitAudit(end.host, time.Second, func(e auditEntry) bool {
			return e.Kind == end.kind && e.Decision == "end" && e.Bytes > 0 && e.Reason == ""
		}); !ok {
			t.Errorf("%s's audit log has no end of a %s test with its bytes: %+v", end.host, end.kind, l.audit(end.host))
		}
	}
}

// iperf3In measures from one lab host to another with iperf3 for secs,
// through crosscheck's runner (which waits for the server to listen).
func iperf3In(t testing.TB, l *lab, from, to string, secs int) float64 {
	t.Helper()
	r := crosscheck.Runner{Command: func(ctx context.Context, host string, argv ...string) *exec.Cmd {
		return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", l.host(host).ns}, argv...)...)
	}}
	res, err := r.Iperf(context.Background(), crosscheck.IperfOptions{Client: from, Server: to, ServerAddr: l.host(to).addr,
		Port: 5299, Duration: time.Duration(secs) * time.Second})
	if err != nil {
		t.Fatalf("iperf3 %s -> %s: %v", from, to, err)
	}
	return res.ReceivedBPS
}

// TestRealHostsRefusals: every refusal names its cause, and is audited.
func TestRealHostsRefusals(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iproute2")
	l := newLab(t, "a", "b")
	policyB := l.file("b-policy.yaml", `rules:
  - name: ops
    identities: [cn:ctl]
    kinds: [throughput, probe]
    peers: [`+l.net+`.0/24]
    limits: {streams: 2}
  - name: watchers
    identities: [cn:ctl2]
    kinds: [probe]
`)
	policyA := l.file("a-policy.yaml", `rules:
  - name: ops
    identities: [cn:ctl]
    peers: [`+l.net+`.99/32]
  - name: watchers
    identities: [cn:ctl2]
`)
	l.start("a", "--policy", policyA)
	l.start("b", "--policy", policyB)
	pkiDir := l.path("pki")

	// Controllers whose certificates the agents must refuse.
	other := l.path("other-ca")
	l.wanlab("pki", "init", other)
	l.wanlab("pki", "issue", "ctl", "--dir", other, "--role", "controller")
	past := time.Now().Add(-72 * time.Hour)
	if err := pki.Issue(pkiDir, "old", pki.Controller, pki.Options{NotBefore: past, NotAfter: past.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	l.wanlab("pki", "issue", "stranger", "--dir", pkiDir, "--role", "controller")
	invWith := func(ca, cert, key string) string {
		return l.file(fmt.Sprintf("inv-%d.yaml", time.Now().UnixNano()), "tls: {ca: "+ca+", cert: "+cert+", key: "+key+"}\nhosts:\n  b: {agent: \""+l.host("b").agent()+"\"}\n")
	}
	ca := filepath.Join(pkiDir, "ca.crt")
	tests := []struct {
		name       string
		args       []string
		wantOut    string // in the controller's error
		wantAudit  string // in b's audit log: a refusal's reason
		wantReason func(auditEntry) bool
	}{
		{"controller from another CA", []string{"hosts", "check", invWith(ca, filepath.Join(other, "ctl.crt"), filepath.Join(other, "ctl.key"))},
			"the agent refused this controller's certificate (bad certificate): it must be a controller certificate from a CA the agent trusts, and valid now; the agent's audit log says more; hint: this controller's certificate \"ctl\" is not signed by a CA of tls.ca: it was issued by \"wanlab CA\"", "unknown authority", nil},
		{"expired controller", []string{"hosts", "check", invWith(ca, filepath.Join(pkiDir, "old.crt"), filepath.Join(pkiDir, "old.key"))},
			"this controller's certificate cannot be used: \"old\" (issued by \"wanlab CA\") expired on", "", nil},
		{"an agent's certificate as a controller's", []string{"hosts", "check", invWith(ca, filepath.Join(pkiDir, "a.crt"), filepath.Join(pkiDir, "a.key"))},
			"this controller's certificate cannot be used: \"a\" (issued by \"wanlab CA\") is not a controller's", "", nil},
		{"agent from another CA", []string{"hosts", "check", invWith(filepath.Join(other, "ca.crt"), filepath.Join(pkiDir, "ctl.crt"), filepath.Join(pkiDir, "ctl.key"))},
			"unknown authority", "", nil},
		{"identity not in the policy", []string{"hosts", "check", invWith(ca, filepath.Join(pkiDir, "stranger.crt"), filepath.Join(pkiDir, "stranger.key"))},
			"does not authorise this controller: identity cn:stranger", "", nil},
		{"over a limit", []string{"measure", "throughput", "--inventory", l.inventory("ctl", "", "a", "b"), "--from", "a", "--to", "b", "-P", "4", "-t", "1"},
			`over the agent's limit of 2 streams (the limits of rule "ops"`, "over the agent's limit", nil},
		{"kind not allowed", []string{"measure", "transfer", "--inventory", l.inventory("ctl", "", "a", "b"), "--from", "a", "--to", "b", "--size", "1MB"},
			`refuses a transfer test: rule "ops"`, `does not allow it`, nil},
		{"identity allowed less", []string{"measure", "throughput", "--inventory", l.inventory("ctl2", "", "a", "b"), "--from", "a", "--to", "b", "-t", "1"},
			`rule "watchers"`, `does not allow it for cn:ctl2`, nil},
		{"peer not in the sender's policy", []string{"measure", "probe", "--inventory", l.inventory("ctl", "", "a", "b"), "--from", "a", "--to", "b", "--count", "3"},
			"refuses to send toward " + l.host("b").addr, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := wanlab(t, tc.args...)
			if r.code != 1 || !strings.Contains(r.stdout+r.stderr, tc.wantOut) {
				t.Errorf("exit %d, want 1 with %q:\n%s%s", r.code, tc.wantOut, r.stdout, r.stderr)
			}
			if tc.wantAudit != "" {
				if _, ok := l.waitAudit("b", 2*time.Second, func(e auditEntry) bool {
					return (e.Decision == "refuse" || e.Decision == "tls" || e.Decision == "end") && strings.Contains(e.Reason, tc.wantAudit)
				}); !ok {
					t.Errorf("b's audit log has no refusal with %q: %+v", tc.wantAudit, l.audit("b"))
				}
			}
		})
	}

	// No certificate at all: the handshake fails, and the agent says why.
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.host("b").agent(), &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	if err == nil {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		c.Read(make([]byte, 1))
		c.Close()
	}
	if _, ok := l.waitAudit("b", 2*time.Second, func(e auditEntry) bool { return e.Decision == "tls" && strings.Contains(e.Reason, "no certificate") }); !ok {
		t.Errorf("a client without a certificate is not in b's audit log: %+v", l.audit("b"))
	}

	// SIGHUP: a new policy applies to the next request; a running test
	// is not dropped.
	inv := l.inventory("ctl", "", "a", "b")
	running := make(chan result, 1)
	go func() {
		running <- wanlab(t, "measure", "throughput", "--inventory", inv, "--from", "b", "--to", "a", "-t", "3")
	}()
	if _, ok := l.waitAudit("b", 10*time.Second, func(e auditEntry) bool {
		return e.Kind == "throughput" && e.Decision == "allow" && strings.Contains(e.Method, "Send")
	}); !ok {
		t.Fatalf("the test did not start: %+v", l.audit("b"))
	}
	l.file("b-policy.yaml", "rules:\n  - {name: probes-only, identities: [cn:ctl], kinds: [probe]}\n")
	l.host("b").cmd.Process.Signal(syscall.SIGHUP)
	if r := <-running; r.code != 0 {
		t.Errorf("a test running across a SIGHUP: exit %d: %s", r.code, r.stderr)
	}
	r := wanlab(t, "measure", "throughput", "--inventory", inv, "--from", "b", "--to", "a", "-t", "1")
	if r.code != 1 || !strings.Contains(r.stderr, `rule "probes-only"`) {
		t.Errorf("after the reload: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(l.host("b").stderr.String(), "reloaded certificate, CA, policy and audit log") {
		t.Errorf("b did not say it reloaded: %s", l.host("b").stderr)
	}
}

// TestRealHostsAdmission: two controllers at once; a throughput test
// waits for, or is refused by, a host that runs another; a probe runs
// alongside and says so.
func TestRealHostsAdmission(t *testing.T) {
	l := labUp(t, "a", "b", "c")
	first := l.inventory("ctl", "wait: 0s\n", "a", "b", "c")
	noWait := l.inventory("ctl2", "wait: 0s\n", "a", "b", "c")
	waits := l.inventory("ctl2", "wait: 30s\n", "a", "b", "c")

	running := make(chan result, 1)
	go func() {
		running <- wanlab(t, "measure", "throughput", "--inventory", first, "--from", "a", "--to", "b", "-t", "5")
	}()
	if _, ok := l.waitAudit("b", 10*time.Second, func(e auditEntry) bool { return e.Kind == "throughput" && e.Decision == "allow" }); !ok {
		t.Fatalf("the first test did not start: %+v", l.audit("b"))
	}
	r := wanlab(t, "measure", "throughput", "--inventory", noWait, "--from", "c", "--to", "b", "-t", "1")
	if r.code != 1 || !strings.Contains(r.stderr, "busy until") {
		t.Errorf("a second throughput test toward a busy host: exit %d, want a refusal with busy until: %s", r.code, r.stderr)
	}
	var wg sync.WaitGroup
	var probed, waited result
	var waitedFor time.Duration
	wg.Go(func() {
		probed = wanlab(t, "measure", "probe", "--inventory", noWait, "--from", "c", "--to", "b", "--count", "10", "--interval", "50ms", "--json")
	})
	wg.Go(func() {
		start := time.Now()
		waited = wanlab(t, "measure", "throughput", "--inventory", waits, "--from", "c", "--to", "b", "-t", "1", "--json")
		waitedFor = time.Since(start)
	})
	wg.Wait()
	if r := <-running; r.code != 0 {
		t.Errorf("the first test: exit %d: %s", r.code, r.stderr)
	}
	var pr probe.Summary
	if json.Unmarshal([]byte(probed.stdout), &pr); probed.code != 0 || pr.Alongside < 1 {
		t.Errorf("a probe during a throughput test: exit %d, tests alongside %d, want >= 1: %s", probed.code, pr.Alongside, probed.stderr)
	}
	var tr throughput.Result
	if json.Unmarshal([]byte(waited.stdout), &tr); waited.code != 0 || tr.End.SumReceived.BitsPerSecond <= 0 {
		t.Errorf("a test that waited for the host: exit %d: %s", waited.code, waited.stderr)
	}
	if waitedFor < 2*time.Second {
		t.Errorf("the waiting test ended after %v: it cannot have waited for the first (5 s)", waitedFor)
	}
}

// TestRealHostsFaults: a controller killed mid-test, an agent killed
// mid-test, and an agent cut off from the network.
func TestRealHostsFaults(t *testing.T) {
	t.Parallel()
	l := labUp(t, "a", "b")
	inv := l.inventory("ctl", "", "a", "b")
	before := l.listeners("b")

	// kill -9 of the controller: both agents end the test within seconds
	// and free its ports.
	// The tests are paced UDP, light on the CPU: this test waits on
	// timeouts and runs beside others (t.Parallel).
	ctl := exec.Command(wanlabBin, "measure", "throughput", "--inventory", inv, "--from", "a", "--to", "b", "-t", "60", "--udp", "--rate", "10Mbit")
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.waitAudit("b", 10*time.Second, func(e auditEntry) bool { return e.Kind == "throughput" && e.Decision == "allow" }); !ok {
		ctl.Process.Kill()
		t.Fatalf("the test did not start: %+v", l.audit("b"))
	}
	time.Sleep(time.Second)
	killed := time.Now()
	ctl.Process.Kill()
	ctl.Wait()
	for _, h := range []string{"a", "b"} {
		if _, ok := l.waitAudit(h, 20*time.Second, func(e auditEntry) bool { return e.Kind == "throughput" && e.Decision == "end" }); !ok {
			t.Errorf("%s did not end the test of a dead controller: %+v", h, l.audit(h))
		}
	}
	t.Logf("the agents ended the test %v after the controller died", time.Since(killed).Round(100*time.Millisecond))
	if after := l.listeners("b"); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("b listens on %v after the test, %v before", after, before)
	}

	// kill -9 of an agent: the measurement fails naming it, promptly.
	done := make(chan result, 1)
	// meanwhile starts a 30 s test from a to b in the background, and
	// returns once agent watch has allowed it.
	meanwhile := func(watch, what string) {
		t.Helper()
		n := len(l.audit(watch))
		go func() {
			done <- wanlab(t, "measure", "throughput", "--inventory", inv, "--from", "a", "--to", "b", "-t", "30", "--udp", "--rate", "10Mbit")
		}()
		if _, ok := l.waitAuditAfter(watch, n, 10*time.Second, func(e auditEntry) bool { return e.Kind == "throughput" && e.Decision == "allow" }); !ok {
			t.Fatalf("the test %s did not start: %+v", what, l.audit(watch))
		}
	}
	// failed checks that the background test fails within a time, saying want.
	failed := func(within time.Duration, want, what string) {
		t.Helper()
		select {
		case r := <-done:
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("%s: exit %d, want 1 with %q: %s", what, r.code, want, r.stderr)
			}
		case <-time.After(within):
			t.Fatalf("%s: the measurement did not end within %v", what, within)
		}
	}
	meanwhile("b", "of the agent to kill")
	time.Sleep(time.Second)
	l.stop("b", true)
	failed(45*time.Second, "agent on b stopped answering", "agent b killed mid-test")

	// A stopped agent (SIGSTOP: as slow as can be): a test through it
	// fails naming it, and a hello says it did not answer in time.
	l.start("b")
	meanwhile("b", "of the agent to stop")
	l.host("b").cmd.Process.Signal(syscall.SIGSTOP)
	failed(60*time.Second, "agent on b", "agent b stopped mid-test")
	if r := wanlab(t, "hosts", "check", inv, "--timeout", "3s"); r.code != 1 || !strings.Contains(r.stdout, "did not answer in time") {
		t.Errorf("hosts check of a stopped agent: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	l.host("b").cmd.Process.Signal(syscall.SIGCONT)

	// A partition: a is cut off mid-test. The controller gives up naming
	// a, and a ends the test by itself.
	ends := func() int {
		n := 0
		for _, e := range l.audit("a") {
			if e.Kind == "throughput" && e.Decision == "end" {
				n++
			}
		}
		return n
	}
	endsBefore := ends()
	meanwhile("a", "of the agent to cut off")
	l.ip("link", "set", l.host("a").veth, "down")
	failed(60*time.Second, "a", "a cut off mid-test")
	if _, ok := l.waitAudit("a", 30*time.Second, func(auditEntry) bool { return ends() > endsBefore }); !ok {
		t.Errorf("a did not end the test it was cut off in (%d ended before, %d now): %+v", endsBefore, ends(), l.audit("a"))
	}
	l.ip("link", "set", l.host("a").veth, "up")
}

// slacCernShort is the slac-cern built-in's test-bed, as written for
// emulation, with two of its workloads: a sweep of streams and the
// impact of a load on probes from a third host.
const slacCernShort = `name: slac-cern-short
hosts:
  slac:  {site: slac, cpus: 0.5, sysctl: &reno {net.ipv4.tcp_congestion_control: reno}}
  cern:  {site: cern, cpus: 0.5, sysctl: *reno}
  probe: {site: slac, sysctl: *reno}
sites:
  slac:
    up:   {rate: 16Mbit, delay: 45ms, loss: 0.05%}
    down: {rate: 27Mbit, delay: 45ms, loss: 0.05%}
  cern:
    rate: 1000Mbit
    delay: 45ms
workloads:
  - name: streams
    throughput: {from: cern, to: slac, window: 256KiB, duration: 30s}
    sweep: {streams: [1, 2, 4, 8, 10, 16]}
    quick: {duration: 4s, sweep: {streams: [1, 10]}}
  - name: impact
    impact: {probe_from: probe, probe_to: cern, from: slac, to: cern, streams: 15, window: 256KiB, duration: 60s, phase: 20s, interval: 200ms}
    quick: {duration: 15s, phase: 3s}
`

// TestRealHostsRun runs a scenario written for the emulated test-bed
// (slac-cern's, with two of its workloads) unchanged on real hosts: its
// links are the expected path, and the analysis audits every path.
func TestRealHostsRun(t *testing.T) {
	l := labUp(t, "slac", "cern", "probe")
	inv := l.inventory("ctl", "", "slac", "cern", "probe")
	scen := l.file("slac-cern-short.yaml", slacCernShort)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, wanlabBin, "run", scen, "--quick", "--inventory", inv, "--db", l.path("run.db"), "--json").Output()
	if err != nil {
		t.Fatalf("run on real hosts: %v\n%s", err, out)
	}
	var doc struct {
		Status   string
		Steps    []struct{ Status string }
		Analysis struct {
			Findings []struct {
				Kind, Text string
				Values     map[string]float64
			}
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Status != "done" || len(doc.Steps) == 0 {
		t.Fatalf("run: %s, %d steps", doc.Status, len(doc.Steps))
	}
	for i, s := range doc.Steps {
		if s.Status != "done" {
			t.Errorf("step %d: %s", i+1, s.Status)
		}
	}
	audits := map[string]bool{}
	for _, f := range doc.Analysis.Findings {
		if f.Kind == "path_audit" {
			audits[strings.SplitN(f.Text, ":", 2)[0]] = true
			if f.Values["expected_rtt_ms"] != 180 {
				t.Errorf("path audit %q: expected RTT %v, want the scenario's 180 ms", f.Text, f.Values["expected_rtt_ms"])
			}
		}
		if f.Kind == "model_fit" {
			t.Errorf("a TCP model fit of the scenario's path on real hosts: %q", f.Text)
		}
	}
	for _, p := range []string{"cern->slac", "slac->cern", "probe->cern"} {
		if !audits[p] {
			t.Errorf("no path audit of %s: %v", p, audits)
		}
	}
}

// TestRealHostsApplications runs the application workloads (event store,
// task farm, mesh) on real hosts whose policy allows them, with test
// listeners in a port range: every role's connections carry the step's
// token.
func TestRealHostsApplications(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iproute2")
	l := newLab(t, "a", "b", "c")
	pol := l.file("apps-policy.yaml", "rules:\n  - {name: apps, identities: [cn:ctl], kinds: [eventdb, taskfarm, mesh, probe], peers: ["+l.net+".0/24]}\n")
	for _, h := range []string{"a", "b", "c"} {
		l.start(h, "--policy", pol, "--test-ports", "5401-5499")
	}
	hosts := ""
	for _, h := range []string{"a", "b", "c"} {
		hosts += fmt.Sprintf("  %s: {agent: %q}\n", h, l.host(h).agent())
	}
	l.file("controller.yaml", "tls: {ca: pki/ca.crt, cert: pki/ctl.crt, key: pki/ctl.key}\n")
	t.Setenv("WANLAB_CONTROLLER_CONFIG", l.path("controller.yaml"))
	sc := l.file("apps.yaml", `name: apps
hosts:
`+hosts+`links:
  - {between: [a, b], rate: 100Mbit, delay: 5ms}
  - {between: [a, c], rate: 100Mbit, delay: 5ms}
  - {between: [b, c], rate: 100Mbit, delay: 5ms}
workloads:
  - name: store
    eventdb: {server: a, clients: [b, c], events: 1000, event_size: 40KB, page_size: 8KiB, events_per_job: 20, server_model: threads, threads: 4, timeout: 25s, jobs: 2}
  - name: farm
    taskfarm: {master: a, workers: [b, c], count: 4, tasks: 20, work: sleep, duration: 0.05s, result_size: 512B}
  - name: mesh
    mesh: {duration: 3s, max_wait: 200ms, sizes: [1MB], streams: 2, port: 5450}
`)
	r := wanlab(t, "run", sc, "--db", l.path("apps.db"), "--json")
	var doc struct {
		Status string
		Steps  []struct {
			Workload, Status, Reason string
			Metrics                  map[string]float64
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || doc.Status != "done" {
		t.Fatalf("run of the application workloads on real hosts: exit %d, %v: %s%s", r.code, err, r.stdout, r.stderr)
	}
	for _, s := range doc.Steps {
		if s.Status != "done" || s.Metrics["jobs_failed"] > 0 {
			t.Errorf("step of %s: %s %s, %v", s.Workload, s.Status, s.Reason, s.Metrics)
		}
	}
	for _, kind := range []string{"eventdb", "taskfarm", "mesh"} {
		if _, ok := l.waitAudit("a", time.Second, func(e auditEntry) bool { return e.Kind == kind && e.Decision == "end" }); !ok {
			t.Errorf("a's audit log has no %s role: %+v", kind, l.audit("a"))
		}
	}
}
