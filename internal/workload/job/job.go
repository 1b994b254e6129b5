// Package job holds what the application workloads share: the record of one
// job (a client session, a task, a file transfer), CPU work that costs real
// CPU time so that a host's CPU quota slows it as a slow machine would, a
// connection's TCP_INFO, and the accept loop of their servers.
package job

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wanlab/wanlab/internal/proc"
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
	// TCP figures of the job's connections at its end, where measured: the
	// smoothed round trip (mean over connections) and retransmitted segments.
	TCPRTTms       float64 `json:"tcp_rtt_ms,omitempty"`
	TCPRetransmits uint32  `json:"tcp_retransmits,omitempty"`
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
	start := proc.ThreadCPU()
	n := 0
	for proc.ThreadCPU()-start < d {
		for range 2000 {
			n++
		}
	}
	spun.Add(int64(n)) // keeps the loop from being optimised away
}

var spun atomic.Int64

// Serve accepts connections on ln and handles each in a goroutine of its
// own, at most limit at once (a connection past them is closed), until ctx
// ends; then it closes the listener and every connection and returns once
// all handlers have. A test's servers pass a token.Listener, which hands
// on only the connections that presented the test's token.
func Serve(ctx context.Context, ln net.Listener, limit int, handle func(net.Conn)) {
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	var wg sync.WaitGroup
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		mu.Lock()
		full := len(conns) >= limit || ctx.Err() != nil // over the limit, or the server ends
		if !full {
			conns[c] = true
		}
		mu.Unlock()
		if full {
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			handle(c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
	}
	wg.Wait()
}

// TCPInfo is a sample of the kernel's TCP_INFO for one connection.
type TCPInfo struct {
	SndCwnd      uint32 // segments
	SndMSS       uint32 // bytes
	RTT          uint32 // us
	RTTVar       uint32 // us
	TotalRetrans uint32
	PacingRate   uint64 // bytes per second
}

// ReadTCPInfo samples TCP_INFO of a TCP connection.
func ReadTCPInfo(c net.Conn) (TCPInfo, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return TCPInfo{}, errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return TCPInfo{}, err
	}
	var info *unix.TCPInfo
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return TCPInfo{}, err
	}
	if gerr != nil {
		return TCPInfo{}, gerr
	}
	return TCPInfo{
		SndCwnd: info.Snd_cwnd, SndMSS: info.Snd_mss, RTT: info.Rtt, RTTVar: info.Rttvar,
		TotalRetrans: info.Total_retrans, PacingRate: info.Pacing_rate,
	}, nil
}

// AddTCP records the TCP figures of one more of the job's n connections.
func (r *Record) AddTCP(info TCPInfo, n int) {
	r.TCPRTTms += float64(info.RTT) / 1000 / float64(n)
	r.TCPRetransmits += info.TotalRetrans
}
