// Package train sends and receives trains of UDP packets whose spacing on
// arrival tells a path's capacity (the dispersion of back-to-back packets,
// as pathrate measured it) and available bandwidth (the one-way delay
// trend of periodic streams, as pathload does). The receiver timestamps
// each packet in the kernel (SO_TIMESTAMPNS) and hands the arrivals back;
// the estimates are the controller's (internal/measure). The sender greets
// the receiver with the test's token and sends no train until the receiver
// has proved it knows the token (internal/workload/token), so that an agent
// never sends trains toward something that is not this test's receiver.
package train

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// HeaderLen is the bytes of a train packet that carry its identity: the
// test's token, the stream and sequence numbers and the send time.
const HeaderLen = 16 + 4 + 4 + 8

// Bounds of one call.
const (
	MaxSize    = 9000 - 28
	MaxPackets = 20000
	MaxStreams = 2000
	// MaxGap is the longest spacing a stream's packets may have.
	MaxGap = 100 * time.Millisecond
)

// Stream is one train: Count packets of Size bytes of UDP payload, Gap
// apart (0: back to back), then a Pause before the next stream.
type Stream struct {
	Count int           `json:"count"`
	Size  int           `json:"size"`
	Gap   time.Duration `json:"gap,omitempty"`
	Pause time.Duration `json:"pause,omitempty"`
}

// SenderSpec is the sending side: the streams, in order, to a receiver.
type SenderSpec struct {
	Token   token.Token `json:"token"`
	Address string      `json:"address"`
	Streams []Stream    `json:"streams"`
}

// ReceiverSpec is the receiving side: how many packets to expect, and how
// long to wait for them.
type ReceiverSpec struct {
	Token   token.Token   `json:"token"`
	Expect  int           `json:"expect"`
	Timeout time.Duration `json:"timeout"`
}

// Validate checks the streams against the bounds and the agent's limits.
func (s SenderSpec) Validate(l limits.Limits) error {
	if _, err := net.ResolveUDPAddr("udp", s.Address); err != nil || s.Address == "" {
		return fmt.Errorf("receiver address %q: give host:port", s.Address)
	}
	if len(s.Streams) == 0 || len(s.Streams) > MaxStreams {
		return fmt.Errorf("%d streams: give 1 to %d", len(s.Streams), MaxStreams)
	}
	packets, lasts, bytes := 0, time.Duration(0), int64(0)
	for i, st := range s.Streams {
		if st.Count < 2 {
			return fmt.Errorf("stream %d: %d packets: give at least 2", i+1, st.Count)
		}
		if st.Size < HeaderLen || st.Size > MaxSize {
			return fmt.Errorf("stream %d: size %d: give %d to %d bytes", i+1, st.Size, HeaderLen, MaxSize)
		}
		if st.Gap < 0 || st.Gap > MaxGap || st.Pause < 0 || st.Pause > time.Second {
			return fmt.Errorf("stream %d: gap %v, pause %v: give a gap of 0 to %v and a pause of 0 to 1s", i+1, st.Gap, st.Pause, MaxGap)
		}
		packets += st.Count
		lasts += time.Duration(st.Count)*st.Gap + st.Pause
		if packets <= MaxPackets {
			bytes += int64(st.Count) * int64(st.Size)
		}
	}
	if packets > MaxPackets {
		return fmt.Errorf("%d packets in all: at most %d", packets, MaxPackets)
	}
	if err := l.Bytes("the trains' packets", bytes); err != nil {
		return err
	}
	if l.MaxDuration > 0 && lasts > l.MaxDuration {
		return fmt.Errorf("the streams last %v, above the limit of %v", lasts, l.MaxDuration)
	}
	return nil
}

// Validate checks the receiver's bounds.
func (s ReceiverSpec) Validate(l limits.Limits) error {
	if s.Expect < 2 || s.Expect > MaxPackets {
		return fmt.Errorf("expect %d packets: give 2 to %d", s.Expect, MaxPackets)
	}
	if s.Timeout <= 0 || (l.MaxDuration > 0 && s.Timeout > l.MaxDuration) {
		return fmt.Errorf("timeout %v: give a positive time within the limit of %v", s.Timeout, l.MaxDuration)
	}
	return nil
}

// Arrival is one packet as the receiver saw it.
type Arrival struct {
	Stream int   `json:"s"`
	Seq    int   `json:"q"`
	Sent   int64 `json:"t"` // the sender's clock, Unix ns
	Recv   int64 `json:"r"` // the receiver's kernel timestamp, Unix ns
	Size   int   `json:"n"` // UDP payload bytes
}

// Received is the receiver's summary: every arrival, in order.
type Received struct {
	Arrivals []Arrival `json:"arrivals"`
	// Bytes is the UDP payload of the arrivals.
	Bytes int64 `json:"bytes"`
	// Foreign counts datagrams without the test's token, or from a source
	// that did not greet the receiver with it.
	Foreign int `json:"foreign,omitempty"`
}

// Sent is the sender's summary.
type Sent struct {
	Packets int `json:"packets"`
	// Bytes is the UDP payload of the packets sent (greetings aside).
	Bytes int64 `json:"bytes"`
	// Late counts packets sent more than a gap after their time: the
	// sender's own host could not keep the spacing.
	Late int `json:"late,omitempty"`
}

// Receiver listens for one call's trains.
type Receiver struct {
	spec ReceiverSpec
	conn *net.UDPConn
}

