package cgroup

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		file      string
		v2HasCPU  bool
		want      Version
		cpu, acct string
	}{
		{"testdata/hybrid-v1cpu.mountinfo", false, V1, "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct"},
		{"testdata/hybrid-v1cpu.mountinfo", true, V2, "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified"},
		{"testdata/v1-combined.mountinfo", false, V1, "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu,cpuacct"},
		{"testdata/none.mountinfo", false, None, "", ""},
	}
	for _, tt := range tests {
		m, err := detect(tt.file, func(string) bool { return tt.v2HasCPU })
		if err != nil {
			t.Fatal(err)
		}
		if m.Version != tt.want || m.cpu != tt.cpu || m.acct != tt.acct {
			t.Errorf("%s: got %v cpu=%q acct=%q, want %v cpu=%q acct=%q", tt.file, m.Version, m.cpu, m.acct, tt.want, tt.cpu, tt.acct)
		}
		if tt.want == V1 && tt.cpu == tt.acct && len(m.roots) != 1 {
			t.Errorf("%s: a combined mount must be one root, got %v", tt.file, m.roots)
		}
	}
}

func TestNoControllerRefusesQuota(t *testing.T) {
	m := &Manager{Version: None}
	if err := m.Create("wanlab/x/a", 0.5); err != ErrNoCPUController {
		t.Errorf("Create with a quota and no controller: %v, want ErrNoCPUController", err)
	}
	if err := m.Create("wanlab/x/a", 0); err != nil {
		t.Errorf("Create without a quota and no controller: %v, want nil", err)
	}
}

// TestQuotaLimitsCPU runs a busy loop in a half-core group and checks the
// group's usage against the quota. It needs root and a cpu controller.
func TestQuotaLimitsCPU(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	m, err := Detect()
	if err != nil || m.Version == None {
		t.Skipf("no cpu controller here (%v)", err)
	}
	const rel = "wanlab-test/quota/busy"
	t.Cleanup(func() { m.Remove("wanlab-test") })
	if err := m.Create(rel, 0.5); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := m.Join(rel, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	pids, err := m.Procs("wanlab-test")
	if err != nil || !slices.Contains(pids, cmd.Process.Pid) {
		t.Fatalf("Procs = %v, %v; want it to contain %d", pids, err, cmd.Process.Pid)
	}
	before, _ := m.Usage(rel)
	const window = time.Second
	time.Sleep(window)
	after, err := m.Usage(rel)
	if err != nil {
		t.Fatal(err)
	}
	used := (after - before).Seconds() / window.Seconds()
	// A half-core quota: well under one core, and clearly above nothing.
	if used > 0.65 || used < 0.2 {
		t.Errorf("busy loop used %.2f cores under a 0.5-core quota", used)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err := m.Remove("wanlab-test"); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if c := m.Children(""); slices.Contains(c, "wanlab-test") {
		t.Error("group still there after Remove")
	}
}

func TestOwnGroup(t *testing.T) {
	v1 := "4:memory:/x\n2:cpuacct:/wanlab/t1/a\n1:cpu:/wanlab/t1/a\n0::/\n"
	v1combined := "3:cpu,cpuacct:/wanlab/t2/b\n"
	v2 := "0::/wanlab/t3/c\n"
	tests := []struct {
		in   string
		v    Version
		want string
	}{{v1, V1, "wanlab/t1/a"}, {v1combined, V1, "wanlab/t2/b"}, {v2, V2, "wanlab/t3/c"}}
	for _, tt := range tests {
		if got, err := ownGroup(tt.in, tt.v); err != nil || got != tt.want {
			t.Errorf("ownGroup(%q, %v) = %q, %v; want %q", tt.in, tt.v, got, err, tt.want)
		}
	}
	if _, err := ownGroup("0::/\n", V1); err == nil {
		t.Error("found a v1 group in a v2-only file")
	}
}
