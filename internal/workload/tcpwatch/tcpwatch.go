// Package tcpwatch samples the kernel's TCP state (TCP_INFO through
// sock_diag netlink) of any application's connections in the host it runs
// in, every few milliseconds, without touching the application: what
// web100 showed of a GridFTP transfer in ../shared/seeds/004. A watch
// selects connections by port, peer and process, and hands its samples on
// in batches; the controller turns counters into rates and shares of time.
package tcpwatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/proc"
	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/limits"
)

// Bounds of a watch.
const (
	MinInterval = time.Millisecond
	MaxInterval = 10 * time.Second
	// MaxConns is the most connections one sample holds; more are counted
	// as skipped, so a busy server cannot make a watch unbounded.
	MaxConns = 2000
	// batchEvery is how often samples are handed on.
	batchEvery = 500 * time.Millisecond
)

// Spec is what to watch and how often.
type Spec struct {
	// Port selects connections with this local or remote port; 0, any.
	Port int `json:"port,omitempty"`
	// Peer selects connections whose remote address is this address or
	// in this prefix.
	Peer string `json:"peer,omitempty"`
	// PID selects connections whose socket this process holds open.
	PID int `json:"pid,omitempty"`
	// Cgroup selects connections whose socket a process of this control
	// group holds open: its path below the cgroup root, as
	// /proc/PID/cgroup shows it (system.slice/nginx.service).
	Cgroup   string        `json:"cgroup,omitempty"`
	Interval time.Duration `json:"interval"`
	// Duration is how long to watch; 0, until stopped (within the agent's
	// limit on a test's duration).
	Duration time.Duration `json:"duration,omitempty"`
}

// Validate checks the spec against itself and the agent's limits.
func (s Spec) Validate(l limits.Limits) error {
	if s.Port < 0 || s.Port > 65535 {
		return fmt.Errorf("port %d: give 1-65535, or 0 for any", s.Port)
	}
	if s.Peer != "" {
		if _, err := parsePeer(s.Peer); err != nil {
			return err
		}
	}
	if s.PID < 0 {
		return fmt.Errorf("process %d: give a process id above 0", s.PID)
	}
	if s.Cgroup != "" {
		if _, err := cgroupPath(s.Cgroup); err != nil {
			return err
		}
	}
	if s.Interval < MinInterval || s.Interval > MaxInterval {
		return fmt.Errorf("interval %v: give %v to %v", s.Interval, MinInterval, MaxInterval)
	}
	if s.Duration < 0 || (s.Duration > 0 && s.Duration < s.Interval) {
		return fmt.Errorf("duration %v: give at least one interval (%v), or 0 to watch until stopped", s.Duration, s.Interval)
	}
	if l.MaxDuration > 0 && s.Duration > l.MaxDuration {
		return fmt.Errorf("duration %v is above the limit of %v", s.Duration, l.MaxDuration)
	}
	return nil
}

