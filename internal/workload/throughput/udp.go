package throughput

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/wanlab/wanlab/internal/workload/token"
)

// Every datagram starts with: magic, stream id, sequence number, send time.
var udpMagic = [4]byte{'W', 'L', 'U', '1'}

const (
	headerLen = 24
	// finSeq marks a stream's end; it is sent a few times in case one is lost.
	finSeq   = math.MaxUint64
	finCount = 5
	// udpGrace is how long a receiver waits past the test for stragglers.
	udpGrace = 2 * time.Second
)

// udpStream is what a receiver knows of one UDP stream.
type udpStream struct {
	expect      uint64 // next sequence number expected
	packets     uint64
	lost        uint64
	outOfOrder  uint64
	bytes       uint64
	jitter      float64 // RFC 3550, in ns
	lastTransit int64
	seen        bool
	fin         bool
	// at the last interval cut
	lastPackets, lastLost, lastOOO uint64
}

func (r *Receiver) runUDP(ctx context.Context, emit func(Interval)) Summary {
	n := r.spec.Streams
	streams := make([]udpStream, n)
	var mu sync.Mutex
	m := newMeter(n)
	started, done := make(chan struct{}), make(chan struct{})
	deadline := time.Now().Add(connectWait + r.spec.Duration + udpGrace)
	if r.spec.Duration == 0 {
		deadline = time.Now().Add(time.Hour)
	}
	r.pc.SetReadDeadline(deadline)
	var readErr error
	admitted := token.NewAdmitted(r.Token)
	pc := r.pc.(*net.UDPConn)
	// Datagrams arrive at the path's rate, faster than one reader drains
	// a default buffer (under 2 ms of them at 1 Gbit/s): what the socket
	// drops would count as the path's loss. The kernel caps it at
	// net.core.rmem_max.
	pc.SetReadBuffer(udpReadBuffer)
	go func() {
		defer close(done)
		buf := make([]byte, MaxUDPLength)
		first, finished := true, 0
		for finished < n {
			k, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				readErr = err
				return
			}
			now := time.Now().UnixNano()
			if admitted.Greeting(pc, buf[:k], from) || !admitted.Allows(from) {
				continue
			}
			if k < headerLen || [4]byte(buf[:4]) != udpMagic {
				continue
			}
			id := int(binary.BigEndian.Uint32(buf[4:]))
			if id >= n {
				continue
			}
			seq := binary.BigEndian.Uint64(buf[8:])
			sent := int64(binary.BigEndian.Uint64(buf[16:]))
			if first {
				m.start = time.Now()
				first = false
				close(started)
			}
			mu.Lock()
			s := &streams[id]
			if seq == finSeq {
				if !s.fin {
					s.fin = true
					finished++
					// Datagrams never seen by the end are lost.
					if fin := int64(binary.BigEndian.Uint64(buf[16:])); fin > int64(s.expect) {
						s.lost += uint64(fin) - s.expect
						s.expect = uint64(fin)
					}
				}
				mu.Unlock()
				continue
			}
			s.packets++
			s.bytes += uint64(k)
			m.bytes[id].Add(uint64(k))
			switch {
			case seq == s.expect:
				s.expect++
			case seq > s.expect:
				s.lost += seq - s.expect
				s.expect = seq + 1
			default: // late: it was counted lost when the gap appeared
				s.outOfOrder++
				if s.lost > 0 {
					s.lost--
				}
			}
			// RFC 3550 jitter: smoothed difference of transit times. Clock
			// offsets between the hosts cancel out.
			transit := now - sent
			if s.seen {
				d := math.Abs(float64(transit - s.lastTransit))
				s.jitter += (d - s.jitter) / 16
			}
			s.lastTransit, s.seen = transit, true
			mu.Unlock()
		}
	}()
	select {
	case <-started:
	case <-done:
		return Summary{Partial: true, Err: fmt.Errorf("no datagram arrived: %v", readErr)}
	case <-ctx.Done():
		r.pc.Close()
		<-done
		return Summary{Partial: true, Err: ctx.Err()}
	}
	fillUDP := func(id int, out *Sample) {
		mu.Lock()
		defer mu.Unlock()
		s := &streams[id]
		out.Packets, out.Lost, out.OutOfOrder = s.packets-s.lastPackets, s.lost-s.lastLost, s.outOfOrder-s.lastOOO
		out.JitterMS = s.jitter / 1e6
		s.lastPackets, s.lastLost, s.lastOOO = s.packets, s.lost, s.outOfOrder
	}
	tickDone := make(chan struct{})
	go func() {
		tick(ctx, r.spec.Interval, done, func() Interval { return m.cut(fillUDP) }, emit)
		close(tickDone)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		r.pc.Close()
		<-done
	}
	<-tickDone
	sum := Summary{Elapsed: time.Since(m.start), Streams: make([]Sample, n)}
	mu.Lock()
	defer mu.Unlock()
	missing := 0
	for i, s := range streams {
		sum.Streams[i] = Sample{ID: i, Bytes: s.bytes, Packets: s.packets, Lost: s.lost, OutOfOrder: s.outOfOrder, JitterMS: s.jitter / 1e6}
		if !s.fin {
			missing++
		}
	}
	switch {
	case ctx.Err() != nil:
		sum.Partial, sum.Err = true, ctx.Err()
	case missing > 0:
		sum.Partial, sum.Err = true, fmt.Errorf("%d of %d streams never signalled their end (%v)", missing, n, readErr)
	}
	return sum
}

