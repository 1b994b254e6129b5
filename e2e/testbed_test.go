package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// TestRateAndDelay checks a shaped path with iperf3 and ping: TCP close to the
// path's ceiling, and a round trip no shorter than configured and not much longer.
func TestRateAndDelay(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iputils-ping", "iperf3")
	name := up(t, pairBed("e2e-rate", "rate: 20Mbit", "delay: 10ms"))
	s := status(t, name)
	ctx := context.Background()
	ping, err := runner(name).Ping(ctx, "a", s.addr("b"), 20, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// 84-byte pings: 20 ms of propagation plus 2 x 33.6 us of serialisation.
	const configured = 20.0672
	if ping.Received != 20 || ping.MinMS < configured || ping.MinMS > configured+1.5 {
		t.Errorf("ping %+v: want 20 replies, min RTT in [%.3f, %.3f] ms", ping, configured, configured+1.5)
	}
	res, err := runner(name).Iperf(ctx, crosscheck.IperfOptions{Client: "a", Server: "b", ServerAddr: s.addr("b"), Duration: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ceiling := 20e6 * 1448 / 1500
	if res.ReceivedBPS < 0.90*ceiling || res.ReceivedBPS > 1.01*ceiling {
		t.Errorf("TCP a->b %.2f Mbit/s, want 90-101%% of the %.2f Mbit/s ceiling", res.ReceivedBPS/1e6, ceiling/1e6)
	}
	if d := status(t, name).OtherDrops; d.TUNQueue+d.EnginePool+d.Write > 0 {
		t.Errorf("drops outside the link model: %+v", d)
	}
}

// TestAsymmetricDirections checks forward and reverse overrides: each
// direction carries its own rate.
func TestAsymmetricDirections(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iperf3")
	name := up(t, pairBed("e2e-asym", "delay: 2ms", "forward: {rate: 8Mbit}", "reverse: {rate: 2Mbit}"))
	s := status(t, name)
	for _, tt := range []struct {
		client, server string
		rate           float64
	}{{"a", "b", 8e6}, {"b", "a", 2e6}} {
		res := iperf(t, name, crosscheck.IperfOptions{Client: tt.client, Server: tt.server, ServerAddr: s.addr(tt.server), Duration: 3 * time.Second})
		ceiling := tt.rate * 1448 / 1500
		if res.ReceivedBPS < 0.88*ceiling || res.ReceivedBPS > 1.01*ceiling {
			t.Errorf("%s->%s: %.2f Mbit/s, want about %.2f", tt.client, tt.server, res.ReceivedBPS/1e6, ceiling/1e6)
		}
	}
}

// TestLoss sends UDP below the link rate through a lossy direction and checks
// the loss iperf3 measures and the engine counts against the configured rate.
func TestLoss(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iperf3")
	name := up(t, pairBed("e2e-loss", "rate: 50Mbit", "delay: 1ms", "forward: {loss: 2%}")+"seed: 42\n")
	s := status(t, name)
	res := iperf(t, name, crosscheck.IperfOptions{
		Client: "a", Server: "b", ServerAddr: s.addr("b"), Duration: 4 * time.Second,
		UDP: true, Rate: "10M", Length: 1000,
	})
	lo, hi := binomialBounds(res.Packets, 0.02)
	if float64(res.LostPackets) < lo || float64(res.LostPackets) > hi {
		t.Errorf("iperf3 lost %d of %d datagrams, want within the 99%% interval [%.0f, %.0f] of 2%%", res.LostPackets, res.Packets, lo, hi)
	}
	packets, queueDrops, lossDrops := status(t, name).link("a->b")
	total := int(packets + lossDrops + queueDrops)
	lo, hi = binomialBounds(total, 0.02)
	if queueDrops != 0 || float64(lossDrops) < lo || float64(lossDrops) > hi {
		t.Errorf("engine a->b: %d forwarded, %d lost, %d queue drops; want no queue drops and losses in [%.0f, %.0f]", packets, lossDrops, queueDrops, lo, hi)
	}
}

// TestQueueDrops overdrives a slow direction with a small queue: the queue
// drops, nothing else does, and every packet is accounted for.
func TestQueueDrops(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iperf3")
	name := up(t, pairBed("e2e-queue", "rate: 5Mbit", "queue: 20"))
	s := status(t, name)
	res := iperf(t, name, crosscheck.IperfOptions{
		Client: "a", Server: "b", ServerAddr: s.addr("b"), Duration: 3 * time.Second,
		UDP: true, Rate: "20M", Length: 1200,
	})
	st := status(t, name)
	packets, queueDrops, lossDrops := st.link("a->b")
	if queueDrops == 0 || lossDrops != 0 {
		t.Errorf("a->b: %d queue drops, %d loss drops; want queue drops only", queueDrops, lossDrops)
	}
	// What got through is the link's rate: 5 Mbit/s of 1228-byte IP packets.
	if rate := res.ReceivedBPS; rate < 0.85*5e6*1200/1228 || rate > 1.02*5e6 {
		t.Errorf("UDP through a 5 Mbit/s link: %.2f Mbit/s", rate/1e6)
	}
	if d := st.OtherDrops; d.TUNQueue+d.EnginePool+d.Write > 0 {
		t.Errorf("drops outside the link model: %+v (forwarded %d)", d, packets)
	}
}

// TestJitter checks that jitter spreads round trips within delay +- jitter
// and, by default, never reorders.
func TestJitter(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iputils-ping")
	name := up(t, pairBed("e2e-jitter", "delay: 5ms", "jitter: 2ms"))
	s := status(t, name)
	ping, err := runner(name).Ping(context.Background(), "a", s.addr("b"), 40, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The model's longest round trip is 14 ms. A slower one is the
	// model's fault unless the engine released a packet that much late:
	// then the machine stalled it (this one wakes threads up to ~18 ms
	// late now and then, docs/benchmarks.md), which lateness tells apart.
	over := ping.MaxMS - 15
	if over > 0 {
		if late := status(t, name).Engine.Lateness.MaxUS / 1e3; late >= over {
			t.Logf("the slowest of %d pings took %.2f ms, %.2f ms over the model's bound, and the engine released a packet %.2f ms late: the machine's stall, not the model's", ping.Received, ping.MaxMS, over, late)
			over = 0
		}
	}
	if ping.MinMS < 6 || over > 0 || ping.MdevMS < 0.3 {
		t.Errorf("ping %+v: want RTTs within 2 x (5 +- 2) ms and visibly spread", ping)
	}
}

// TestSitesShareAccessLink runs two TCP flows from two hosts of one site: they
// share the site's uplink, so together they get its rate, not twice it.
func TestSitesShareAccessLink(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iperf3")
	name := up(t, `name: e2e-sites
sites:
  cern: {rate: 100Mbit, delay: 1ms}
  tier2: {rate: 10Mbit, delay: 4ms}
hosts:
  server: {site: cern}
  c1: {site: tier2}
  c2: {site: tier2}
`)
	s := status(t, name)
	results := make(chan crosscheck.IperfResult, 2)
	errs := make(chan error, 2)
	for i, c := range []string{"c1", "c2"} {
		go func() {
			res, err := runner(name).Iperf(context.Background(), crosscheck.IperfOptions{
				Client: c, Server: "server", ServerAddr: s.addr("server"), Port: 5301 + i, Duration: 5 * time.Second,
			})
			results <- res
			errs <- err
		}()
	}
	var sum float64
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		sum += (<-results).ReceivedBPS
	}
	// Each iperf3 reports over its own 5 s; the two start a few tenths of a
	// second apart, and the one alone on the link meanwhile gets all of it,
	// so the sum may pass the ceiling by that share (twice it is the fault).
	ceiling := 10e6 * 1448 / 1500
	if sum > 1.06*ceiling || sum < 0.8*ceiling {
		t.Errorf("two flows through one 10 Mbit/s site uplink got %.2f Mbit/s together, want about %.2f", sum/1e6, ceiling/1e6)
	}
	if p, _, _ := status(t, name).link("site tier2 up"); p == 0 {
		t.Error("no packet crossed the tier2 uplink")
	}
}

// TestCPUQuota runs a busy loop in a host with a quarter of a core.
func TestCPUQuota(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, `name: e2e-cpu
hosts:
  slow: {cpus: 0.25}
`)
	// dash's `times` prints the children's user and system time on its second line.
	r := wanlab(t, "testbed", "exec", name, "slow", "--", "sh", "-c", `timeout 2 sh -c 'while :; do :; done'; times`)
	m := regexp.MustCompile(`(?m)^(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$`).FindAllStringSubmatch(r.stdout, -1)
	if len(m) < 2 {
		t.Fatalf("no times output: %q %q", r.stdout, r.stderr)
	}
	min, _ := strconv.ParseFloat(m[1][1], 64)
	sec, _ := strconv.ParseFloat(m[1][2], 64)
	sysMin, _ := strconv.ParseFloat(m[1][3], 64)
	sysSec, _ := strconv.ParseFloat(m[1][4], 64)
	used := min*60 + sec + sysMin*60 + sysSec
	if used > 0.75 || used < 0.2 {
		t.Errorf("a 2 s busy loop under a 0.25-core quota used %.2f s of CPU, want about 0.5", used)
	}
}

// TestExec checks that exec passes stdio, environment and exit status through.
func TestExec(t *testing.T) {
	testsupport.NeedRoot(t)
	name := up(t, `name: e2e-exec
hosts:
  server-1: {}
  client: {}
links:
  - between: [server-1, client]
`)
	cmd := exec.Command(wanlabBin, "testbed", "exec", name, "client", "--", "sh", "-c", `read line; echo "$line $WANLAB_HOST $WANLAB_ADDR_SERVER_1"; exit 7`)
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Errorf("exit status %v, want 7", err)
	}
	if got := strings.TrimSpace(string(out)); got != "hello client 10.250.0.1" {
		t.Errorf("output %q, want %q", got, "hello client 10.250.0.1")
	}
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"testbed", "exec", name, "nohost", "--", "true"}, 1, `has no host "nohost" (hosts: server-1, client)`},
		{[]string{"testbed", "exec", name, "client", "--", "no-such-command"}, 127, "command not found"},
		{[]string{"testbed", "exec", "no-such-testbed", "client", "--", "true"}, 1, "no such test-bed"},
		{[]string{"testbed", "exec", name, "client", "true"}, 2, "put -- between HOST and the command"},
	}
	for _, tt := range tests {
		r := wanlab(t, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("wanlab %v: exit %d, %q; want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.msg)
		}
	}
	// Hosts have only their own network: no route to an address outside the test-bed.
	r := wanlab(t, "testbed", "exec", name, "client", "--", "ping", "-c", "1", "-W", "1", "192.0.2.1")
	if r.code == 0 || !strings.Contains(r.stderr+r.stdout, "unreachable") {
		t.Errorf("ping outside the test-bed: exit %d %q, want network unreachable", r.code, r.stderr+r.stdout)
	}
}

