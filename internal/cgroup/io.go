package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNoIOController means the machine has no cgroup controller that can
// throttle a host's disk (neither v2 io nor v1 blkio).
var ErrNoIOController = errors.New("no cgroup io controller is mounted (neither v2 with io enabled nor v1 blkio)")

// Disk is the whole block device under a directory, as the kernel's
// throttling files name it ("254:0").
type Disk struct {
	Dev  string // major:minor
	Name string // e.g. vda
}

// DiskOf finds the disk that holds dir. Throttling applies to whole disks,
// so a partition is traced to its disk; a directory on a filesystem with no
// block device (tmpfs, overlay) cannot be throttled and is an error.
func DiskOf(dir string) (Disk, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return Disk{}, fmt.Errorf("finding the disk under %s: %w", dir, err)
	}
	major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)
	real, err := filepath.EvalSymlinks(sys)
	if major == 0 || err != nil {
		return Disk{}, fmt.Errorf("%s is on a filesystem with no block device (device %d:%d), so its disk cannot be throttled: put it on a real disk", dir, major, minor)
	}
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		real = filepath.Dir(real)
	}
	dev, err := os.ReadFile(filepath.Join(real, "dev"))
	if err != nil {
		return Disk{}, fmt.Errorf("finding the disk under %s: %w", dir, err)
	}
	return Disk{Dev: strings.TrimSpace(string(dev)), Name: filepath.Base(real)}, nil
}

// HasIO says whether disk limits can be set.
func (m *Manager) HasIO() bool { return m.io != "" }

// SetIOLimit caps the bytes per second that group rel reads from and writes
// to disk; 0 leaves a direction unlimited.
func (m *Manager) SetIOLimit(rel string, disk Disk, readBps, writeBps int64) error {
	if m.io == "" {
		return ErrNoIOController
	}
	dir := filepath.Join(m.io, rel)
	if m.Version == V2 {
		limit := func(v int64) string {
			if v <= 0 {
				return "max"
			}
			return strconv.FormatInt(v, 10)
		}
		return write(filepath.Join(dir, "io.max"), fmt.Sprintf("%s rbps=%s wbps=%s", disk.Dev, limit(readBps), limit(writeBps)))
	}
	for _, l := range []struct {
		file string
		bps  int64
	}{{"blkio.throttle.read_bps_device", readBps}, {"blkio.throttle.write_bps_device", writeBps}} {
		if l.bps > 0 {
			if err := write(filepath.Join(dir, l.file), fmt.Sprintf("%s %d", disk.Dev, l.bps)); err != nil {
				return err
			}
		}
	}
	return nil
}

// IOCountedAtSubmission says whether IOUsage counts I/O when it is
// submitted, before a cap's throttle delays it (v1's
// blkio.throttle.io_service_bytes), rather than when it goes to the disk
// (v2's io.stat).
func (m *Manager) IOCountedAtSubmission() bool { return m.Version == V1 }

// IOUsage returns the bytes group rel has read from and written to disk.
func (m *Manager) IOUsage(rel string, disk Disk) (read, written int64, err error) {
	if m.io == "" {
		return 0, 0, ErrNoIOController
	}
	if m.Version == V2 {
		data, err := os.ReadFile(filepath.Join(m.io, rel, "io.stat"))
		if err != nil {
			return 0, 0, err
		}
		read, written = parseIOStat(string(data), disk.Dev)
		return read, written, nil
	}
	data, err := os.ReadFile(filepath.Join(m.io, rel, "blkio.throttle.io_service_bytes"))
	if err != nil {
		return 0, 0, err
	}
	read, written = parseServiceBytes(string(data), disk.Dev)
	return read, written, nil
}

// parseIOStat reads v2's "254:0 rbytes=N wbytes=M rios=..." lines.
func parseIOStat(data, dev string) (read, written int64) {
	for _, line := range strings.Split(data, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != dev {
			continue
		}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "rbytes":
				read += n
			case "wbytes":
				written += n
			}
		}
	}
	return read, written
}

// parseServiceBytes reads v1's "254:0 Read N" and "254:0 Write N" lines.
func parseServiceBytes(data, dev string) (read, written int64) {
	for _, line := range strings.Split(data, "\n") {
		fields := strings.Fields(line)
		if len(fields) != 3 || fields[0] != dev {
			continue
		}
		n, _ := strconv.ParseInt(fields[2], 10, 64)
		switch fields[1] {
		case "Read":
			read += n
		case "Write":
			written += n
		}
	}
	return read, written
}
