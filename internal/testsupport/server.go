package testsupport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/proc"
)

// instancePrefix names the directory of every private server (and every
// OwnedDir), under the temporary directory, so that the next run finds what
// a killed one left.
const instancePrefix = "wanlab-testserver-"

// ownerFile in an instance's directory records the test process that owns
// it: "PID STARTTIME", so that a recycled pid is not taken for the owner.
const ownerFile = "owner"

// instance is one private server: its process and its directory.
type instance struct {
	kind string
	dir  string
	cmd  *exec.Cmd
	// exited is closed once the process has ended (and been waited for).
	exited chan struct{}
	// stop asks the server to end; the process is killed if it does not
	// within a few seconds.
	stop syscall.Signal
}

var (
	mu        sync.Mutex
	instances []*instance
)

// Main runs the tests of a package and then stops every server they
// started, whatever the outcome. Use it as the package's TestMain:
//
//	func TestMain(m *testing.M) { testsupport.Main(m) }
//
// A binary that dies (a panic, SIGKILL) takes its servers with it: each is
// started with a parent-death signal, and its directory is removed by the
// next test binary that starts a server.
func Main(m *testing.M) {
	code := m.Run()
	StopAll()
	os.Exit(code)
}

// StopAll stops every server this process started and removes their directories.
func StopAll() {
	mu.Lock()
	defer mu.Unlock()
	for _, in := range instances {
		in.terminate()
	}
	instances = nil
}

func (in *instance) terminate() {
	if in.exited != nil {
		in.cmd.Process.Signal(in.stop)
		select {
		case <-in.exited:
		case <-time.After(10 * time.Second):
			in.cmd.Process.Kill()
			<-in.exited
		}
	}
	os.RemoveAll(in.dir)
}

// newServer finds the program name, of the package of the same name (the
// test is skipped or fails as Need says if it is not installed), and makes
// a new server of that kind, terminated at the test's end.
func newServer(t testing.TB, name string) (bin string, in *instance) {
	t.Helper()
	Need(t, name)
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	in, err = newInstance(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.terminate)
	return bin, in
}

// newInstance makes the directory of a new server of kind.
func newInstance(kind string) (*instance, error) {
	dir, err := OwnedDir(kind)
	if err != nil {
		return nil, err
	}
	return &instance{kind: kind, dir: dir, stop: syscall.SIGTERM}, nil
}

// OwnedDir makes a temporary directory that belongs to this test process,
// after removing those that earlier, killed test runs left: for a private
// server, or for what a test binary builds. Its owner removes it.
func OwnedDir(kind string) (string, error) {
	sweep()
	dir, err := os.MkdirTemp("", instancePrefix+kind+"-")
	if err != nil {
		return "", fmt.Errorf("making a directory for a private %s: %w", kind, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(proc.ID(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// start runs the server's command, which dies with this process, and
// registers it for StopAll.
func (in *instance) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// If this test binary dies, so does the server (Linux only). The signal
	// is the server's own shutdown request, so it cleans up after itself.
	cmd.SysProcAttr.Pdeathsig = in.stop
	cmd.SysProcAttr.Setpgid = true
	log, err := os.Create(filepath.Join(in.dir, in.kind+".log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := spawn(cmd); err != nil {
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	in.cmd, in.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(in.exited) }()
	mu.Lock()
	instances = append(instances, in)
	mu.Unlock()
	return nil
}

// StartBound starts cmd so that it gets sig if this test binary dies (a
// go test -timeout panic runs no cleanup): a service a test started
// shuts down, and takes its test-bed down, with the test.
func StartBound(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	return spawn(cmd)
}

// spawnRequests carries commands to the one thread that starts servers.
var (
	spawnOnce     sync.Once
	spawnRequests = make(chan spawnRequest)
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// spawn starts cmd from a thread that lives as long as the process: the
// parent-death signal fires when the thread that forked the child exits,
// and the Go runtime ends the threads of goroutines that exit locked.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: this thread stays
			for r := range spawnRequests {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error)
	spawnRequests <- spawnRequest{cmd, done}
	return <-done
}

// logTail is the end of the server's log, for an error message.
func (in *instance) logTail() string {
	b, _ := os.ReadFile(filepath.Join(in.dir, in.kind+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// sweep removes the servers and directories of test processes that are gone.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), instancePrefix+"*"))
	for _, dir := range dirs {
		owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err == nil {
			pid, _ := strconv.Atoi(strings.Fields(string(owner) + " 0")[0])
			if pid > 0 && proc.ID(pid) == string(owner) {
				continue // its test binary is still running
			}
		} else if fi, err := os.Stat(dir); err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue // being made right now
		}
		stopLeftPostgres(dir)
		os.RemoveAll(dir)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitFor calls ready until it succeeds, the process exits, or limit passes.
func (in *instance) waitFor(limit time.Duration, ready func() error) error {
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) {
		if err = ready(); err == nil {
			return nil
		}
		select {
		case <-in.exited:
			return fmt.Errorf("the private %s exited: %s", in.kind, in.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.Join(fmt.Errorf("the private %s was not ready within %v: %s", in.kind, limit, in.logTail()), err)
}

// TempRoot opens a new folder of the test's as an os.Root, as the agent
// gives its workloads their folders.
func TempRoot(t testing.TB) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
