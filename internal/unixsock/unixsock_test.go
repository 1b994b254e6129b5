package unixsock

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
)

// TestSocketIsPrivateWhateverTheUmask: under umask 000 the agent and
// engine sockets were srwxrwxrwx, open to every local user.
func TestSocketIsPrivateWhateverTheUmask(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.sock")
	old := syscall.Umask(0)
	ln, err := Listen(path)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

// TestOnlyASocketIsReplaced: --socket naming a regular file used to delete it.
func TestOnlyASocketIsReplaced(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "precious")
	os.WriteFile(file, []byte("data"), 0o600)
	if _, err := Listen(file); !errors.Is(err, ErrNotSocket) {
		t.Errorf("listening on a regular file: %v, want ErrNotSocket", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "data" {
		t.Error("the regular file was removed or changed")
	}
	// A socket left by a process that died is replaced.
	stale := filepath.Join(dir, "stale.sock")
	l, _ := net.Listen("unix", stale)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	ln, err := Listen(stale)
	if err != nil {
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	ln.Close()
}

// TestOtherUsersAreRefused: a process of another user that reaches the
// socket (say the folder was opened up) gets nothing.
func TestOtherUsersAreRefused(t *testing.T) {
	if path := os.Getenv("UNIXSOCK_DIAL"); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			os.Exit(3)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		os.Stdout.Write(b)
		os.Exit(0)
	}
	testsupport.NeedRoot(t)
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir makes both 0700
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "a.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(path, 0o666) // as if a careless admin opened it up
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	// A copy of this test binary that any user may run dials the socket.
	exe := filepath.Join(dir, "dialer")
	if b, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(exe, b, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	dial := func(uid uint32) string {
		cmd := exec.Command(exe, "-test.run=^TestOtherUsersAreRefused$")
		cmd.Env = append(os.Environ(), "UNIXSOCK_DIAL="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the dialling process (uid %d): %v", uid, err)
		}
		return string(out)
	}
	if got := dial(0); !strings.Contains(got, "hello") {
		t.Errorf("root got %q, want hello", got)
	}
	if got := dial(65534); got != "" {
		t.Errorf("user nobody got %q from a socket that is root's", got)
	}
}
