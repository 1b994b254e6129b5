package throughput

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// tcpMagic opens every stream, followed by the stream's id.
var tcpMagic = [4]byte{'W', 'L', 'T', '1'}

const (
	tcpHeaderLen = 8
	// connectWait bounds how long a receiver waits for all its streams.
	connectWait = 10 * time.Second
	// chunk is how much a sender hands the kernel per call: small enough that
	// even a slow link completes several calls per reporting interval.
	chunk = 64 << 10
)

// socketControl sets the window and congestion control on a socket before it
// connects or listens, so that window scaling is negotiated for it.
func socketControl(spec Spec) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if spec.Window > 0 {
				for _, opt := range []int{unix.SO_SNDBUF, unix.SO_RCVBUF} {
					if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, spec.Window); e != nil {
						serr = fmt.Errorf("setting window %d: %w", spec.Window, e)
					}
				}
			}
			if spec.Congestion != "" && spec.Protocol == TCP {
				if e := unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, spec.Congestion); e != nil {
					serr = congestionError(spec.Congestion, e)
				}
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}

// meter counts bytes per stream and cuts them into intervals.
type meter struct {
	start  time.Time
	bytes  []atomic.Uint64
	last   []uint64
	lastAt time.Duration
}

func newMeter(streams int) *meter {
	return &meter{bytes: make([]atomic.Uint64, streams), last: make([]uint64, streams)}
}

// cut returns the interval since the last cut, calling fill for each stream.
func (m *meter) cut(fill func(id int, s *Sample)) Interval {
	now := time.Since(m.start)
	iv := Interval{Start: m.lastAt, End: now}
	for i := range m.bytes {
		b := m.bytes[i].Load()
		s := Sample{ID: i, Bytes: b - m.last[i]}
		if fill != nil {
			fill(i, &s)
		}
		iv.Streams = append(iv.Streams, s)
		m.last[i] = b
	}
	m.lastAt = now
	return iv
}

func (m *meter) totals() []Sample {
	out := make([]Sample, len(m.bytes))
	for i := range m.bytes {
		out[i] = Sample{ID: i, Bytes: m.bytes[i].Load()}
	}
	return out
}

// tick emits an interval every interval until done is closed. Each interval
// is held back one tick, so that a short tail at the end (a fraction of an
// interval) is folded into the last one instead of showing an absurd rate.
func tick(ctx context.Context, interval time.Duration, done <-chan struct{}, cut func() Interval, emit func(Interval)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var pending *Interval
	for {
		select {
		case <-t.C:
			iv := cut()
			if pending != nil {
				emit(*pending)
			}
			pending = &iv
		case <-done:
			tail := cut()
			switch {
			case pending != nil && tail.End-tail.Start < interval/2:
				emit(merge(*pending, tail))
			case pending != nil:
				emit(*pending)
				fallthrough
			default:
				if tail.End > tail.Start && slices.ContainsFunc(tail.Streams, func(s Sample) bool { return s.Bytes > 0 || s.Packets > 0 }) {
					emit(tail)
				}
			}
			return
		case <-ctx.Done():
			if pending != nil {
				emit(*pending)
			}
			return
		}
	}
}

// merge extends interval a by the interval b that follows it.
func merge(a, b Interval) Interval {
	out := Interval{Start: a.Start, End: b.End, Streams: slices.Clone(a.Streams)}
	for i := range out.Streams {
		if i >= len(b.Streams) {
			break
		}
		s, t := &out.Streams[i], b.Streams[i]
		s.Bytes += t.Bytes
		s.Retransmits += t.Retransmits
		s.Packets += t.Packets
		s.Lost += t.Lost
		s.OutOfOrder += t.OutOfOrder
		if t.TCP != nil {
			s.TCP = t.TCP
		}
		if t.Packets > 0 {
			s.JitterMS = t.JitterMS
		}
	}
	return out
}

// Receiver is the listening side of one test.
type Receiver struct {
	spec Spec
	ln   net.Listener
	pc   net.PacketConn
	// Port is where senders connect, presenting Token.
	Port  int
	Token token.Token
}

