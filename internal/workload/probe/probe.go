// Package probe measures round-trip and one-way delay, jitter and loss with
// UDP probes, in the manner of TWAMP light: a prober sends numbered probes at
// an interval, a reflector returns each with its receive and send times and
// its count of the probes it received (as STAMP's stateful reflector does:
// count.go), and the prober stamps the return; the counts give the loss on
// each way (loss.go). Receive times come from the kernel (SO_TIMESTAMPNS),
// so they do not include the agent's own scheduling.
//
// The package is the probe workload kind too (Kind): the agents run the
// prober and the reflector (this file, trace.go), the controller asks
// them for a round (Measure) or a trace (MeasureTrace) through measure's
// endpoints, and a scenario's probe step is a Step.
package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Spec is one probe run.
type Spec struct {
	Count    int
	Interval time.Duration
	Size     int           // datagram payload, at least HeaderLen
	Timeout  time.Duration // how long to wait for the last reply
}

// HeaderLen is the probe's header: magic, sequence, and three timestamps
// (a probe of NumberedLen bytes has room for the reflector's count too).
const HeaderLen = 36

var magic = [4]byte{'W', 'L', 'P', '1'}

// Bounds of a sane run.
const (
	MinInterval = time.Millisecond
	MaxCount    = 1_000_000
	MaxSize     = 9000
)

// Validate checks a spec, and that the run (its probes and the wait for
// the last reply) is within the limits' duration.
func (s Spec) Validate(l limits.Limits) error {
	switch {
	case s.Count < 1 || s.Count > MaxCount:
		return fmt.Errorf("count %d: give 1 to %d probes", s.Count, MaxCount)
	case s.Interval < MinInterval:
		return fmt.Errorf("interval %v: give at least %v", s.Interval, MinInterval)
	case s.Size < HeaderLen || s.Size > MaxSize:
		return fmt.Errorf("size %d: give %d to %d bytes", s.Size, HeaderLen, MaxSize)
	case s.Timeout <= 0:
		return errors.New("timeout must be positive")
	}
	d, ok := limits.Mul(int64(s.Count), s.Interval)
	if ok {
		d, ok = limits.Add(d, s.Timeout)
	}
	if !ok || d > l.MaxDuration {
		return fmt.Errorf("%d probes %v apart: %w of %v", s.Count, s.Interval, limits.ErrLimit, l.MaxDuration)
	}
	return nil
}

// Result is one probe. Times are Unix nanoseconds on each host's clock.
type Result struct {
	Seq        int
	Sent       int64 // prober, user space
	ReflectRx  int64 // reflector, kernel
	ReflectTx  int64 // reflector, user space
	Received   int64 // prober, kernel; 0 if the probe or its reply was lost
	Duplicates int
	// ReflectorCount is how many distinct probes the reflector had
	// received when it answered, this one included, and ReflectorSession
	// its number for the prober's session (count.go); 0 when the
	// reflector does not number them, or no reply came.
	ReflectorCount, ReflectorSession uint32
}

// Lost reports whether no reply came back.
func (r Result) Lost() bool { return r.Received == 0 }

// RTT is the round trip without the reflector's turnaround time.
func (r Result) RTT() time.Duration {
	return time.Duration((r.Received - r.Sent) - (r.ReflectTx - r.ReflectRx))
}

// Forward and Back are the one-way delays; they mean something only when the
// two hosts' clocks agree.
func (r Result) Forward() time.Duration { return time.Duration(r.ReflectRx - r.Sent) }
func (r Result) Back() time.Duration    { return time.Duration(r.Received - r.ReflectTx) }

// timestamped asks the kernel for receive timestamps on c.
func timestamped(c *net.UDPConn) (*net.UDPConn, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	var serr error
	raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
	if serr != nil {
		c.Close()
		return nil, fmt.Errorf("asking for kernel timestamps: %w", serr)
	}
	return c, nil
}

// read reads one datagram and its kernel receive time.
func read(c *net.UDPConn, buf, oob []byte) (int, *net.UDPAddr, int64, error) {
	n, oobn, _, from, err := c.ReadMsgUDP(buf, oob)
	if err != nil {
		return 0, nil, 0, err
	}
	at := time.Now().UnixNano()
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
				// struct timespec: seconds, then nanoseconds, in the host's byte order.
				sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
				nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
				at = sec*1e9 + nsec
			}
		}
	}
	return n, from, at, nil
}

// Reflector returns probes to the senders that presented its token.
type Reflector struct {
	conn  *net.UDPConn
	Port  int
	Token token.Token
}

// NewReflector opens the reflector's socket at (its test address and port
// range) and draws its token.
func NewReflector(at bind.Local) (*Reflector, error) {
	c, err := at.ListenUDP(net.ListenConfig{})
	if err == nil {
		c, err = timestamped(c)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the reflector: %w", err)
	}
	return &Reflector{conn: c, Port: c.LocalAddr().(*net.UDPAddr).Port, Token: token.New()}, nil
}

