package testbed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netns"

	"github.com/wanlab/wanlab/internal/cgroup"
	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// Environment errors: the machine or the user cannot run a test-bed.
var (
	ErrNeedRoot  = errors.New("wanlab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces and TUN devices: run it as root, e.g. with sudo")
	ErrNoTUN     = errors.New("/dev/net/tun is not usable: load the tun module (modprobe tun) or give the container the device")
	ErrAlreadyUp = errors.New("a test-bed of that name is already up")
)

// upTimeout bounds how long a test-bed may take to come up.
const upTimeout = 5 * time.Minute

// CheckEnvironment reports whether this process can build test-beds.
func CheckEnvironment() error {
	const capNetAdmin, capSysAdmin = 12, 21
	caps, err := effectiveCaps()
	if err != nil || caps&(1<<capNetAdmin) == 0 || caps&(1<<capSysAdmin) == 0 {
		return ErrNeedRoot
	}
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoTUN, err)
	}
	f.Close()
	return nil
}

func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff in /proc/self/status")
}

// UpResult is what Up built and what stale test-beds it cleaned on the way.
type UpResult struct {
	State   *State
	Cleaned []string
}

// Up brings up the test-bed in scenario file path and returns once it is ready.
// The engine keeps running in a background daemon. If ctx is cancelled while
// it comes up (Ctrl-C), the daemon tears everything down before Up returns.
func Up(ctx context.Context, path string, progress Progress) (*UpResult, error) {
	if err := CheckEnvironment(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path)
	return UpFor(ctx, abs, data, 0, progress)
}

// Progress is told how far a test-bed has come up: step of steps, and what
// is being done. It may be nil.
type Progress func(step, steps int, what string)

// progressPrefix opens the lines of progress the daemon writes before "ok".
const progressPrefix = "progress "

// UpFor brings up the test-bed of a scenario's text, read from source (a
// file or a built-in's name, for the record), for a test-bed that lives
// only as long as process owner (if not 0): when the owner is gone, even
// killed, the daemon takes it down.
func UpFor(ctx context.Context, source string, text []byte, owner int, progress Progress) (*UpResult, error) {
	if err := CheckEnvironment(); err != nil {
		return nil, err
	}
	f, err := scenario.Parse(source, text, false)
	if err != nil {
		return nil, err
	}
	tb := f.Testbed
	if _, err := topology.New(tb); err != nil {
		return nil, err
	}
	data, abs := text, source
	// The daemon reads the files the scenario names (traces) relative to it.
	if _, err := os.Stat(source); err == nil {
		if a, err := filepath.Abs(source); err == nil {
			abs = a
		}
	}
	unlock, err := lockRun()
	if err != nil {
		return nil, err
	}
	res := &UpResult{}
	res.Cleaned, err = cleanStale()
	if err != nil {
		unlock()
		return nil, fmt.Errorf("cleaning up after an earlier run: %w", err)
	}
	if pid := daemonPID(tb.Name); pid != 0 {
		unlock()
		return nil, fmt.Errorf("%w: %q (engine pid %d); take it down with: wanlab testbed down %s", ErrAlreadyUp, tb.Name, pid, tb.Name)
	}
	pid, ready, err := startDaemon(tb.Name, abs, data, owner)
	unlock()
	if err != nil {
		Teardown(tb.Name)
		return nil, err
	}
	defer ready.Close()
	msg := make(chan string, 1)
	go func() { msg <- readReady(ready, progress) }()
	select {
	case m := <-msg:
		if m != "ok" {
			return nil, daemonFailed(tb.Name, m)
		}
	case <-ctx.Done():
		syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-msg:
		case <-time.After(30 * time.Second):
		}
		waitExit(pid, 30*time.Second)
		Teardown(tb.Name)
		os.Remove(LogPath(tb.Name)) // the user stopped it: there is no failure to read
		return nil, fmt.Errorf("interrupted: test-bed %q was torn down: %w", tb.Name, ctx.Err())
	case <-time.After(upTimeout):
		stopDaemon(pid)
		Teardown(tb.Name)
		return nil, fmt.Errorf("test-bed %q did not come up within %v; see %s", tb.Name, upTimeout, LogPath(tb.Name))
	}
	res.State, err = ReadState(tb.Name)
	return res, err
}