// TestBadInput checks exit codes and messages for bad scenarios and calls.
func TestBadInput(t *testing.T) {
	testsupport.NeedRoot(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: b\nhosts:\n  a: {}\nlinks:\n  - between: [a, z]\n    rate: 100\n"), 0o644)
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"testbed", "validate", bad}, 2, bad + `:5: links[0].between[1]: unknown host "z"`},
		{[]string{"testbed", "up", bad}, 2, bad + `:6: links[0].rate: rate "100": missing unit`},
		{[]string{"testbed", "up", filepath.Join(dir, "missing.yaml")}, 2, "no scenario file or built-in scenario"},
		{[]string{"testbed", "up"}, 2, "accepts 1 arg"},
		{[]string{"testbed", "down"}, 2, "give one test-bed NAME or --all"},
		{[]string{"testbed", "down", "never-was-up"}, 1, "no such test-bed is up"},
		{[]string{"testbed", "status", "never-was-up"}, 1, "no such test-bed is up"},
		{[]string{"testbed", "check", "x.yaml", "--duration", "0s"}, 2, "--duration"},
		{[]string{"testbed", "up", "--frobnicate", bad}, 2, "unknown flag"},
	}
	for _, tt := range tests {
		r := wanlab(t, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("wanlab %v: exit %d, stderr %q; want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.msg)
		}
	}
}