func parsePeer(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("peer %q: give an address or a prefix such as 10.0.0.0/24", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// Conn is a connection a watch saw, numbered in the order it appeared.
type Conn struct {
	ID     int    `json:"id"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
}

// Name is the connection as reports show it: local->remote.
func (c Conn) Name() string { return c.Local + "->" + c.Remote }

// Sample is one connection's TCP_INFO at one instant. Counters are
// cumulative since the connection began; times are microseconds.
type Sample struct {
	T             int64  `json:"t"` // Unix nanoseconds
	Conn          int    `json:"c"`
	State         uint8  `json:"st"`
	Cwnd          uint32 `json:"cwnd"` // segments
	Ssthresh      uint32 `json:"ssthresh"`
	MSS           uint32 `json:"mss"`
	RTT           uint32 `json:"rtt"`
	RTTVar        uint32 `json:"rttvar"`
	Retrans       uint32 `json:"retrans"` // segments retransmitted, in all
	Unacked       uint32 `json:"unacked"` // segments in flight
	PacingRate    uint64 `json:"pacing"`  // bytes/s
	DeliveryRate  uint64 `json:"delivery"`
	AppLimited    bool   `json:"app_limited,omitempty"`
	BytesAcked    uint64 `json:"acked"`
	BytesReceived uint64 `json:"received"`
	Busy          uint64 `json:"busy"`
	RwndLimited   uint64 `json:"rwnd_limited"`
	SndbufLimited uint64 `json:"sndbuf_limited"`
	NotSent       uint32 `json:"notsent"`   // bytes written but not yet sent
	Delivered     uint32 `json:"delivered"` // segments delivered, selectively acknowledged included
}

// Batch is what a watch hands on: the connections that appeared since the
// last batch, and the samples taken.
type Batch struct {
	Conns   []Conn   `json:"conns,omitempty"`
	Samples []Sample `json:"samples"`
}

// Summary is how the watch went: how many intervals it sampled and missed,
// the intervals it achieved, and what the sampling cost.
type Summary struct {
	Ticks  int `json:"ticks"`
	Missed int `json:"missed"`
	Conns  int `json:"conns"`
	// Skipped counts connections beyond MaxConns in a sample.
	Skipped int `json:"skipped,omitempty"`
	// The achieved intervals between consecutive samples.
	IntervalP50 float64 `json:"interval_p50_ms"`
	IntervalP99 float64 `json:"interval_p99_ms"`
	IntervalMax float64 `json:"interval_max_ms"`
	// CPU is the CPU time the sampling thread used, and CPUPercent that as
	// a share of one core over the watch.
	CPU        float64 `json:"cpu_seconds"`
	CPUPercent float64 `json:"cpu_percent"`
	// Priority is the sampling thread's scheduling: "realtime"
	// (SCHED_FIFO), "nice -20" (where a CPU cgroup without a real-time
	// budget refuses FIFO, as a test-bed host's does), or "normal" (an
	// agent without CAP_SYS_NICE). Busy hosts delay a raised one less.
	Priority string `json:"priority"`
	Error    string `json:"error,omitempty"`
}

// Run samples until ctx ends or the spec's duration is over, handing each
// batch to emit (from the sampling goroutine). An error of emit ends the
// watch.
func Run(ctx context.Context, spec Spec, emit func(Batch) error) (Summary, error) {
	var sum Summary
	peer := netip.Prefix{}
	if spec.Peer != "" {
		peer, _ = parsePeer(spec.Peer)
	}
	if spec.PID > 0 {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(spec.PID))); err != nil {
			return sum, fmt.Errorf("process %d: no such process on this host", spec.PID)
		}
	}
	if spec.Cgroup != "" {
		if _, err := cgroupProcs(spec.Cgroup); err != nil {
			return sum, err
		}
	}
	if spec.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.Duration)
		defer cancel()
	}
	type ended struct {
		sum Summary
		err error
	}
	done := make(chan ended, 1)
	go func() {
		// One thread does the sampling, so that its CPU time is the
		// watch's; it runs ahead of the hosts' busy processes where the
		// agent may (SCHED_FIFO, lowest priority), and, being changed,
		// ends with the watch instead of going back to the runtime.
		runtime.LockOSThread()
		s, err := sampleLoop(ctx, spec, peer, emit)
		done <- ended{s, err}
	}()
	e := <-done
	return e.sum, e.err
}

// sampleLoop is Run's sampling, on a thread of its own.
func sampleLoop(ctx context.Context, spec Spec, peer netip.Prefix, emit func(Batch) error) (Summary, error) {
	var sum Summary
	sum.Priority = raisePriority()
	d, err := openDiag()
	if err != nil {
		return sum, err
	}
	defer d.Close()
	w := &watcher{spec: spec, peer: peer, d: d, ids: map[connKey]int{}}
	cpu0 := proc.ThreadCPU()
	start := time.Now()
	var gaps []time.Duration
	var batch Batch
	lastEmit, last := start, time.Time{}
	for k := int64(0); ; k++ {
		next := start.Add(time.Duration(k) * spec.Interval)
		// After a late sample the next waits at least half an interval:
		// rates over a sliver of time are mostly noise.
		if half := last.Add(spec.Interval / 2); !last.IsZero() && next.Before(half) {
			next = half
		}
		if d := time.Until(next); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		now := time.Now()
		if late := now.Sub(next); late >= spec.Interval {
			skip := int64(late / spec.Interval)
			sum.Missed += int(skip)
			k += skip
		}
		if err := w.sample(now, &batch, &sum); err != nil {
			sum.Error = err.Error()
			break
		}
		if !last.IsZero() {
			gaps = append(gaps, now.Sub(last))
		}
		last = now
		sum.Ticks++
		if now.Sub(lastEmit) >= batchEvery {
			if err := emit(batch); err != nil {
				return sum, err
			}
			batch, lastEmit = Batch{}, now
		}
	}
	elapsed := time.Since(start)
	if len(batch.Samples) > 0 || len(batch.Conns) > 0 {
		if err := emit(batch); err != nil {
			return sum, err
		}
	}
	sum.Conns = len(w.ids)
	sum.CPU = (proc.ThreadCPU() - cpu0).Seconds()
	if elapsed > 0 {
		sum.CPUPercent = 100 * sum.CPU / elapsed.Seconds()
	}
	slices.Sort(gaps)
	if n := len(gaps); n > 0 {
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		sum.IntervalP50, sum.IntervalP99, sum.IntervalMax = ms(gaps[n/2]), ms(gaps[min(n-1, n*99/100)]), ms(gaps[n-1])
	}
	if sum.Error != "" {
		return sum, errors.New(sum.Error)
	}
	return sum, nil
}

type connKey struct {
	local, remote netip.AddrPort
}

type watcher struct {
	spec Spec
	peer netip.Prefix
	d    *diagSocket
	ids  map[connKey]int
	// known are the selected connections, looked up one by one at each
	// sample: a dump of the kernel's whole table finds new ones every
	// discoverEvery.
	known  []*diagConn
	found  time.Time
	inodes map[uint32]bool
	seen   time.Time // when inodes was read
}

// discoverEvery is how often a watch looks for new connections: a
// connection's first moments, up to this long, may go unseen.
const discoverEvery = 100 * time.Millisecond

// sample takes one sample of every selected connection into b.
func (w *watcher) sample(now time.Time, b *Batch, sum *Summary) error {
	if w.byProcess() && now.Sub(w.seen) >= time.Second {
		inodes, err := w.processInodes()
		if err != nil {
			return err
		}
		w.inodes, w.seen = inodes, now
	}
	taken := 0
	take := func(c *diagConn) bool {
		if taken == MaxConns {
			sum.Skipped++
			return false
		}
		taken++
		b.Samples = append(b.Samples, w.sampleOf(now, c, b))
		return true
	}
	if now.Sub(w.found) >= discoverEvery {
		w.found = now
		w.known = w.known[:0]
		for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
			err := w.d.dump(family, func(c *diagConn) {
				if w.selects(c) && take(c) {
					k := *c
					w.known = append(w.known, &k)
				}
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	gone := make([]bool, len(w.known))
	err := w.d.lookup(w.known, func(i int, c *diagConn) {
		if !live(c.State) || !w.selects(c) || !take(c) {
			gone[i] = true
		}
	}, func(i int) { gone[i] = true })
	kept := w.known[:0]
	for i, k := range w.known {
		if !gone[i] {
			kept = append(kept, k)
		}
	}
	w.known = kept
	return err
}

// live says a connection's TCP_INFO still moves: not closed or in
// time-wait, which single lookups (unlike dumps) do not filter out.
func live(state uint8) bool { return liveStates&(1<<state) != 0 }

func (w *watcher) selects(c *diagConn) bool {
	if w.spec.Port != 0 && int(c.Local.Port()) != w.spec.Port && int(c.Remote.Port()) != w.spec.Port {
		return false
	}
	if w.peer.IsValid() && !w.peer.Contains(c.Remote.Addr()) {
		return false
	}
	if w.byProcess() && !w.inodes[c.Inode] {
		return false
	}
	return true
}

func (w *watcher) sampleOf(now time.Time, c *diagConn, b *Batch) Sample {
	key := connKey{c.Local, c.Remote}
	id, ok := w.ids[key]
	if !ok {
		id = len(w.ids) + 1
		w.ids[key] = id
		b.Conns = append(b.Conns, Conn{ID: id, Local: key.local.String(), Remote: key.remote.String()})
	}
	i := &c.Info
	return Sample{
		T: now.UnixNano(), Conn: id, State: c.State,
		Cwnd: i.Snd_cwnd, Ssthresh: i.Snd_ssthresh, MSS: i.Snd_mss, RTT: i.Rtt, RTTVar: i.Rttvar,
		Retrans: i.Total_retrans, Unacked: i.Unacked, PacingRate: i.Pacing_rate, DeliveryRate: i.Delivery_rate,
		AppLimited: c.AppLimited, BytesAcked: i.Bytes_acked, BytesReceived: i.Bytes_received,
		Busy: i.Busy_time, RwndLimited: i.Rwnd_limited, SndbufLimited: i.Sndbuf_limited, NotSent: i.Notsent_bytes, Delivered: i.Delivered,
	}
}

// byProcess says the watch selects by the processes holding sockets.
func (w *watcher) byProcess() bool { return w.spec.PID > 0 || w.spec.Cgroup != "" }

// processInodes are the socket inodes of the selected process, or of every
// process of the selected cgroup.
func (w *watcher) processInodes() (map[uint32]bool, error) {
	if w.spec.PID > 0 {
		return socketInodes(w.spec.PID)
	}
	pids, err := cgroupProcs(w.spec.Cgroup)
	if err != nil {
		return nil, err
	}
	all := map[uint32]bool{}
	for _, pid := range pids {
		inodes, err := socketInodes(pid)
		if err != nil {
			continue // ended since the cgroup was read
		}
		maps.Copy(all, inodes)
	}
	return all, nil
}

// cgroupRoot is where the control groups are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupPath checks a cgroup path (relative to the cgroup root, no ..).
func cgroupPath(p string) (string, error) {
	clean := filepath.Clean(strings.TrimPrefix(p, "/"))
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || !filepath.IsLocal(clean) {
		return "", fmt.Errorf("cgroup %q: give its path below the cgroup root, as /proc/PID/cgroup shows it", p)
	}
	return clean, nil
}

// cgroupProcs lists the processes of a cgroup: of the unified hierarchy,
// else of the first v1 hierarchy that has it.
func cgroupProcs(p string) ([]int, error) {
	rel, err := cgroupPath(p)
	if err != nil {
		return nil, err
	}
	candidates := []string{filepath.Join(cgroupRoot, rel, "cgroup.procs")}
	for _, c := range []string{"pids", "cpu", "memory", "systemd"} {
		candidates = append(candidates, filepath.Join(cgroupRoot, c, rel, "cgroup.procs"))
	}
	for _, file := range candidates {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var pids []int
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return pids, nil
	}
	return nil, fmt.Errorf("cgroup %q: no such control group on this host", p)
}

// socketInodes are the inodes of the sockets a process holds open.
func socketInodes(pid int) (map[uint32]bool, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the open files of process %d (gone, or not visible to the agent): %w", pid, err)
	}
	out := map[uint32]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed while we read
		}
		if in, ok := strings.CutPrefix(target, "socket:["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(in, "]"), 10, 32); err == nil {
				out[uint32(n)] = true
			}
		}
	}
	return out, nil
}

// raisePriority gives the calling thread the highest scheduling priority
// the agent may, and says which.
func raisePriority() string {
	if unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1, Flags: unix.SCHED_FLAG_RESET_ON_FORK}, 0) == nil {
		return "realtime"
	}
	if unix.Setpriority(unix.PRIO_PROCESS, 0, -20) == nil { // the thread: Linux's nice is per thread
		return "nice -20"
	}
	return "normal"
}
