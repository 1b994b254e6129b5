// Package e2e holds wanlab's integration tests: they build the wanlab binary,
// bring real test-beds up through its CLI, push traffic through them with the
// standard tools and check what they measure against the configuration. They
// need root; as another user they skip and say why.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/testsupport"
)

var wanlabBin string

func TestMain(m *testing.M) {
	dir, err := testsupport.OwnedDir("e2e") // a killed run's is removed by the next
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	wanlabBin = filepath.Join(dir, "wanlab")
	// Static, as make image builds it: the container image test uses it.
	build := exec.Command("go", "build", "-o", wanlabBin, "../cmd/wanlab")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Println("e2e: building wanlab:", err)
		os.Exit(1)
	}
	started := time.Now()
	code := m.Run()
	testsupport.StopAll()
	downOwnTestbeds(started)
	os.RemoveAll(dir)
	os.Exit(code)
}

// downOwnTestbeds takes down what a failed test left up: the test-beds
// created since the tests started (and dead ones), never a user's own.
func downOwnTestbeds(since time.Time) {
	out, err := exec.Command(wanlabBin, "testbed", "status", "--json").Output()
	var list []struct {
		Name    string    `json:"name"`
		Alive   bool      `json:"alive"`
		Created time.Time `json:"created"`
	}
	if err != nil || json.Unmarshal(out, &list) != nil {
		return
	}
	for _, tb := range list {
		if !tb.Alive || tb.Created.After(since) {
			exec.Command(wanlabBin, "testbed", "down", tb.Name).Run()
		}
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// decode decodes the JSON a command printed into v, and fails t if the
// command failed or printed no JSON, its message led by what ("" or a
// prefix such as "measure rtt: ").
func (r result) decode(t testing.TB, what string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil || r.code != 0 {
		t.Fatalf("%sexit %d: %v\n%s", what, r.code, err, r.stderr)
	}
}

// wanlab runs the CLI and returns its output and exit status.
func wanlab(t testing.TB, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, wanlabBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running wanlab %v: %v", args, err)
	}
	return r
}

// up writes a scenario, brings it up and takes it down when the test ends,
// checking that nothing is left behind.
func up(t testing.TB, yaml string) string {
	t.Helper()
	name := scenarioName(t, yaml)
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r := wanlab(t, "testbed", "up", path)
	if r.code != 0 {
		t.Fatalf("testbed up: exit %d: %s", r.code, r.stderr)
	}
	t.Cleanup(func() {
		if r := wanlab(t, "testbed", "down", name); r.code != 0 {
			t.Errorf("testbed down %s: exit %d: %s", name, r.code, r.stderr)
		}
		assertNothingLeft(t, name)
	})
	return name
}

// pairBed is the YAML of test-bed name: hosts a and b joined by one link
// with the given settings, each a line such as "rate: 20Mbit".
func pairBed(name string, link ...string) string {
	yaml := "name: " + name + "\nhosts:\n  a: {}\n  b: {}\nlinks:\n  - between: [a, b]\n"
	for _, l := range link {
		yaml += "    " + l + "\n"
	}
	return yaml
}

func scenarioName(t testing.TB, yaml string) string {
	for _, line := range strings.Split(yaml, "\n") {
		if v, ok := strings.CutPrefix(line, "name: "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("scenario has no name line")
	return ""
}

// assertNothingLeft checks that test-bed name has no namespace, cgroup, state
// directory or daemon left on the machine.
func assertNothingLeft(t testing.TB, name string) {
	t.Helper()
	if m, _ := filepath.Glob("/run/netns/wanlab." + name + ".*"); len(m) > 0 {
		t.Errorf("namespaces left behind: %v", m)
	}
	for _, root := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/blkio", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(root, "wanlab", name)); err == nil {
			t.Errorf("cgroup left behind: %s", filepath.Join(root, "wanlab", name))
		}
	}
	if _, err := os.Stat("/run/wanlab/" + name); err == nil {
		t.Errorf("state directory /run/wanlab/%s left behind", name)
	}
	if _, err := os.Stat("/var/lib/wanlab/testbeds/" + name); err == nil {
		t.Errorf("data directory /var/lib/wanlab/testbeds/%s left behind", name)
	}
	if out, _ := exec.Command("pgrep", "-f", "testbed daemon .*"+name+"$").Output(); len(out) > 0 {
		t.Errorf("daemon still running: %s", out)
	}
}

// status returns the test-bed's status JSON.
func status(t testing.TB, name string) statusDoc {
	t.Helper()
	r := wanlab(t, "testbed", "status", name, "--json")
	if r.code != 0 {
		t.Fatalf("status: exit %d: %s", r.code, r.stderr)
	}
	var s statusDoc
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, r.stdout)
	}
	return s
}

type statusDoc struct {
	Name  string `json:"name"`
	Alive bool   `json:"alive"`
	Hosts []struct {
		Name  string `json:"name"`
		Addr  string `json:"addr"`
		Addr6 string `json:"addr6"`
	} `json:"hosts"`
	Links []struct {
		Name     string `json:"name"`
		Counters struct {
			Packets    uint64 `json:"packets"`
			QueueDrops uint64 `json:"queue_drops"`
			LossDrops  uint64 `json:"loss_drops"`
		} `json:"counters"`
	} `json:"links"`
	OtherDrops struct {
		TUNQueue   uint64 `json:"tun_queue"`
		EnginePool uint64 `json:"engine_pool"`
		Write      uint64 `json:"write"`
	} `json:"other_drops"`
	Engine struct {
		Lateness struct {
			MaxUS float64 `json:"max_us"`
		} `json:"lateness"`
	} `json:"engine"`
}

func (s statusDoc) addr(host string) string {
	for _, h := range s.Hosts {
		if h.Name == host {
			return h.Addr
		}
	}
	return ""
}

func (s statusDoc) addr6(host string) string {
	for _, h := range s.Hosts {
		if h.Name == host {
			return h.Addr6
		}
	}
	return ""
}

func (s statusDoc) link(name string) (packets, queueDrops, lossDrops uint64) {
	for _, l := range s.Links {
		if l.Name == name {
			return l.Counters.Packets, l.Counters.QueueDrops, l.Counters.LossDrops
		}
	}
	return 0, 0, 0
}

// binomialBounds returns the 99% two-sided interval for the number of
// successes in n trials of probability p (normal approximation).
func binomialBounds(n int, p float64) (lo, hi float64) {
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return mean - 2.576*sd, mean + 2.576*sd
}

func runner(name string) crosscheck.Runner {
	return crosscheck.ExecRunner(wanlabBin, name)
}

// iperf runs iperf3 in test-bed name as o says, and fails t if it cannot.
func iperf(t testing.TB, name string, o crosscheck.IperfOptions) crosscheck.IperfResult {
	t.Helper()
	res, err := runner(name).Iperf(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