// TestNotRoot runs wanlab as an unprivileged user: it must say it needs root.
func TestNotRoot(t *testing.T) {
	testsupport.NeedRoot(t)
	good := filepath.Join(t.TempDir(), "ok.yaml")
	os.WriteFile(good, []byte("name: nr\nhosts:\n  a: {}\n"), 0o644)
	// Readable by nobody: a scenario it cannot read is refused for that
	// before anything asks for root.
	os.Chmod(filepath.Dir(good), 0o755)
	os.Chmod(filepath.Dir(filepath.Dir(good)), 0o755)
	os.Chmod(filepath.Dir(wanlabBin), 0o755)
	for _, args := range [][]string{{"testbed", "up", good}, {"run", "objectivity-demo", "--quick", "--db", filepath.Join(os.TempDir(), "nobody.db")}} {
		cmd := exec.Command(wanlabBin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "needs root (CAP_NET_ADMIN") {
			t.Errorf("wanlab %v as nobody: %v, %q; want exit 1 saying it needs root", args, err, out)
		}
	}
}

// TestSocketsArePrivate: under umask 000, testbed up left the agent and
// engine sockets srwxrwxrwx, and user nobody used an agent to write a
// root-owned file into a root-only folder. The sockets are 0600 in a 0700
// folder whatever the umask, and the hosts' data folders are root's own.
func TestSocketsArePrivate(t *testing.T) {
	testsupport.NeedRoot(t)
	path := filepath.Join(t.TempDir(), "private.yaml")
	os.WriteFile(path, []byte("name: e2e-private\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - {between: [a, b]}\n"), 0o644)
	out, err := exec.Command("sh", "-c", "umask 000; exec "+wanlabBin+" testbed up "+path).CombinedOutput()
	if err != nil {
		t.Fatalf("testbed up under umask 000: %v %s", err, out)
	}
	t.Cleanup(func() {
		wanlab(t, "testbed", "down", "e2e-private")
		assertNothingLeft(t, "e2e-private")
	})
	dir := "/run/wanlab/e2e-private/sockets"
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v, want mode 0700", dir, fi.Mode(), err)
	}
	socks, _ := filepath.Glob(dir + "/*.sock")
	if len(socks) != 3 {
		t.Errorf("sockets %v, want the engine's and two agents'", socks)
	}
	for _, sock := range socks {
		if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v, want 0600", sock, fi.Mode().Perm(), err)
		}
	}
	for _, host := range []string{"a", "b"} {
		data := "/var/lib/wanlab/testbeds/e2e-private/" + host
		if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want mode 0700", data, fi.Mode(), err)
		}
	}
	// User nobody can neither reach the agents nor have them do anything.
	cmd := exec.Command(wanlabBin, "measure", "disk", "--testbed", "e2e-private", "--host", "a", "--size", "1MB")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("user nobody ran a disk test on host a: %s", out)
	}
}

