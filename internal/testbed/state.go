package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/cgroup"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/topology"
)

// RunDir holds one directory per test-bed, the daemon logs and the lock.
const RunDir = "/run/wanlab"

// State is what a running test-bed records about itself in its directory.
type State struct {
	Name     string               `json:"name"`
	PID      int                  `json:"pid"`
	Created  time.Time            `json:"created"`
	Scenario string               `json:"scenario"` // the file it was brought up from
	Cgroup   string               `json:"cgroup"`   // v1, v2 or none
	Hosts    []Host               `json:"hosts"`
	Routers  []topology.Router    `json:"routers,omitempty"`
	Routing  string               `json:"routing,omitempty"`
	Dirs     []topology.Direction `json:"directions"`
	// Paths are the paths in force: a reroute moves them.
	Paths       []topology.Path        `json:"paths"`
	Unreachable []topology.Unreachable `json:"unreachable,omitempty"`
	// Machine is what it needed of the machine, and what it changed there.
	Machine *MachineState `json:"machine,omitempty"`
	// Changes are the links' changes while it ran, the last maxChanges.
	Changes []backend.LinkChange `json:"changes,omitempty"`
}

// maxChanges bounds the changes a state keeps.
const maxChanges = 5000

// Topology is the test-bed's topology, with the settings and paths in
// force when the state was written, and its own lookups. It cannot route
// again (Reroute does nothing on it): only the daemon's can.
func (st *State) Topology() *topology.Topology {
	t := &topology.Topology{Name: st.Name, Routers: st.Routers, Routing: st.Routing, Dirs: st.Dirs, Paths: st.Paths, Unreachable: st.Unreachable}
	for _, h := range st.Hosts {
		t.Hosts = append(t.Hosts, h.Host)
	}
	return t.WithLookups()
}

// Host returns the host of that name, or an error that lists the hosts.
func (st *State) Host(name string) (Host, error) {
	var names []string
	for _, h := range st.Hosts {
		if h.Name == name {
			return h, nil
		}
		names = append(names, h.Name)
	}
	return Host{}, fmt.Errorf("test-bed %q has no host %q (hosts: %s): %w", st.Name, name, strings.Join(names, ", "), ErrNoHost)
}

// ErrNoHost means a test-bed has no host of that name.
var ErrNoHost = errors.New("no such host")

// DataRoot holds one folder per host of each test-bed, on a real disk (not
// /run, which is memory): the host's files, its agent's data folder, its
// TMPDIR, and the disk that a host's disk: rates throttle. It is root's
// own (0700), never world-writable territory such as /var/tmp: a folder
// there that another user made first would be theirs.
const DataRoot = "/var/lib/wanlab/testbeds"

// DataDir is the folder of a host's files.
func DataDir(name, host string) string { return filepath.Join(DataRoot, name, host) }

func stateDir(name string) string     { return filepath.Join(RunDir, name) }
func statePath(name string) string    { return filepath.Join(stateDir(name), "state.json") }
func hostsPath(name string) string    { return filepath.Join(stateDir(name), "hosts.json") }
func pidPath(name string) string      { return filepath.Join(stateDir(name), "pid") }
func scenarioCopy(name string) string { return filepath.Join(stateDir(name), "scenario.yaml") }

// socketDir holds a test-bed's sockets: mode 0700, so that only root
// reaches its engine and agents whatever the umask.
func socketDir(name string) string  { return filepath.Join(stateDir(name), "sockets") }
func socketPath(name string) string { return filepath.Join(socketDir(name), "engine.sock") }

// AgentSocket is where the agent of a host listens, outside every emulated link.
func AgentSocket(name, host string) string {
	return filepath.Join(socketDir(name), host+".sock")
}

// LogPath is the daemon's log; it outlives a test-bed that failed, so that
// the failure can be read (down and an interrupted up remove it).
func LogPath(name string) string { return filepath.Join(RunDir, name+".log") }

// ErrNotUp means no test-bed of that name exists.
var ErrNotUp = errors.New("no such test-bed is up")

// ReadState loads the state of a test-bed that has finished coming up.
func ReadState(name string) (*State, error) {
	st, err := readStateFile(name, statePath(name), "state")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("test-bed %q: %w", name, ErrNotUp)
	}
	return st, err
}