// readReady passes on the daemon's lines of progress and returns its last
// word: "ok", or the error.
func readReady(ready io.Reader, progress Progress) string {
	sc := bufio.NewScanner(ready)
	var rest []string
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, progressPrefix); ok {
			f := strings.SplitN(p, " ", 3)
			step, err1 := strconv.Atoi(f[0])
			steps, err2 := strconv.Atoi(f[min(1, len(f)-1)])
			if err1 == nil && err2 == nil && len(f) == 3 && progress != nil {
				progress(step, steps, f[2])
			}
			continue
		}
		rest = append(rest, line)
	}
	return strings.TrimSpace(strings.Join(rest, "\n"))
}

// startDaemon starts `wanlab testbed daemon` for name in a session of its own
// and returns its pid and the pipe on which it says when it is ready.
func startDaemon(name, source string, scenarioText []byte, owner int) (int, *os.File, error) {
	if err := makeStateDirs(name); err != nil {
		return 0, nil, fmt.Errorf("creating state directory: %w", err)
	}
	if err := writeFile(scenarioCopy(name), scenarioText); err != nil {
		return 0, nil, fmt.Errorf("saving scenario: %w", err)
	}
	logf, err := os.OpenFile(LogPath(name), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return 0, nil, fmt.Errorf("creating daemon log: %w", err)
	}
	defer logf.Close()
	exe, err := os.Executable()
	if err != nil {
		return 0, nil, fmt.Errorf("finding the wanlab executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, err
	}
	defer w.Close()
	cmd := exec.Command(exe, "testbed", "daemon", "--source", source, "--owner", strconv.Itoa(owner), name)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w} // fd 3 in the daemon
	// A session of its own: the daemon outlives this command and does not get
	// the terminal's Ctrl-C once the test-bed is up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		return 0, nil, fmt.Errorf("starting the test-bed daemon: %w", err)
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	if err := writeFile(pidPath(name), []byte(strconv.Itoa(pid))); err != nil {
		syscall.Kill(pid, syscall.SIGKILL)
		r.Close()
		return 0, nil, fmt.Errorf("recording daemon pid: %w", err)
	}
	return pid, r, nil
}

// daemonFailed builds the error for a daemon that did not come up.
func daemonFailed(name, msg string) error {
	if m, ok := strings.CutPrefix(msg, "error: "); ok {
		return fmt.Errorf("bringing up test-bed %q: %s", name, m)
	}
	return fmt.Errorf("the daemon of test-bed %q exited before the test-bed was ready; its log is %s", name, LogPath(name))
}

// Down takes test-bed name down and removes everything it had.
func Down(name string) error {
	unlock, err := lockRun()
	if err != nil {
		return err
	}
	defer unlock()
	pid := daemonPID(name)
	if pid == 0 && !slices.Contains(Names(), name) {
		return fmt.Errorf("test-bed %q: %w", name, ErrNotUp)
	}
	if pid != 0 {
		stopDaemon(pid)
	}
	// Also mop up whatever a daemon that died could not remove.
	if err := Teardown(name); err != nil {
		return err
	}
	os.Remove(LogPath(name))
	return nil
}

// stopDaemon asks a daemon to tear down and kills it if it does not exit in time.
func stopDaemon(pid int) {
	syscall.Kill(pid, syscall.SIGTERM)
	if !waitExit(pid, 30*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		waitExit(pid, 5*time.Second)
	}
}

func waitExit(pid int, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !proc.Alive(pid) {
			return true
		}
	}
	return !proc.Alive(pid)
}

// DownAll takes every test-bed on this machine down, live or stale, and
// removes the logs of those that failed.
func DownAll() ([]string, error) {
	var errs []error
	names := Names()
	for _, n := range names {
		if err := Down(n); err != nil && !errors.Is(err, ErrNotUp) {
			errs = append(errs, err)
		}
	}
	// The logs that failed test-beds left for diagnosis go too.
	logs, _ := filepath.Glob(filepath.Join(RunDir, "*.log"))
	for _, l := range logs {
		if !Alive(strings.TrimSuffix(filepath.Base(l), ".log")) {
			os.Remove(l)
		}
	}
	return names, errors.Join(errs...)
}