// Listen opens the receiver's socket at (its test address and port range)
// and draws the test's token.
func Listen(spec Spec, at bind.Local) (*Receiver, error) {
	r := &Receiver{spec: spec, Token: token.New()}
	lc := net.ListenConfig{Control: socketControl(spec)}
	var err error
	if spec.Protocol == UDP {
		var pc *net.UDPConn
		if pc, err = at.ListenUDP(lc); err == nil {
			r.pc, r.Port = pc, pc.LocalAddr().(*net.UDPAddr).Port
		}
	} else {
		if r.ln, err = at.Listen(lc); err == nil {
			r.Port = r.ln.Addr().(*net.TCPAddr).Port
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listening for a %s test: %w", spec.Protocol, err)
	}
	return r, nil
}

// Run receives the test, emitting intervals, and returns the totals. It ends
// when every stream has finished, or with a partial summary when ctx ends or
// the senders vanish.
func (r *Receiver) Run(ctx context.Context, emit func(Interval)) Summary {
	if r.spec.Protocol == UDP {
		defer r.pc.Close()
		return r.runUDP(ctx, emit)
	}
	defer r.ln.Close()
	return r.runTCP(ctx, emit)
}

func (r *Receiver) runTCP(ctx context.Context, emit func(Interval)) Summary {
	n := r.spec.Streams
	m := newMeter(n)
	var (
		mu        sync.Mutex
		firstErr  error
		connected = make([]bool, n)
		wg        sync.WaitGroup
		started   = make(chan struct{})
		once      sync.Once
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	stop := make(chan struct{})
	defer close(stop)
	conns := token.Accept(r.ln, r.Token, token.Options{Wait: connectWait, Expect: n}, stop)
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	accept := time.NewTimer(connectWait + r.spec.Duration)
	defer accept.Stop()
	// Each stream's header is read on its own, within its own wait, and
	// ends with ctx: a connection slow to send it holds up no other.
	type stream struct {
		c  net.Conn
		id int
	}
	headed := make(chan stream)
	headerCtx, endHeaders := context.WithCancel(ctx)
	defer endHeaders()
	for remaining := n; remaining > 0; {
		select {
		case c, ok := <-conns:
			if !ok {
				return Summary{Streams: m.totals(), Partial: true, Err: errors.New("listener closed")}
			}
			go func() {
				id, err := readTCPHeader(headerCtx, c, n)
				if err != nil {
					c.Close() // a broken sender: not part of this test
					return
				}
				select {
				case headed <- stream{c, id}:
				case <-stop:
					c.Close()
				}
			}()
		case h := <-headed:
			c, id := h.c, h.id
			mu.Lock()
			if connected[id] {
				mu.Unlock()
				c.Close() // stream id connected twice
				continue
			}
			connected[id] = true
			mu.Unlock()
			open = append(open, c)
			remaining--
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 256<<10)
				for {
					k, err := c.Read(buf)
					if k > 0 {
						// The test starts with the first payload, after every
						// stream has connected, as the sender's clock does.
						once.Do(func() { m.start = time.Now(); close(started) })
					}
					m.bytes[id].Add(uint64(k))
					if err == io.EOF {
						return
					}
					if err != nil {
						fail(fmt.Errorf("stream %d: %w", id, err))
						return
					}
				}
			}()
		case <-accept.C:
			return Summary{Streams: m.totals(), Partial: true, Err: fmt.Errorf("only %d of %d streams connected", n-remaining, n)}
		case <-ctx.Done():
			return Summary{Streams: m.totals(), Partial: true, Err: ctx.Err()}
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-started:
	case <-done: // every stream ended before any payload
		once.Do(func() { m.start = time.Now(); close(started) })
	case <-ctx.Done():
		return Summary{Streams: m.totals(), Partial: true, Err: ctx.Err()}
	}
	tickDone := make(chan struct{})
	go func() {
		tick(ctx, r.spec.Interval, done, func() Interval { return m.cut(nil) }, emit)
		close(tickDone)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		fail(ctx.Err())
	}
	for _, c := range open {
		c.Close()
	}
	<-tickDone
	s := Summary{Elapsed: time.Since(m.start), Streams: m.totals()}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		s.Partial, s.Err = true, firstErr
	}
	return s
}

// readTCPHeader reads a stream's header within connectWait; the
// connection is closed at once if ctx ends first.
func readTCPHeader(ctx context.Context, c net.Conn, streams int) (int, error) {
	var h [tcpHeaderLen]byte
	c.SetReadDeadline(time.Now().Add(connectWait))
	stop := context.AfterFunc(ctx, func() { c.Close() })
	_, err := io.ReadFull(c, h[:])
	if !stop() {
		return 0, fmt.Errorf("reading a stream's header: %w", ctx.Err())
	}
	if err != nil {
		return 0, fmt.Errorf("reading a stream's header: %w", err)
	}
	c.SetReadDeadline(time.Time{})
	if [4]byte(h[:4]) != tcpMagic {
		return 0, errors.New("not a wanlab stream")
	}
	id := int(binary.BigEndian.Uint32(h[4:]))
	if id >= streams {
		return 0, fmt.Errorf("stream %d of %d", id, streams)
	}
	return id, nil
}

// Send runs the sending side against the receiver at addr, presenting the
// receiver's token, and returns the totals.
func Send(ctx context.Context, spec Spec, addr string, t token.Token, emit func(Interval)) Summary {
	if spec.Protocol == UDP {
		return sendUDP(ctx, spec, addr, t, emit)
	}
	return sendTCP(ctx, spec, addr, t, emit)
}