// readStateFile decodes the state file at path of test-bed name, what it
// holds (its state, its hosts) saying which in errors; a file that is not
// there is fs.ErrNotExist.
func readStateFile(name, path, what string) (*State, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s of test-bed %q: %w", what, name, err)
	}
	defer f.Close()
	st, err := decodeState(f, maxStateBytes)
	if err != nil {
		return nil, fmt.Errorf("%s of test-bed %q: %w", what, name, err)
	}
	return st, nil
}

// maxStateBytes bounds what is read of a state file. The largest test-bed
// (topology.MaxHosts hosts, a path per ordered pair, each listed on the
// directions it crosses) writes far less unless its paths are long.
const maxStateBytes = 1 << 30

// errStateTooLarge means a state file is past maxStateBytes.
var errStateTooLarge = errors.New("state file too large")

// decodeState reads a state of at most limit bytes.
func decodeState(r io.Reader, limit int64) (*State, error) {
	var st State
	lr := &io.LimitedReader{R: r, N: limit}
	if err := json.NewDecoder(lr).Decode(&st); err != nil {
		if lr.N == 0 {
			return nil, fmt.Errorf("more than %d bytes: %w", limit, errStateTooLarge)
		}
		return nil, fmt.Errorf("corrupt: %w", err)
	}
	return &st, nil
}

// writeState writes the state, whole.
func writeState(st *State) error {
	if err := writeJSON(statePath(st.Name), st); err != nil {
		return fmt.Errorf("writing state: %w", err)
	}
	return nil
}

// writeHosts writes the state's hosts alone (hosts.json), once, as the
// test-bed comes up: it is what every command run in a host reads (Exec).
// A graph's state holds a path per ordered pair of hosts (6.9 MB for 100
// hosts on 200 routers), and decoding it in each of the test-bed's 100
// agents as they started took most of the 15 s it came up in. The hosts
// do not change while the test-bed is up, so testbed set and reroutes
// rewrite only the whole state.
func writeHosts(st *State) error {
	if err := writeJSON(hostsPath(st.Name), hostsOnly(st)); err != nil {
		return fmt.Errorf("writing the hosts' state: %w", err)
	}
	return nil
}

// hostsOnly is st without its directions, paths and changes.
func hostsOnly(st *State) *State {
	return &State{Name: st.Name, PID: st.PID, Created: st.Created, Scenario: st.Scenario, Cgroup: st.Cgroup, Hosts: st.Hosts}
}

// writeJSON writes v into path through a file renamed into place.
func writeJSON(path string, v any) error {
	// Compact: indenting the paths of a large test-bed (a path per ordered
	// pair of hosts) would nearly double the file.
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := writeFile(tmp, data); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readHosts loads a test-bed's hosts (a State with its hosts alone), from
// its hosts.json, or from its whole state when it was brought up before
// that file was written.
func readHosts(name string) (*State, error) {
	st, err := readStateFile(name, hostsPath(name), "the hosts")
	if errors.Is(err, fs.ErrNotExist) {
		return ReadState(name)
	}
	return st, err
}

// writeFile writes a file of a test-bed's state, mode 0644 whatever the
// umask: readable by all (testbed status works for any user), writable by
// root alone.
func writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

// makeStateDirs makes a test-bed's state folder (0755) and its socket
// folder (0700), with those modes whatever the umask, and checks them.
func makeStateDirs(name string) error {
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{RunDir, 0o755}, {stateDir(name), 0o755}, {socketDir(name), 0o700}} {
		if err := os.Mkdir(d.path, d.mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating %s: %w", d.path, err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			return err
		}
		if err := datadir.CheckSafe(d.path); err != nil {
			return err
		}
	}
	return nil
}

// daemonPID returns the pid of the test-bed's live daemon, or 0 if none is alive.
// A pid is only believed if that process is a wanlab daemon for this test-bed,
// so a recycled pid is not mistaken for it.
func daemonPID(name string) int {
	data, err := os.ReadFile(pidPath(name))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || !proc.Alive(pid) {
		return 0
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return 0
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) >= 4 && slices.Contains(args, "daemon") && args[len(args)-1] == name {
		return pid
	}
	return 0
}