// Status is a test-bed's configuration with its live counters.
type Status struct {
	*State
	Alive  bool           `json:"alive"`
	Engine *linkemu.Stats `json:"engine,omitempty"`
	TUN    []TUNCounters  `json:"tun"`
}

// TUNCounters are the kernel's counters of one host's TUN device.
type TUNCounters struct {
	Host string `json:"host"`
	// TxDropped are packets the host sent that the engine never read.
	TxDropped uint64 `json:"tx_dropped"`
	RxDropped uint64 `json:"rx_dropped"`
}

// GetStatus reads the state and live counters of test-bed name.
func GetStatus(name string) (*Status, error) {
	st, err := ReadState(name)
	if err != nil {
		return nil, err
	}
	s := &Status{State: st, Alive: daemonPID(name) != 0}
	if !s.Alive {
		return s, nil
	}
	if s.Engine, err = NewStatsReader(name).read("?histogram=1"); err != nil {
		return nil, err
	}
	for _, h := range st.Hosts {
		tx, rx, err := tunCounters(h.Netns)
		if err != nil {
			return nil, fmt.Errorf("reading %s counters of host %s: %w", Device, h.Name, err)
		}
		s.TUN = append(s.TUN, TUNCounters{Host: h.Name, TxDropped: tx, RxDropped: rx})
	}
	return s, nil
}

// StatsReader reads the live counters of a test-bed's engine, keeping its
// connection open between reads so that it can poll at 10 Hz and more.
type StatsReader struct {
	name   string
	client http.Client
}

// NewStatsReader returns a reader of test-bed name's engine counters.
func NewStatsReader(name string) *StatsReader {
	return &StatsReader{name: name, client: http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socketPath(name))
		}},
	}}
}

// Read returns the engine's counters now, without the lateness histogram.
func (r *StatsReader) Read() (*linkemu.Stats, error) { return r.read("") }

func (r *StatsReader) read(query string) (*linkemu.Stats, error) {
	resp, err := r.client.Get("http://engine/stats" + query)
	if err != nil {
		return nil, fmt.Errorf("asking the engine of %q for counters: %w", r.name, err)
	}
	defer resp.Body.Close()
	st := &linkemu.Stats{}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(st); err != nil {
		return nil, fmt.Errorf("reading counters of %q: %w", r.name, err)
	}
	return st, nil
}

// Exec replaces this process with argv running inside host of test-bed name:
// in its network namespace and CPU cgroup, with stdio and exit status those of
// the command. It returns only on failure.
func Exec(name, host string, argv []string) error {
	st, err := readHosts(name)
	if err != nil {
		return err
	}
	if daemonPID(name) == 0 {
		return fmt.Errorf("test-bed %q is not running (its engine is gone); clean it up with: wanlab testbed down %s", name, name)
	}
	h, err := st.Host(host)
	if err != nil {
		return err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCommandNotFound, err)
	}
	if cg, err := cgroup.Detect(); err == nil && cg.Version != cgroup.None {
		if err := cg.Join(h.Cgroup, os.Getpid()); err != nil {
			return fmt.Errorf("joining the cgroups of host %s: %w", host, err)
		}
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") })
	env = append(env, "WANLAB_TESTBED="+name, "WANLAB_HOST="+host, "TMPDIR="+h.DataDir)
	for _, other := range st.Hosts {
		env = append(env, AddrEnv(other.Name)+"="+other.Addr)
	}
	ns, err := nsHandle(h.Netns)
	if err != nil {
		return err
	}
	// The thread stays locked: exec replaces the process from this thread,
	// which is the only one in the host's namespace.
	runtime.LockOSThread()
	if err := netns.Set(ns); err != nil {
		return fmt.Errorf("entering host %s: %w", host, err)
	}
	return syscall.Exec(path, argv, env)
}

// ErrCommandNotFound means the command given to Exec is not on PATH.
var ErrCommandNotFound = errors.New("command not found")

// AddrEnv is the environment variable that holds a host's address in Exec,
// e.g. WANLAB_ADDR_SERVER_1 for host server-1.
func AddrEnv(host string) string {
	return "WANLAB_ADDR_" + strings.ToUpper(strings.ReplaceAll(host, "-", "_"))
}