func sendUDP(ctx context.Context, spec Spec, addr string, t token.Token, emit func(Interval)) Summary {
	n := spec.Streams
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("udp", addr)
		if err != nil {
			return Summary{Partial: true, Err: fmt.Errorf("stream %d to %s: %w", i, addr, err)}
		}
		defer c.Close()
		conns[i] = c
		if err := token.GreetUDP(ctx, c, t, connectWait); err != nil {
			return Summary{Partial: true, Err: fmt.Errorf("stream %d to %s: %w", i, addr, err)}
		}
	}
	m := newMeter(n)
	m.start = time.Now()
	perStream := spec.UDPRate / float64(n) / 8 / float64(spec.UDPLength) // datagrams per second
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = paceUDP(ctx, c, i, spec, perStream, m)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick(ctx, spec.Interval, done, func() Interval { return m.cut(nil) }, emit)
	<-done
	s := Summary{Elapsed: time.Since(m.start), Streams: m.totals()}
	if err := errors.Join(errs...); err != nil {
		s.Partial, s.Err = true, err
	}
	return s
}

// paceUDP sends one stream's datagrams at its share of the rate. Go's timers
// wake about a millisecond late, so it sends what is due and then sleeps.
func paceUDP(ctx context.Context, c net.Conn, id int, spec Spec, rate float64, m *meter) error {
	buf := make([]byte, spec.UDPLength)
	copy(buf, udpMagic[:])
	binary.BigEndian.PutUint32(buf[4:], uint32(id))
	var seq uint64
	start := time.Now()
	limit := uint64(math.MaxUint64)
	if spec.Bytes > 0 {
		limit = uint64(spec.Bytes) / uint64(spec.UDPLength)
	}
	for ctx.Err() == nil {
		elapsed := time.Since(start)
		if spec.Duration > 0 && elapsed >= spec.Duration || seq >= limit {
			break
		}
		due := uint64(elapsed.Seconds()*rate) + 1
		for ; seq < due && seq < limit; seq++ {
			binary.BigEndian.PutUint64(buf[8:], seq)
			binary.BigEndian.PutUint64(buf[16:], uint64(time.Now().UnixNano()))
			if _, err := c.Write(buf); err != nil {
				// A full socket buffer is the host's loss, not a failure.
				if !errors.Is(err, errNoBufs) {
					return err
				}
				continue
			}
			m.bytes[id].Add(uint64(len(buf)))
		}
		time.Sleep(time.Millisecond)
	}
	// End marker: carries the number of datagrams sent, so the receiver can
	// count the last ones as lost if they never arrive.
	binary.BigEndian.PutUint64(buf[8:], finSeq)
	binary.BigEndian.PutUint64(buf[16:], seq)
	for range finCount {
		c.Write(buf[:headerLen])
		time.Sleep(10 * time.Millisecond)
	}
	return ctx.Err()
}

var errNoBufs = syscall.ENOBUFS

// udpReadBuffer is a UDP receiver's socket buffer (as the packet trains').
const udpReadBuffer = 8 << 20