// TestAlreadyUp checks that a second up of the same name is refused.
func TestAlreadyUp(t *testing.T) {
	testsupport.NeedRoot(t)
	yaml := "name: e2e-twice\nhosts:\n  a: {}\n"
	up(t, yaml)
	path := filepath.Join(t.TempDir(), "twice.yaml")
	os.WriteFile(path, []byte(yaml), 0o644)
	r := wanlab(t, "testbed", "up", path)
	if r.code != 1 || !strings.Contains(r.stderr, "already up") || !strings.Contains(r.stderr, "wanlab testbed down e2e-twice") {
		t.Errorf("second up: exit %d, %q; want exit 1 naming the fix", r.code, r.stderr)
	}
}

// TestKilledEngineIsCleanedUp kills a test-bed's engine with SIGKILL while a
// process runs in one of its hosts: status reports it dead, and the next up
// removes its namespaces, cgroups, state and the orphaned process.
func TestKilledEngineIsCleanedUp(t *testing.T) {
	testsupport.NeedRoot(t)
	yaml := "name: e2e-killed\nhosts:\n  a: {}\n  b: {cpus: 0.5}\nlinks:\n  - between: [a, b]\n"
	path := filepath.Join(t.TempDir(), "killed.yaml")
	os.WriteFile(path, []byte(yaml), 0o644)
	if r := wanlab(t, "testbed", "up", path); r.code != 0 {
		t.Fatal(r.stderr)
	}
	sleeper := exec.Command(wanlabBin, "testbed", "exec", "e2e-killed", "b", "--", "sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	go sleeper.Wait()
	time.Sleep(200 * time.Millisecond)
	pid, _ := os.ReadFile("/run/wanlab/e2e-killed/pid")
	daemon, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err := syscall.Kill(daemon, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the engine %d: %v", daemon, err)
	}
	time.Sleep(200 * time.Millisecond)
	r := wanlab(t, "testbed", "status")
	if !strings.Contains(r.stdout, "e2e-killed") || !strings.Contains(r.stdout, "dead") {
		t.Errorf("status after SIGKILL: %q, want e2e-killed listed as dead", r.stdout)
	}
	other := filepath.Join(t.TempDir(), "other.yaml")
	os.WriteFile(other, []byte("name: e2e-other\nhosts:\n  a: {}\n"), 0o644)
	r = wanlab(t, "testbed", "up", other)
	if r.code != 0 || !strings.Contains(r.stderr, `removed the leftovers of test-bed "e2e-killed"`) {
		t.Errorf("next up: exit %d, %q; want it to report the cleanup", r.code, r.stderr)
	}
	assertNothingLeft(t, "e2e-killed")
	if sleeper.ProcessState == nil && syscall.Kill(sleeper.Process.Pid, 0) == nil {
		if data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleeper.Process.Pid)); !strings.Contains(string(data), ") Z") {
			t.Errorf("the process in the dead test-bed (pid %d) is still running", sleeper.Process.Pid)
		}
	}
	// down --all takes every test-bed down: only where no one else's is up.
	if others := othersUp(t); len(others) > 0 {
		t.Logf("down --all not tried: test-beds of someone else are up (%s)", strings.Join(others, ", "))
		wanlab(t, "testbed", "down", "e2e-other")
		os.Remove("/run/wanlab/e2e-killed.log") // kept for diagnosis; down --all removes such logs
	} else {
		if r := wanlab(t, "testbed", "down", "--all"); r.code != 0 {
			t.Errorf("down --all: %s", r.stderr)
		}
		if _, err := os.Stat("/run/wanlab/e2e-killed.log"); err == nil {
			t.Error("down --all left the dead test-bed's log")
		}
	}
	assertNothingLeft(t, "e2e-other")
}