// Listen opens the receiver's socket where the agent's test listeners
// open, with kernel receive timestamps.
func Listen(spec ReceiverSpec, at bind.Local) (*Receiver, error) {
	lc := net.ListenConfig{Control: func(_, _ string, raw syscall.RawConn) error {
		var serr error
		err := raw.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
			if serr == nil {
				// A train arrives faster than it is read: room for a
				// whole call's packets.
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
			}
		})
		if err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("asking for kernel receive timestamps: %w", serr)
		}
		return nil
	}}
	c, err := at.ListenUDP(lc)
	if err != nil {
		return nil, fmt.Errorf("listening for trains: %w", err)
	}
	return &Receiver{spec: spec, conn: c}, nil
}

// Port is where the receiver listens.
func (r *Receiver) Port() int { return r.conn.LocalAddr().(*net.UDPAddr).Port }

// Receive reads packets until it has the expected count, until a second
// passes without one after the first, or until the timeout. It answers the
// sender's greeting with the proof of the token, and takes packets only
// from a source that greeted it.
func (r *Receiver) Receive(ctx context.Context) (Received, error) {
	defer r.conn.Close()
	var out Received
	deadline := time.Now().Add(r.spec.Timeout)
	stop := context.AfterFunc(ctx, func() { r.conn.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, MaxSize+1)
	oob := make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))
	want := r.spec.Token.Bytes()
	admitted := token.NewAdmitted(r.spec.Token)
	for len(out.Arrivals) < r.spec.Expect {
		d := deadline
		if idle := time.Now().Add(time.Second); len(out.Arrivals) > 0 && idle.Before(d) {
			d = idle
		}
		r.conn.SetReadDeadline(d)
		n, oobn, _, from, err := r.conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				break
			}
			return out, fmt.Errorf("receiving trains: %w", err)
		}
		if admitted.Greeting(r.conn, buf[:n], from) {
			continue
		}
		if n < HeaderLen || !slices.Equal(buf[:16], want) || !admitted.Allows(from) {
			out.Foreign++
			continue
		}
		recv := kernelTime(oob[:oobn])
		if recv == 0 {
			recv = time.Now().UnixNano()
		}
		out.Arrivals = append(out.Arrivals, Arrival{
			Stream: int(binary.BigEndian.Uint32(buf[16:])), Seq: int(binary.BigEndian.Uint32(buf[20:])),
			Sent: int64(binary.BigEndian.Uint64(buf[24:])), Recv: recv, Size: n,
		})
		out.Bytes += int64(n)
	}
	return out, nil
}

// kernelTime reads SO_TIMESTAMPNS from a message's control data.
func kernelTime(oob []byte) int64 {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return ts.Nano()
		}
	}
	return 0
}

// GreetWait bounds how long a sender greets the receiver before it gives
// up: the receiver listens before the sender starts.
const GreetWait = 10 * time.Second

// Send greets the receiver and, once it has proved it knows the token,
// sends the streams; toward anything else it sends greetings only and
// fails with token.ErrNotListener. Packets of a stream with a gap are
// spaced by spinning on the clock, not sleeping: a sleep overshoots by
// more than a fast link's packet time.
func Send(ctx context.Context, spec SenderSpec) (Sent, error) {
	var out Sent
	c, err := net.Dial("udp", spec.Address)
	if err != nil {
		return out, fmt.Errorf("reaching the train receiver at %s: %w", spec.Address, err)
	}
	defer c.Close()
	if err := token.GreetUDP(ctx, c, spec.Token, GreetWait); err != nil {
		return out, fmt.Errorf("greeting the train receiver at %s: %w", spec.Address, err)
	}
	buf := make([]byte, MaxSize)
	copy(buf, spec.Token.Bytes())
	batch := ipv4.NewPacketConn(c.(*net.UDPConn))
	for i, st := range spec.Streams {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		binary.BigEndian.PutUint32(buf[16:], uint32(i))
		if st.Gap == 0 {
			// Back to back: the whole train in one sendmmsg, so that the
			// sender's per-packet cost does not space it out.
			n, err := sendTrain(batch, buf, st)
			out.Packets += n
			out.Bytes += int64(n) * int64(st.Size)
			if err != nil && !errors.Is(err, unix.ECONNREFUSED) {
				return out, fmt.Errorf("sending stream %d: %w", i+1, err)
			}
			if err := pause(ctx, st.Pause); err != nil {
				return out, err
			}
			continue
		}
		start := time.Now()
		for q := 0; q < st.Count; q++ {
			due := start.Add(time.Duration(q) * st.Gap)
			now := time.Now()
			for now.Before(due) {
				now = time.Now()
			}
			if st.Gap > 0 && now.Sub(due) > st.Gap {
				out.Late++
			}
			binary.BigEndian.PutUint32(buf[20:], uint32(q))
			binary.BigEndian.PutUint64(buf[24:], uint64(now.UnixNano()))
			if _, err := c.Write(buf[:st.Size]); err != nil {
				if errors.Is(err, unix.ECONNREFUSED) {
					continue // an ICMP error from an earlier packet: the receiver counts what came
				}
				return out, fmt.Errorf("sending stream %d: %w", i+1, err)
			}
			out.Packets++
			out.Bytes += int64(st.Size)
		}
		if err := pause(ctx, st.Pause); err != nil {
			return out, err
		}
	}
	return out, nil
}

// sendTrain writes a back-to-back train with as few system calls as the
// kernel takes, each packet a copy of buf with its sequence number.
func sendTrain(c *ipv4.PacketConn, buf []byte, st Stream) (int, error) {
	msgs := make([]ipv4.Message, st.Count)
	now := uint64(time.Now().UnixNano())
	for q := range msgs {
		p := slices.Clone(buf[:st.Size])
		binary.BigEndian.PutUint32(p[20:], uint32(q))
		binary.BigEndian.PutUint64(p[24:], now)
		msgs[q].Buffers = [][]byte{p}
	}
	sent := 0
	for sent < len(msgs) {
		n, err := c.WriteBatch(msgs[sent:], 0)
		sent += max(n, 0)
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
