package cgroup

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		file          string
		v2Controllers []string
		want          Version
		cpu, acct, io string
	}{
		{"testdata/hybrid-v1cpu.mountinfo", nil, V1, "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/blkio"},
		{"testdata/hybrid-v1cpu.mountinfo", []string{"cpu", "io", "memory"}, V2, "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified"},
		{"testdata/hybrid-v1cpu.mountinfo", []string{"cpu"}, V2, "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified", ""},
		{"testdata/v1-combined.mountinfo", nil, V1, "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu,cpuacct", ""},
		{"testdata/none.mountinfo", nil, None, "", "", ""},
	}
	for _, tt := range tests {
		m, err := detect(tt.file, func(string) []string { return tt.v2Controllers })
		if err != nil {
			t.Fatal(err)
		}
		if m.Version != tt.want || m.cpu != tt.cpu || m.acct != tt.acct || m.io != tt.io {
			t.Errorf("%s: got %v cpu=%q acct=%q io=%q, want %v cpu=%q acct=%q io=%q", tt.file, m.Version, m.cpu, m.acct, m.io, tt.want, tt.cpu, tt.acct, tt.io)
		}
		if tt.want == V1 && tt.cpu == tt.acct && tt.io == "" && len(m.roots) != 1 {
			t.Errorf("%s: a combined mount must be one root, got %v", tt.file, m.roots)
		}
	}
}

func TestParseIOCounters(t *testing.T) {
	v1 := "254:0 Read 4096\n254:0 Write 8192\n254:0 Sync 0\n254:16 Read 7\nTotal 12288\n"
	if r, w := parseServiceBytes(v1, "254:0"); r != 4096 || w != 8192 {
		t.Errorf("v1 blkio.throttle.io_service_bytes: read %d written %d, want 4096 and 8192", r, w)
	}
	v2 := "254:16 rbytes=1 wbytes=2\n254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
	if r, w := parseIOStat(v2, "254:0"); r != 4096 || w != 8192 {
		t.Errorf("v2 io.stat: read %d written %d, want 4096 and 8192", r, w)
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
	testsupport.NeedRoot(t)
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
	// A half-core quota: the loop never gets more than about half a core,
	// however idle the machine; on a busy one it gets less, so it is
	// watched until it has used half a CPU-second (or 20 s went by).
	before, _ := m.Usage(rel)
	start := time.Now()
	var cpu time.Duration
	for cpu < 500*time.Millisecond && time.Since(start) < 20*time.Second {
		time.Sleep(250 * time.Millisecond)
		after, err := m.Usage(rel)
		if err != nil {
			t.Fatal(err)
		}
		cpu = after - before
	}
	if used := cpu.Seconds() / time.Since(start).Seconds(); used > 0.65 || cpu <= 0 {
		t.Errorf("busy loop used %.2f cores (%s of CPU in %s) under a 0.5-core quota", used, cpu, time.Since(start).Round(time.Millisecond))
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

// TestIOLimitThrottlesDirectWrites writes with O_DIRECT from a group capped
// at 4 MB/s and checks the rate and the group's counters. It needs root, the
// blkio or io controller and a directory on a block device.
func TestIOLimitThrottlesDirectWrites(t *testing.T) {
	testsupport.NeedRoot(t)
	m, err := Detect()
	if err != nil || !m.HasIO() {
		t.Skipf("no io controller here (%v)", err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "wanlab-io-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	disk, err := DiskOf(dir)
	if err != nil {
		t.Skip(err)
	}
	const rel, limit = "wanlab-test/io/writer", 4e6
	t.Cleanup(func() { m.Remove("wanlab-test") })
	if err := m.Create(rel, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.SetIOLimit(rel, disk, 0, limit); err != nil {
		t.Fatal(err)
	}
	// The shell waits for a line, so that it is in the group before dd starts.
	cmd := exec.Command("sh", "-c", "read go; exec dd if=/dev/zero of="+dir+"/f bs=1M count=8 oflag=direct status=none")
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := m.Join(rel, cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	start := time.Now()
	stdin.Write([]byte("go\n"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dd: %v", err)
	}
	rate := 8 << 20 / time.Since(start).Seconds()
	_, written, err := m.IOUsage(rel, disk)
	if err != nil {
		t.Fatal(err)
	}
	if written < 8<<20 {
		t.Errorf("the group wrote %d bytes to %s by its counters, want at least 8 MiB", written, disk.Name)
	}
	if rate > 1.5*limit {
		t.Errorf("dd wrote %.1f MB/s under a 4 MB/s limit", rate/1e6)
	}
}

func TestDiskOf(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err == nil {
		if _, err := DiskOf("/dev/shm"); err == nil || !strings.Contains(err.Error(), "no block device") {
			t.Errorf("DiskOf(/dev/shm), a tmpfs: %v, want an error saying it has no block device", err)
		}
	}
	if _, err := DiskOf("/no/such/dir"); err == nil {
		t.Error("DiskOf of a missing directory succeeded")
	}
	if d, err := DiskOf("/var/tmp"); err == nil && (!strings.Contains(d.Dev, ":") || d.Name == "") {
		t.Errorf("DiskOf(/var/tmp) = %+v: want major:minor and a name", d)
	}
}
