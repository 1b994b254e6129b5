// Package proc reads what wanlab needs to know of a process from /proc: is
// it alive, is it still the process it was (pids are reused), and what it
// has used (CPU time, memory).
package proc

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Stat is a process's state and start time, from /proc/PID/stat.
type Stat struct {
	State     byte   // R, S, D, Z, ...
	StartTime uint64 // in clock ticks since boot: with the pid, names the process
	// CPU is the time the process has run, in user and system mode.
	CPU time.Duration
}

// clockTick is USER_HZ, the unit of /proc's times: 100 on every Linux.
const clockTick = 10 * time.Millisecond

// Read returns pid's stat; ok is false if there is no such process.
func Read(pid int) (st Stat, ok bool) {
	if pid <= 0 {
		return st, false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return st, false
	}
	// The fields follow the command name in parentheses, which may itself
	// hold spaces and parentheses: parse from the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return st, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return st, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64) // field 22 of the whole line
	if err != nil {
		return st, false
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return Stat{State: f[0][0], StartTime: start, CPU: time.Duration(utime+stime) * clockTick}, true
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	st, ok := Read(pid)
	return ok && st.State != 'Z'
}

// ID names a live process across pid reuse, "PID STARTTIME", or "" if pid
// is not running.
func ID(pid int) string {
	st, ok := Read(pid)
	if !ok || st.State == 'Z' {
		return ""
	}
	return strconv.Itoa(pid) + " " + strconv.FormatUint(st.StartTime, 10)
}

// RSS is pid's resident memory in bytes, or -1 if it cannot be read.
func RSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

// ThreadCPU is the CPU time the calling OS thread has used: meaningful
// between two calls on a goroutine locked to its thread.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
