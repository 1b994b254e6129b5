// Package job holds what the application workloads share: the record of one
// job (a client session, a task, a file transfer), and CPU work that costs
// real CPU time so that a host's CPU quota slows it as a slow machine would.
package job

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Record is one job as it ran.
type Record struct {
	ID      int       `json:"id"`
	Host    string    `json:"host"`
	Subject string    `json:"subject,omitempty"` // e.g. the peer of a transfer
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Bytes   int64     `json:"bytes"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
}

// Job statuses.
const (
	OK        = "ok"
	Timeout   = "timeout"   // a request got no answer within the RPC timeout
	Failed    = "failed"    // any other error: a reset, a refused connection
	Corrupt   = "corrupt"   // data arrived but its checksum did not match
	Cancelled = "cancelled" // the run was stopped while the job ran
)

// Wallclock is how long the job ran.
func (r Record) Wallclock() time.Duration { return r.End.Sub(r.Start) }

// Burn spins until the calling thread has used d of CPU time. Under a CPU
// quota that takes longer than d of wall-clock time, as the same work does on
// a slower machine.
func Burn(d time.Duration) {
	if d <= 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	n := 0
	for threadCPU()-start < d {
		for range 2000 {
			n++
		}
	}
	spun.Add(int64(n)) // keeps the loop from being optimised away
}

var spun atomic.Int64

func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