// Alive reports whether test-bed name has a live engine daemon.
func Alive(name string) bool { return daemonPID(name) != 0 }

// lockRun serialises commands that create or remove test-beds.
func lockRun() (unlock func(), err error) {
	if err := os.Mkdir(RunDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating %s: %w", RunDir, err)
	}
	if err := datadir.CheckSafe(RunDir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(RunDir, ".lock"), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", RunDir, err)
	}
	return func() { f.Close() }, nil
}

// Names lists every test-bed that has anything on this machine: a state
// directory, a namespace or a cgroup, whether or not its daemon is alive.
func Names() []string {
	set := map[string]bool{}
	if entries, err := os.ReadDir(RunDir); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				set[e.Name()] = true
			}
		}
	}
	if entries, err := os.ReadDir(NetnsDir); err == nil {
		for _, e := range entries {
			if rest, ok := strings.CutPrefix(e.Name(), "wanlab."); ok {
				if tb, _, ok := strings.Cut(rest, "."); ok {
					set[tb] = true
				}
			}
		}
	}
	if cg, err := cgroup.Detect(); err == nil {
		for _, c := range cg.Children("wanlab") {
			set[c] = true
		}
	}
	if entries, err := os.ReadDir(DataRoot); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				set[e.Name()] = true
			}
		}
	}
	for _, u := range machineUsers() {
		set[u] = true
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Teardown removes everything test-bed name has on this machine: processes
// in its namespaces and cgroups, the namespaces, the cgroups and its state
// directory. It finds them by name, so it also cleans up after a daemon that
// was killed, and is safe to run on what is already gone.
func Teardown(name string) error {
	var errs []error
	prefix := NetnsName(name, "")
	var nsNames []string
	inodes := map[uint64]bool{}
	if entries, err := os.ReadDir(NetnsDir); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				nsNames = append(nsNames, e.Name())
				if ino, err := netnsInode(e.Name()); err == nil {
					inodes[ino] = true
				}
			}
		}
	}
	pids := processesIn(inodes)
	cg, err := cgroup.Detect()
	if err != nil {
		errs = append(errs, err)
	} else {
		inGroups, _ := cg.Procs("wanlab/" + name)
		for _, pid := range inGroups {
			if pid != os.Getpid() && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	killAll(pids, 2*time.Second)
	for _, ns := range nsNames {
		if err := deleteNetns(ns); err != nil {
			errs = append(errs, err)
		}
	}
	if cg != nil {
		if err := removeGroups(cg, "wanlab/"+name); err != nil {
			errs = append(errs, err)
		}
		if len(cg.Children("wanlab")) == 0 {
			cg.Remove("wanlab")
		}
	}
	if err := restoreMachine(name); err != nil {
		errs = append(errs, fmt.Errorf("putting back machine-wide settings: %w", err))
	}
	if err := os.RemoveAll(stateDir(name)); err != nil {
		errs = append(errs, err)
	}
	if err := removeData(name); err != nil {
		errs = append(errs, fmt.Errorf("removing the hosts' files: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tearing down test-bed %q: %w", name, err)
	}
	return nil
}

// removeData removes a test-bed's data folder, beneath DataRoot and
// without following links out of it.
func removeData(name string) error {
	root, err := os.OpenRoot(DataRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	return root.RemoveAll(name)
}

// removeGroups removes a test-bed's cgroups. A process killed a moment ago
// can still hold its group while its threads exit (its leader already a
// zombie), and rmdir then fails with EBUSY: kill what is still listed and
// try again, for up to 3 s.
func removeGroups(cg *cgroup.Manager, rel string) error {
	err := cg.Remove(rel)
	for deadline := time.Now().Add(3 * time.Second); err != nil && errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		left, _ := cg.Procs(rel)
		for _, pid := range left {
			if pid != os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err = cg.Remove(rel)
	}
	return err
}

// cleanStale tears down every test-bed whose daemon is dead. Call it with the
// run lock held.
func cleanStale() (cleaned []string, err error) {
	var errs []error
	for _, name := range Names() {
		if daemonPID(name) != 0 {
			continue
		}
		if err := Teardown(name); err != nil {
			errs = append(errs, err)
		}
		cleaned = append(cleaned, name)
	}
	return cleaned, errors.Join(errs...)
}
