package e2e

// A lab of real hosts on one machine: network namespaces joined by plain
// veth pairs to a Linux bridge in the root namespace (kernel forwarding,
// kernel tbf where a rate is wanted; no wanlab packet engine), each running
// a standalone wanlab agent --listen on its own address with its own
// certificate. The controller (the test, through the CLI) is in the root
// namespace. A lab left by a killed run is removed by the next.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// labRecords holds one file per lab, named by its suffix, with the pid of
// the test binary that made it.
const labRecords = "/run/wanlab-e2e-labs"

// agentPort is where every lab agent listens, on its host's own address.
const agentPort = 7400

type lab struct {
	t      testing.TB
	dir    string // pki/, inventories, policies, audit logs, data folders
	suffix string
	net    string // the first three bytes of the lab's /24, as "10.201.7"
	bridge string
	hosts  []*labHost
}

type labHost struct {
	name, ns, veth, addr string
	audit, data          string
	cmd                  *exec.Cmd
	stderr               *bytes.Buffer
	args                 []string
}

// agent is the host's agent address, host:port.
func (h *labHost) agent() string { return net.JoinHostPort(h.addr, strconv.Itoa(agentPort)) }

// newLab makes the hosts, a CA, a certificate for each host's agent and
// for controllers ctl and ctl2, and starts no agent yet.
func newLab(t testing.TB, names ...string) *lab {
	t.Helper()
	sweepLabs(t)
	b := make([]byte, 3)
	rand.Read(b)
	l := &lab{t: t, dir: t.TempDir(), suffix: hex.EncodeToString(b[:2]), net: fmt.Sprintf("10.201.%d", 1+int(b[2])%250)}
	l.bridge = "wlrb" + l.suffix
	os.MkdirAll(labRecords, 0o700)
	if err := os.WriteFile(filepath.Join(labRecords, l.suffix), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.down)
	l.ip("link", "add", l.bridge, "type", "bridge")
	l.ip("addr", "add", l.net+".1/24", "dev", l.bridge)
	l.ip("link", "set", l.bridge, "up")
	l.wanlab("pki", "init", l.path("pki"))
	for i, name := range names {
		h := &labHost{name: name, ns: fmt.Sprintf("wlrh%s%d", l.suffix, i), veth: fmt.Sprintf("wlrv%s%d", l.suffix, i),
			addr: fmt.Sprintf("%s.%d", l.net, 11+i), audit: l.path(name + ".audit"), data: l.path(name + ".data")}
		l.ip("netns", "add", h.ns)
		l.ip("link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
		l.ip("link", "set", h.veth, "master", l.bridge, "up")
		l.ip("-n", h.ns, "addr", "add", h.addr+"/24", "dev", "eth0")
		l.ip("-n", h.ns, "link", "set", "eth0", "up")
		l.ip("-n", h.ns, "link", "set", "lo", "up")
		l.wanlab("pki", "issue", name, "--dir", l.path("pki"), "--role", "agent", "--ip", h.addr)
		l.hosts = append(l.hosts, h)
	}
	l.wanlab("pki", "issue", "ctl", "--dir", l.path("pki"), "--role", "controller")
	l.wanlab("pki", "issue", "ctl2", "--dir", l.path("pki"), "--role", "controller")
	return l
}

// labUp is a lab of hosts with their agents running, default policy.
func labUp(t testing.TB, names ...string) *lab {
	t.Helper()
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iproute2")
	l := newLab(t, names...)
	for _, n := range names {
		l.start(n)
	}
	return l
}

func (l *lab) path(name string) string { return filepath.Join(l.dir, name) }

func (l *lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (l *lab) wanlab(args ...string) result {
	l.t.Helper()
	r := wanlab(l.t, args...)
	if r.code != 0 {
		l.t.Fatalf("wanlab %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

func (l *lab) host(name string) *labHost {
	for _, h := range l.hosts {
		if h.name == name {
			return h
		}
	}
	l.t.Fatalf("no lab host %s", name)
	return nil
}

// start starts a host's agent with extra flags (a policy, test ports) and
// waits until it accepts connections.
func (l *lab) start(name string, extra ...string) *labHost {
	l.t.Helper()
	h := l.host(name)
	pki := l.path("pki")
	h.args = append([]string{"netns", "exec", h.ns, wanlabBin, "agent", "--host", name, "--listen", h.agent(),
		"--cert", filepath.Join(pki, name+".crt"), "--key", filepath.Join(pki, name+".key"), "--ca", filepath.Join(pki, "ca.crt"),
		"--data-dir", h.data, "--audit", h.audit}, extra...)
	h.stderr = &bytes.Buffer{}
	h.cmd = exec.Command("ip", h.args...)
	h.cmd.Stderr = h.stderr
	if err := h.cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", h.agent(), time.Second)
		if err == nil {
			c.Close()
			return h
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("the agent of %s does not listen: %v\n%s", name, err, h.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends a host's agent: SIGTERM, or SIGKILL if kill.
func (l *lab) stop(name string, kill bool) {
	h := l.host(name)
	if h.cmd == nil || h.cmd.Process == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	h.cmd.Process.Signal(sig)
	h.cmd.Wait()
	h.cmd = nil
}

// inventory writes an inventory of hosts for controller ctl with extra
// top-level lines, and returns its path.
func (l *lab) inventory(ctl string, extra string, names ...string) string {
	l.t.Helper()
	pki := l.path("pki")
	y := fmt.Sprintf("tls: {ca: %s, cert: %s, key: %s}\n%shosts:\n", filepath.Join(pki, "ca.crt"),
		filepath.Join(pki, ctl+".crt"), filepath.Join(pki, ctl+".key"), extra)
	for _, n := range names {
		y += fmt.Sprintf("  %s: {agent: %q}\n", n, l.host(n).agent())
	}
	p := l.path(fmt.Sprintf("inv-%s-%d.yaml", ctl, time.Now().UnixNano()))
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		l.t.Fatal(err)
	}
	return p
}

// file writes a file of the lab and returns its path.
func (l *lab) file(name, text string) string {
	p := l.path(name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		l.t.Fatal(err)
	}
	return p
}

// auditEntry is one line of an agent's audit log.
type auditEntry struct {
	Identity, Rule, Method, Test, Kind, Decision, Reason string
	Bytes                                                int64
}

// audit reads a host's audit log.
func (l *lab) audit(name string) []auditEntry {
	b, _ := os.ReadFile(l.host(name).audit)
	var out []auditEntry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e auditEntry
		if json.Unmarshal([]byte(line), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// waitAudit waits until a host's audit log has an entry that ok accepts.
func (l *lab) waitAudit(name string, within time.Duration, ok func(auditEntry) bool) (auditEntry, bool) {
	return l.waitAuditAfter(name, 0, within, ok)
}

// waitAuditAfter is waitAudit among the entries after the first skip.
func (l *lab) waitAuditAfter(name string, skip int, within time.Duration, ok func(auditEntry) bool) (auditEntry, bool) {
	deadline := time.Now().Add(within)
	for {
		for i, e := range l.audit(name) {
			if i < skip {
				continue
			}
			if ok(e) {
				return e, true
			}
		}
		if time.Now().After(deadline) {
			return auditEntry{}, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listeners are the TCP ports listening in a host's namespace.
func (l *lab) listeners(name string) []string {
	out, _ := exec.Command("ip", "netns", "exec", l.host(name).ns, "ss", "-Hltn").Output()
	var ports []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			ports = append(ports, f[3])
		}
	}
	return ports
}

// down stops the agents and removes the namespaces, veths and bridge, and
// checks that nothing is left.
func (l *lab) down() {
	for _, h := range l.hosts {
		l.stop(h.name, false)
		// Every test's files (received, generated, disk tests, mesh
		// folders) go when the test does, even one cut short.
		if ents, err := os.ReadDir(h.data); err == nil && len(ents) > 0 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			l.t.Errorf("files left in %s's data folder: %v", h.name, names)
		}
	}
	removeLab(l.suffix)
	if m, _ := filepath.Glob("/run/netns/wlrh" + l.suffix + "*"); len(m) > 0 {
		l.t.Errorf("lab namespaces left behind: %v", m)
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, "wlrv"+l.suffix) || i.Name == l.bridge {
			l.t.Errorf("lab interface %s left behind", i.Name)
		}
	}
	if out, _ := exec.Command("pgrep", "-f", "agent --host .* --listen "+l.net+`\.`).Output(); len(out) > 0 {
		l.t.Errorf("lab agents still running: %s", out)
	}
}

// removeLab kills what runs in a lab's namespaces and removes them, its
// veths (with them) and its bridge.
func removeLab(suffix string) {
	nss, _ := filepath.Glob("/run/netns/wlrh" + suffix + "*")
	for _, ns := range nss {
		name := filepath.Base(ns)
		out, _ := exec.Command("ip", "netns", "pids", name).Output()
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		exec.Command("ip", "netns", "del", name).Run()
	}
	// A veth goes with its namespace only once the kernel has freed the
	// namespace, which takes a while: delete the root ends now.
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, "wlrv"+suffix) {
			exec.Command("ip", "link", "del", i.Name).Run()
		}
	}
	exec.Command("ip", "link", "del", "wlrb"+suffix).Run()
	os.Remove(filepath.Join(labRecords, suffix))
}

// sweepLabs removes the labs of test binaries that died without doing so.
func sweepLabs(t testing.TB) {
	ents, _ := os.ReadDir(labRecords)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(labRecords, e.Name()))
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && pid != os.Getpid() && !proc.Alive(pid) {
			t.Logf("removing lab %s left by process %d", e.Name(), pid)
			removeLab(e.Name())
		}
	}
}
