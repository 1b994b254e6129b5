// Package cgroup puts processes in cgroups with a CPU quota in cores and,
// where the io (v2) or blkio (v1) controller is mounted, a disk rate limit,
// on the unified hierarchy (v2, cpu.max, io.max) or the legacy one (v1, CFS
// quota, blkio throttling), and finds the processes inside a group.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoCPUController means the machine has no cgroup cpu controller to give
// hosts a CPU quota.
var ErrNoCPUController = errors.New("no cgroup cpu controller is mounted (neither v2 with cpu enabled nor v1 cpu)")

// Version is the cgroup hierarchy in use.
type Version int

// The versions.
const (
	None Version = iota
	V1
	V2
)

func (v Version) String() string {
	return [...]string{"none", "v1", "v2"}[v]
}

// period is the CFS period used with every quota.
const period = 100 * time.Millisecond

// Manager creates and removes groups below the mounts it found.
type Manager struct {
	Version Version
	// roots are the mount points that hold each group: the v2 root, or the v1
	// cpu (quota), cpuacct (usage) and blkio mounts, which may be one.
	roots []string
	cpu   string // where quotas are written
	acct  string // where usage is read
	io    string // where disk limits are written and disk usage read; "" for none
}

// Detect finds the cgroup hierarchy that has the cpu controller.
func Detect() (*Manager, error) {
	return detect("/proc/self/mountinfo", v2Controllers)
}

// detect reads mountinfo; controllers lists the controllers a v2 mount has.
func detect(mountinfo string, controllers func(mnt string) []string) (*Manager, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var v2, v1cpu, v1acct, v1blkio string
	var v2io bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || len(fields) < sep+4 {
			continue
		}
		mnt, fstype, super := fields[4], fields[sep+1], strings.Split(fields[sep+3], ",")
		switch fstype {
		case "cgroup2":
			if ctrls := controllers(mnt); slices.Contains(ctrls, "cpu") {
				v2, v2io = mnt, slices.Contains(ctrls, "io")
			}
		case "cgroup":
			if slices.Contains(super, "cpu") {
				v1cpu = mnt
			}
			if slices.Contains(super, "cpuacct") {
				v1acct = mnt
			}
			if slices.Contains(super, "blkio") {
				v1blkio = mnt
			}
		}
	}
	switch {
	case v2 != "":
		m := &Manager{Version: V2, roots: []string{v2}, cpu: v2, acct: v2}
		if v2io {
			m.io = v2
		}
		return m, nil
	case v1cpu != "":
		m := &Manager{Version: V1, roots: []string{v1cpu}, cpu: v1cpu, acct: v1acct, io: v1blkio}
		if v1acct == "" {
			m.acct = v1cpu
		}
		for _, root := range []string{m.acct, m.io} {
			if root != "" && !slices.Contains(m.roots, root) {
				m.roots = append(m.roots, root)
			}
		}
		return m, nil
	}
	return &Manager{Version: None}, nil
}

func v2Controllers(mnt string) []string {
	data, _ := os.ReadFile(filepath.Join(mnt, "cgroup.controllers"))
	return strings.Fields(string(data))
}

// Create makes the group rel (e.g. "wanlab/t1/a") with a quota of cpus cores;
// cpus 0 means no quota. With no cpu controller it fails if a quota is asked
// and otherwise does nothing.
func (m *Manager) Create(rel string, cpus float64) error {
	if m.Version == None {
		if cpus > 0 {
			return ErrNoCPUController
		}
		return nil
	}
	for _, root := range m.roots {
		if m.Version == V2 {
			if err := m.enableControllers(root, rel); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", rel, err)
		}
	}
	return m.setQuota(rel, cpus)
}

// enableControllers turns the cpu (and io) controllers on in root and in
// every ancestor of rel, as v2 requires before a group can have a cpu.max or
// an io.max.
func (m *Manager) enableControllers(root, rel string) error {
	ctrls := "+cpu"
	if m.io != "" {
		ctrls += " +io"
	}
	dir := root
	parts := strings.Split(filepath.Dir(rel), "/")
	for i := 0; ; i++ {
		if err := write(filepath.Join(dir, "cgroup.subtree_control"), ctrls); err != nil {
			return fmt.Errorf("enabling the cgroup controllers: %w", err)
		}
		if i == len(parts) || parts[i] == "." {
			return nil
		}
		dir = filepath.Join(dir, parts[i])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
	}
}

func (m *Manager) setQuota(rel string, cpus float64) error {
	dir := filepath.Join(m.cpu, rel)
	quota := int64(cpus * float64(period/time.Microsecond))
	if m.Version == V2 {
		v := "max"
		if cpus > 0 {
			v = strconv.FormatInt(quota, 10)
		}
		return write(filepath.Join(dir, "cpu.max"), fmt.Sprintf("%s %d", v, period/time.Microsecond))
	}
	if err := write(filepath.Join(dir, "cpu.cfs_period_us"), strconv.FormatInt(int64(period/time.Microsecond), 10)); err != nil {
		return err
	}
	if cpus <= 0 {
		quota = -1
	}
	return write(filepath.Join(dir, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10))
}

// Join moves process pid (all its threads) into group rel.
func (m *Manager) Join(rel string, pid int) error {
	for _, root := range m.roots {
		if err := write(filepath.Join(root, rel, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// Procs lists the processes in group rel and every group below it.
func (m *Manager) Procs(rel string) ([]int, error) {
	if m.Version == None {
		return nil, nil
	}
	var pids []int
	err := filepath.WalkDir(filepath.Join(m.roots[0], rel), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if d.Name() != "cgroup.procs" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil // the group went away while we walked
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids, err
}

// Usage returns the CPU time consumed by group rel so far.
func (m *Manager) Usage(rel string) (time.Duration, error) {
	switch m.Version {
	case V2:
		data, err := os.ReadFile(filepath.Join(m.acct, rel, "cpu.stat"))
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				return time.Duration(us) * time.Microsecond, err
			}
		}
		return 0, fmt.Errorf("cgroup %s: no usage_usec in cpu.stat", rel)
	case V1:
		data, err := os.ReadFile(filepath.Join(m.acct, rel, "cpuacct.usage"))
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		return time.Duration(ns), err
	}
	return 0, ErrNoCPUController
}

// Children lists the names of the groups directly below rel.
func (m *Manager) Children(rel string) []string {
	if m.Version == None {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(m.roots[0], rel))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// Remove deletes group rel and every group below it. The groups must hold no
// process any more. Removing a group that does not exist is not an error.
func (m *Manager) Remove(rel string) error {
	var errs []error
	for _, root := range m.roots {
		top := filepath.Join(root, rel)
		var dirs []string
		filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		// Deepest first: a cgroup with children cannot be removed.
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

func write(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("writing %q to %s: %w", value, path, err)
	}
	return nil
}

// Own returns the group of the calling process in the hierarchy that
// accounts CPU usage, as a path relative to its mount (e.g. "wanlab/t1/a").
func (m *Manager) Own() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	return ownGroup(string(data), m.Version)
}

func ownGroup(procCgroup string, v Version) (string, error) {
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls := strings.Split(parts[1], ",")
		if v == V2 && parts[0] == "0" && parts[1] == "" || v == V1 && slices.Contains(ctrls, "cpuacct") {
			return strings.TrimPrefix(parts[2], "/"), nil
		}
	}
	return "", fmt.Errorf("no %v cpu accounting group in /proc/self/cgroup", v)
}
