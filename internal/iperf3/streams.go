package iperf3

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/workload/job"
)

// socketControl sets the window and the congestion control on a stream's
// socket before it connects, so that window scaling is negotiated for it,
// and checks the kernel gave the window, as iperf3 does.
func (s Spec) socketControl(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if s.Window > 0 {
			for _, opt := range []struct {
				opt  int
				name string
			}{{unix.SO_SNDBUF, "wmem_max"}, {unix.SO_RCVBUF, "rmem_max"}} {
				if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt.opt, s.Window); e != nil {
					serr = fmt.Errorf("setting window %d: %w", s.Window, e)
					return
				}
				// Linux doubles what it is given, up to net.core.*mem_max.
				if got, e := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt.opt); e == nil && got < s.Window {
					serr = fmt.Errorf("window %d bytes: the kernel gave %d (net.core.%s bounds it)", s.Window, got, opt.name)
					return
				}
			}
		}
		if s.FQRate > 0 {
			if e := unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, uint64(s.FQRate/8)); e != nil {
				serr = fmt.Errorf("pacing to %.0f bit/s: %w", s.FQRate, e)
				return
			}
		}
		if s.Congestion != "" {
			if e := unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, s.Congestion); e != nil {
				serr = fmt.Errorf("congestion control %q (see /proc/sys/net/ipv4/tcp_available_congestion_control): %w", s.Congestion, e)
			}
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// congestionOf is a socket's congestion control, or "" if unknown.
func congestionOf(c *net.TCPConn) string {
	raw, err := c.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	raw.Control(func(fd uintptr) {
		name, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	return strings.TrimRight(name, "\x00")
}

// streams are a test's data connections and what moved on each.
type streams struct {
	conns []*net.TCPConn
	bytes []atomic.Uint64
	total atomic.Uint64
	// target is the bytes that end the test, in all (0: none); reached
	// closes when they have moved.
	target  uint64
	reached chan struct{}
	once    sync.Once
	// stopped closes when the client ends the test: errors after it are
	// the end's, not the test's.
	stopped chan struct{}
	errs    chan error
	wg      sync.WaitGroup
}

// connect opens the test's streams one after another, as iperf3 does: the
// server numbers them in the order it accepts them, and the results name
// them so. Each opens with the cookie.
func connect(ctx context.Context, d *net.Dialer, network, addr string, cookie [CookieSize]byte, n int) (*streams, error) {
	s := &streams{bytes: make([]atomic.Uint64, n), reached: make(chan struct{}), stopped: make(chan struct{}), errs: make(chan error, n)}
	for i := range n {
		c, err := dial(ctx, d, network, addr, fmt.Sprintf("connecting stream %d", i+1))
		if err != nil {
			s.close()
			return nil, err
		}
		s.conns = append(s.conns, c)
		c.SetNoDelay(false) // as iperf3's streams (Go's default is on)
		c.SetWriteDeadline(time.Now().Add(d.Timeout))
		if _, err := c.Write(cookie[:]); err != nil {
			s.close()
			return nil, failure(ctx, addr, d.Timeout, fmt.Sprintf("sending stream %d's cookie", i+1), err)
		}
		c.SetWriteDeadline(time.Time{})
	}
	return s, nil
}

func (s *streams) close() {
	for _, c := range s.conns {
		c.Close()
	}
}

// add counts n bytes of stream i.
func (s *streams) add(i, n int) {
	s.bytes[i].Add(uint64(n))
	if t := s.total.Add(uint64(n)); s.target > 0 && t >= s.target {
		s.once.Do(func() { close(s.reached) })
	}
}

// fail hands on a stream's error, unless the client ended the test.
func (s *streams) fail(i int, what string, err error) {
	select {
	case <-s.stopped:
		return
	default:
	}
	s.errs <- fmt.Errorf("stream %d: %s: %w", i+1, what, err)
}

// send has every stream write blocks until the end, or until perStream
// bytes (if not 0) are written; then it counts as reached.
func (s *streams) send(block int, perStream uint64, end time.Time) {
	buf := make([]byte, block)
	// Random bytes, as iperf3's default payload: a compressing path gains nothing.
	r := rand.NewChaCha8([32]byte{'w', 'a', 'n', 'l', 'a', 'b'})
	r.Read(buf)
	if perStream > 0 {
		s.target = perStream * uint64(len(s.conns))
	}
	for i, c := range s.conns {
		if !end.IsZero() {
			c.SetWriteDeadline(end)
		}
		s.wg.Go(func() {
			for {
				b := buf
				if perStream > 0 {
					left := perStream - s.bytes[i].Load()
					if left == 0 {
						return
					}
					b = b[:min(uint64(len(b)), left)]
				}
				n, err := c.Write(b)
				s.add(i, n)
				if errors.Is(err, os.ErrDeadlineExceeded) {
					return // the test's end, or the client's stop
				}
				if err != nil {
					s.fail(i, "writing", err)
					return
				}
			}
		})
	}
}

// receive has every stream read until it closes, counting toward total
// (if not 0), which ends the test.
func (s *streams) receive(block int, total uint64) {
	s.target = total
	for i, c := range s.conns {
		s.wg.Go(func() {
			buf := make([]byte, block)
			for {
				n, err := c.Read(buf)
				s.add(i, n)
				if err != nil {
					s.fail(i, "reading", err)
					return
				}
			}
		})
	}
}

// stop ends the streams' sending at once (the test is over) and waits for
// their writers; receivers go on reading until the server closes.
func (s *streams) stop(reverse bool) {
	close(s.stopped)
	if reverse {
		return
	}
	for _, c := range s.conns {
		c.SetWriteDeadline(time.Unix(1, 0))
	}
	s.wg.Wait()
}

// end closes the streams and waits for every goroutine.
func (s *streams) end() {
	select {
	case <-s.stopped:
	default:
		close(s.stopped)
	}
	s.close()
	s.wg.Wait()
}

// tcpInfo samples each stream's TCP_INFO (nil where it cannot).
func (s *streams) tcpInfo() []*job.TCPInfo {
	out := make([]*job.TCPInfo, len(s.conns))
	for i, c := range s.conns {
		if info, err := job.ReadTCPInfo(c); err == nil {
			out[i] = &info
		}
	}
	return out
}

// meter cuts the client's counts into intervals.
type meter struct {
	s        *streams
	start    time.Time
	sender   bool
	last     []uint64
	retrans  []uint32
	lastAt   time.Duration
	progress uint64
	movedAt  time.Time
}

func newMeter(s *streams, start time.Time, sender bool) *meter {
	return &meter{s: s, start: start, sender: sender, last: make([]uint64, len(s.conns)), retrans: make([]uint32, len(s.conns)), movedAt: start}
}

// cut returns the interval since the last cut.
func (m *meter) cut(now time.Time) Interval {
	at := now.Sub(m.start)
	iv := Interval{Start: m.lastAt, End: at, Streams: make([]Sample, len(m.last))}
	var info []*job.TCPInfo
	if m.sender {
		info = m.s.tcpInfo()
	}
	for i := range m.last {
		b := m.s.bytes[i].Load()
		smp := Sample{ID: streamID(i), Bytes: b - m.last[i]}
		if info != nil && info[i] != nil {
			smp.TCP = info[i]
			smp.Retransmits = info[i].TotalRetrans - m.retrans[i]
			m.retrans[i] = info[i].TotalRetrans
		}
		iv.Streams[i] = smp
		m.last[i] = b
	}
	m.lastAt = at
	return iv
}

// stalled says no byte has moved for d.
func (m *meter) stalled(now time.Time, d time.Duration) bool {
	if t := m.s.total.Load(); t != m.progress {
		m.progress, m.movedAt = t, now
		return false
	}
	return now.Sub(m.movedAt) >= d
}

// merge extends interval a by the interval b that follows it.
func merge(a, b Interval) Interval {
	out := Interval{Start: a.Start, End: b.End, Streams: append([]Sample(nil), a.Streams...)}
	for i := range out.Streams {
		if i < len(b.Streams) {
			out.Streams[i].Bytes += b.Streams[i].Bytes
			out.Streams[i].Retransmits += b.Streams[i].Retransmits
			if b.Streams[i].TCP != nil {
				out.Streams[i].TCP = b.Streams[i].TCP
			}
		}
	}
	return out
}
