package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestThisProcess(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	if id := ID(os.Getpid()); id == "" || id != ID(os.Getpid()) {
		t.Errorf("ID of this process: %q, not stable", id)
	}
}

func TestNoProcess(t *testing.T) {
	for _, pid := range []int{0, -1, 1 << 30} {
		if Alive(pid) || ID(pid) != "" {
			t.Errorf("pid %d taken for a live process", pid)
		}
	}
}

// TestZombie: a child that has exited but is not yet reaped is not alive.
func TestZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skipf("no true command to start: %v", err)
	}
	defer cmd.Wait()
	for range 1000 {
		if st, ok := Read(cmd.Process.Pid); ok && st.State == 'Z' {
			if Alive(cmd.Process.Pid) || ID(cmd.Process.Pid) != "" {
				t.Error("a zombie taken for a live process")
			}
			return
		}
		exec.Command("sleep", "0.001").Run()
	}
	t.Error("the child never showed as a zombie")
}

func TestOwnUsage(t *testing.T) {
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	st, ok := Read(os.Getpid())
	if !ok || st.CPU < 10*time.Millisecond {
		t.Errorf("this process's CPU after 50 ms of spinning: %v (%v)", st.CPU, ok)
	}
	if rss := RSS(os.Getpid()); rss < 1<<20 {
		t.Errorf("this process's RSS: %d bytes", rss)
	}
	if RSS(0) != -1 {
		t.Error("RSS of pid 0 is not -1")
	}
}