// Run reflects probes until ctx ends or idle passes with none, and returns
// how many it reflected.
func (r *Reflector) Run(ctx context.Context, idle time.Duration) (int, error) {
	defer r.conn.Close()
	go func() {
		<-ctx.Done()
		r.conn.SetReadDeadline(time.Now())
	}()
	buf, oob := make([]byte, MaxSize), make([]byte, 128)
	reflected := 0
	admitted := token.NewAdmitted(r.Token)
	counts := newCounter()
	now := func() int64 { return time.Now().UnixNano() }
	for {
		r.conn.SetReadDeadline(time.Now().Add(idle))
		n, from, rx, err := read(r.conn, buf, oob)
		if err != nil {
			if ctx.Err() != nil {
				return reflected, ctx.Err()
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return reflected, nil
			}
			return reflected, err
		}
		if admitted.Greeting(r.conn, buf[:n], from.AddrPort()) || !admitted.Allows(from.AddrPort()) {
			continue
		}
		if !counts.reflect(buf[:n], from.AddrPort(), rx, now) {
			continue
		}
		if _, err := r.conn.WriteToUDP(buf[:n], from); err == nil {
			reflected++
		}
	}
}

// Run sends spec.Count probes to the reflector at addr, once it has answered
// the token t, and returns one result per probe, in order.
func Run(ctx context.Context, spec Spec, addr string, t token.Token) ([]Result, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	var c *net.UDPConn
	if err == nil {
		c, err = net.DialUDP("udp", nil, raddr)
	}
	if err == nil {
		c, err = timestamped(c)
	}
	if err != nil {
		return nil, fmt.Errorf("probing %s: %w", addr, err)
	}
	defer c.Close()
	// The reflector answers the token within a round trip: twice the time
	// a reply may take, and at least 2 s.
	if err := token.GreetUDP(ctx, c, t, max(2*spec.Timeout, 2*time.Second)); err != nil {
		return nil, fmt.Errorf("probing %s: %w (or the path is down)", addr, err)
	}
	results := make([]Result, spec.Count)
	var mu sync.Mutex
	recvDone := make(chan error, 1)
	go func() {
		buf, oob := make([]byte, MaxSize), make([]byte, 128)
		for {
			n, _, at, err := read(c, buf, oob)
			if err != nil {
				recvDone <- err
				return
			}
			rep, ok := decodeReply(buf[:n])
			if !ok || rep.Seq >= uint64(spec.Count) {
				continue
			}
			mu.Lock()
			r := &results[rep.Seq]
			switch {
			case r.Sent == 0:
				// Not sent by this run (yet): not its reply.
			case r.Received != 0:
				r.Duplicates++
			default:
				r.ReflectRx, r.ReflectTx, r.Received = rep.ReflectRx, rep.ReflectTx, at
				r.ReflectorCount, r.ReflectorSession = rep.Count, rep.Session
			}
			mu.Unlock()
		}
	}()
	buf := make([]byte, spec.Size)
	copy(buf, magic[:])
	start := time.Now()
	var sendErr error
	for i := range spec.Count {
		// Keep to the schedule from the start, so that late wake-ups do not add up.
		if wait := time.Until(start.Add(time.Duration(i) * spec.Interval)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		binary.BigEndian.PutUint64(buf[4:], uint64(i))
		now := time.Now().UnixNano()
		binary.BigEndian.PutUint64(buf[12:], uint64(now))
		mu.Lock()
		results[i] = Result{Seq: i, Sent: now}
		mu.Unlock()
		if _, err := c.Write(buf); err != nil && sendErr == nil {
			sendErr = fmt.Errorf("sending probe %d: %w", i, err)
		}
	}
	select {
	case <-time.After(spec.Timeout):
	case <-ctx.Done():
	}
	c.Close()
	<-recvDone
	mu.Lock()
	defer mu.Unlock()
	out := make([]Result, 0, spec.Count)
	for i, r := range results {
		if r.Sent == 0 {
			break // not sent: the run was cut short
		}
		r.Seq = i
		out = append(out, r)
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	end := time.Now()
	if step := ClockStep(time.Duration(end.UnixNano()-start.UnixNano()), end.Sub(start)); step != 0 {
		return out, fmt.Errorf("%w by %v during the probes: their round trips and one-way delays across the step are wrong (measure again)", ErrClockStep, step)
	}
	return out, sendErr
}

// ErrClockStep means the host's clock was stepped during a run.
var ErrClockStep = errors.New("the clock stepped")

// stepTolerance is how far the wall clock may drift from the monotonic one
// over a run before it counts as stepped (slewing moves it by at most
// 0.05%: 0.5 ms over a 1 s run).
const stepTolerance = time.Millisecond

// ClockStep is how far the wall clock jumped over a run, from the time
// that passed by the wall clock and by the monotonic one (an NTP step, a
// date command), or 0 when they kept within the tolerance. Probe times are
// wall-clock times (the kernel's receive stamps are), so a step inside a
// run falsifies the round trips that span it.
func ClockStep(wall, mono time.Duration) time.Duration {
	step := wall - mono
	if step.Abs() <= stepTolerance+mono/2000 {
		return 0
	}
	return step
}