func sendTCP(ctx context.Context, spec Spec, addr string, t token.Token, emit func(Interval)) Summary {
	n := spec.Streams
	d := net.Dialer{Timeout: connectWait, Control: socketControl(spec)}
	conns := make([]*net.TCPConn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// All streams connect at once: one after another would take a round
	// trip each before the test could start.
	dialed := make([]*net.TCPConn, n)
	dialErrs := make([]error, n)
	var dwg sync.WaitGroup
	for i := range n {
		dwg.Add(1)
		go func() {
			defer dwg.Done()
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				dialErrs[i] = fmt.Errorf("connecting stream %d to %s: %w", i, addr, err)
				return
			}
			dialed[i] = c.(*net.TCPConn)
			if err := token.Greet(c, t, connectWait); err != nil {
				dialErrs[i] = fmt.Errorf("stream %d to %s: %w", i, addr, err)
				return
			}
			var h [tcpHeaderLen]byte
			copy(h[:], tcpMagic[:])
			binary.BigEndian.PutUint32(h[4:], uint32(i))
			if _, err := dialed[i].Write(h[:]); err != nil {
				dialErrs[i] = fmt.Errorf("stream %d: %w", i, err)
			}
		}()
	}
	dwg.Wait()
	for _, c := range dialed {
		if c != nil {
			conns = append(conns, c)
		}
	}
	if err := errors.Join(dialErrs...); err != nil {
		return Summary{Partial: true, Err: err}
	}
	payload, err := payloadFile()
	if err != nil {
		return Summary{Partial: true, Err: err}
	}
	defer payload.Close()
	// Each stream reads the payload through its own open file (own offset).
	srcs := make([]*os.File, n)
	for i := range srcs {
		if srcs[i], err = os.Open(fmt.Sprintf("/proc/self/fd/%d", payload.Fd())); err != nil {
			return Summary{Partial: true, Err: fmt.Errorf("opening the payload: %w", err)}
		}
		defer srcs[i].Close()
	}

	m := newMeter(n)
	m.start = time.Now()
	end := time.Time{}
	if spec.Duration > 0 {
		end = m.start.Add(spec.Duration)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for i, c := range conns {
		if !end.IsZero() {
			c.SetWriteDeadline(end)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := fill(ctx, c, srcs[i], spec.Bytes, &m.bytes[i])
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("stream %d: %w", i, err)
				}
				mu.Unlock()
			}
			c.CloseWrite()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	lastRetrans := make([]uint32, n)
	cut := func() Interval {
		return m.cut(func(id int, s *Sample) {
			if info, err := job.ReadTCPInfo(conns[id]); err == nil {
				s.TCP = &info
				s.Retransmits = info.TotalRetrans - lastRetrans[id]
				lastRetrans[id] = info.TotalRetrans
			}
		})
	}
	tick(ctx, spec.Interval, done, cut, emit)
	<-done
	s := Summary{Elapsed: time.Since(m.start), Streams: m.totals()}
	for i, c := range conns {
		if info, err := job.ReadTCPInfo(c); err == nil {
			s.Streams[i].TCP = &info
			s.Streams[i].Retransmits = info.TotalRetrans
		}
	}
	if firstErr != nil {
		s.Partial, s.Err = true, firstErr
	}
	return s
}

// fill sends from src until the write deadline passes or limit bytes (if
// non-zero) are sent, counting into sent. A passed deadline is the normal end.
func fill(ctx context.Context, c *net.TCPConn, src *os.File, limit int64, sent *atomic.Uint64) error {
	for ctx.Err() == nil {
		want := int64(chunk)
		if limit > 0 {
			want = min(want, limit-int64(sent.Load()))
			if want <= 0 {
				return nil
			}
		}
		// ReadFrom an *os.File uses sendfile: the payload is never copied
		// through user space.
		if _, err := src.Seek(0, io.SeekStart); err != nil {
			return err
		}
		k, err := c.ReadFrom(io.LimitReader(src, want))
		sent.Add(uint64(k))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// payloadFile is an in-memory file of chunk bytes of pseudo-random data, so
// that compression on the path, if any, gains nothing.
func payloadFile() (*os.File, error) {
	fd, err := unix.MemfdCreate("wanlab-payload", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating the payload: %w", err)
	}
	f := os.NewFile(uintptr(fd), "wanlab-payload")
	buf := make([]byte, chunk)
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i+8 <= len(buf); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(buf[i:], x)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the payload: %w", err)
	}
	return f, nil
}

// congestionError says why a congestion control could not be had: not in
// this kernel (and which are), or not allowed to this process.
func congestionError(name string, err error) error {
	have, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("congestion control %q is not in this kernel (it has %s; the module tcp_%s would add it): %w", name, strings.TrimSpace(string(have)), name, err)
	case errors.Is(err, unix.EPERM):
		allowed, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
		return fmt.Errorf("congestion control %q is not allowed here (net.ipv4.tcp_allowed_congestion_control is %q): %w", name, strings.TrimSpace(string(allowed)), err)
	}
	return fmt.Errorf("congestion control %q: %w (see /proc/sys/net/ipv4/tcp_available_congestion_control)", name, err)
}