// othersUp lists the live test-beds that are not the tests' own (e2e-*).
func othersUp(t *testing.T) []string {
	var list []struct {
		Name  string `json:"name"`
		Alive bool   `json:"alive"`
	}
	json.Unmarshal([]byte(wanlab(t, "testbed", "status", "--json").stdout), &list)
	var out []string
	for _, tb := range list {
		if tb.Alive && !strings.HasPrefix(tb.Name, "e2e-") {
			out = append(out, tb.Name)
		}
	}
	return out
}

// TestInterruptedUp sends Ctrl-C to up while a large test-bed is being built:
// whatever was built is torn down.
func TestInterruptedUp(t *testing.T) {
	testsupport.NeedRoot(t)
	var b strings.Builder
	b.WriteString("name: e2e-intr\nsites:\n  s: {rate: 10Mbit}\nhosts:\n")
	for i := range 60 {
		fmt.Fprintf(&b, "  h%d: {site: s}\n", i)
	}
	path := filepath.Join(t.TempDir(), "intr.yaml")
	os.WriteFile(path, []byte(b.String()), 0o644)
	cmd := exec.Command(wanlabBin, "testbed", "up", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err == nil {
		t.Log("up finished before the interrupt; taking it down")
		wanlab(t, "testbed", "down", "e2e-intr")
	} else if !strings.Contains(stderr.String(), "interrupted: test-bed \"e2e-intr\" was torn down") {
		t.Errorf("interrupted up said %q", stderr.String())
	}
	assertNothingLeft(t, "e2e-intr")
	if _, err := os.Stat("/run/wanlab/e2e-intr.log"); err == nil {
		t.Error("the daemon's log /run/wanlab/e2e-intr.log left behind by an interrupted up")
	}
}

// TestFiftyHosts brings up 50 hosts at 5 sites, pings across, and takes them down.
func TestFiftyHosts(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iputils-ping")
	var b strings.Builder
	b.WriteString("name: e2e-fifty\nsites:\n")
	for s := range 5 {
		fmt.Fprintf(&b, "  site%d: {rate: %dMbit, delay: %dms}\n", s, 10*(s+1), s+1)
	}
	b.WriteString("hosts:\n")
	for i := range 50 {
		fmt.Fprintf(&b, "  h%d: {site: site%d}\n", i, i%5)
	}
	start := time.Now()
	name := up(t, b.String())
	t.Logf("50 hosts up in %v", time.Since(start))
	s := status(t, name)
	ping, err := runner(name).Ping(context.Background(), "h0", s.addr("h49"), 3, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// site0 (1 ms) to site4 (5 ms): 12 ms round trip.
	if ping.Received != 3 || ping.MinMS < 12 || ping.MinMS > 14 {
		t.Errorf("h0 -> h49: %+v, want 3 replies near 12 ms", ping)
	}
}

// TestCheckVerb runs testbed check on a file: it brings the test-bed up,
// measures both directions, and takes it down.
func TestCheckVerb(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iputils-ping", "iperf3")
	path := filepath.Join(t.TempDir(), "check.yaml")
	os.WriteFile(path, []byte("name: e2e-check\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n    rate: 10Mbit\n    delay: 5ms\n"), 0o644)
	r := wanlab(t, "testbed", "check", path, "--duration", "2s", "--json")
	if r.code != 0 {
		t.Fatalf("check: exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Paths []crosscheck.PathCheck `json:"paths"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("check JSON: %v\n%s", err, r.stdout)
	}
	if len(doc.Paths) != 2 {
		t.Fatalf("checked %d directions, want 2", len(doc.Paths))
	}
	for _, p := range doc.Paths {
		if p.TCPShare < 0.85 || p.TCPShare > 1.02 || p.Ping.MinMS < p.Configured.RTTms {
			t.Errorf("%s -> %s: share %.3f, ping %+v vs configured %.3f ms", p.From, p.To, p.TCPShare, p.Ping, p.Configured.RTTms)
		}
	}
	assertNothingLeft(t, "e2e-check")
}

// TestMachineSettings: a test-bed's machine: section raises machine-wide
// settings for its life and no longer; a second test-bed that needs the
// same keeps it; a killed one's are put back by the cleanup; with
// WANLAB_MACHINE=fixed a test-bed that needs a change does not come up.
func TestMachineSettings(t *testing.T) {
	testsupport.NeedRoot(t)
	read := func(key string) int {
		b, err := os.ReadFile("/proc/sys/net/core/" + key)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	orig := read("rmem_max")
	want := orig + 1<<20
	bed := func(name string, need int) string {
		return fmt.Sprintf("name: %s\nmachine:\n  sysctl: {net.core.rmem_max: %d, net.core.wmem_max: 1000}\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n", name, need)
	}
	dir := t.TempDir()
	write := func(name, yaml string) string {
		p := filepath.Join(dir, name+".yaml")
		os.WriteFile(p, []byte(yaml), 0o644)
		return p
	}
	t.Cleanup(func() {
		wanlab(t, "testbed", "down", "e2e-mach1")
		wanlab(t, "testbed", "down", "e2e-mach2")
		if got := read("rmem_max"); got != orig {
			t.Errorf("net.core.rmem_max is %d after the tests, was %d", got, orig)
		}
	})
	r := wanlab(t, "testbed", "up", write("e2e-mach1", bed("e2e-mach1", want)))
	if r.code != 0 {
		t.Fatalf("up: %s", r.stderr)
	}
	if got := read("rmem_max"); got != want {
		t.Errorf("rmem_max while up: %d, want %d", got, want)
	}
	if !strings.Contains(r.stdout, fmt.Sprintf(`net.core.rmem_max was "%d", needed "%d": set to "%d"`, orig, want, want)) ||
		!strings.Contains(r.stdout, "net.core.wmem_max was") || !strings.Contains(r.stdout, "left as it was") {
		t.Errorf("up did not say what it changed:\n%s", r.stdout)
	}
	var st struct {
		Machine struct {
			Sysctl []struct{ Key, Before, After string }
		}
	}
	json.Unmarshal([]byte(wanlab(t, "testbed", "status", "e2e-mach1", "--json").stdout), &st)
	if len(st.Machine.Sysctl) != 2 || st.Machine.Sysctl[0].Before != strconv.Itoa(orig) || st.Machine.Sysctl[0].After != strconv.Itoa(want) {
		t.Errorf("status --json machine: %+v", st.Machine)
	}
	// A second test-bed content with less keeps the value until it goes.
	if r := wanlab(t, "testbed", "up", write("e2e-mach2", bed("e2e-mach2", orig+1))); r.code != 0 {
		t.Fatalf("second up: %s", r.stderr)
	}
	wanlab(t, "testbed", "down", "e2e-mach1")
	if got := read("rmem_max"); got != want {
		t.Errorf("rmem_max with the second test-bed still up: %d, want %d", got, want)
	}
	pid, _ := os.ReadFile("/run/wanlab/e2e-mach2/pid")
	daemon, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	syscall.Kill(daemon, syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond)
	if got := read("rmem_max"); got != want {
		t.Errorf("rmem_max after the daemon was killed: %d, want %d until the cleanup", got, want)
	}
	if r := wanlab(t, "testbed", "down", "e2e-mach2"); r.code != 0 {
		t.Errorf("down of the killed test-bed: %s", r.stderr)
	}
	if got := read("rmem_max"); got != orig {
		t.Errorf("rmem_max after the cleanup: %d, want %d", got, orig)
	}
	assertNothingLeft(t, "e2e-mach2")

	fixed := func(yaml string) (string, int) {
		cmd := exec.Command(wanlabBin, "testbed", "up", write("e2e-mach1", yaml))
		cmd.Env = append(os.Environ(), "WANLAB_MACHINE=fixed")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	if out, code := fixed(bed("e2e-mach1", want)); code != 1 || !strings.Contains(out, "WANLAB_MACHINE=fixed forbids changing this machine") ||
		!strings.Contains(out, fmt.Sprintf("sysctl -w net.core.rmem_max=\"%d\"", want)) {
		t.Errorf("fixed machine, change needed: exit %d, %s", code, out)
	}
	assertNothingLeft(t, "e2e-mach1")
	if got := read("rmem_max"); got != orig {
		t.Errorf("rmem_max changed on a fixed machine: %d", got)
	}
	if out, code := fixed(bed("e2e-mach1", orig)); code != 0 {
		t.Errorf("fixed machine that already has enough: exit %d, %s", code, out)
	}
	wanlab(t, "testbed", "down", "e2e-mach1")
}
