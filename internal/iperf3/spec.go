// Package iperf3 is a client of iperf3's own protocol: wanlab measures
// throughput toward a far end that runs an iperf3 server (iperf3 -s) and
// no wanlab agent, as iperf3 -c would, without running iperf3. It speaks
// the control protocol of iperf3 3.x (the cookie, the states, the JSON
// parameters and results), opens the TCP streams, sends (or, reversed,
// receives) for a duration or a number of bytes, and returns both ends'
// view of every stream in wanlab's terms, with the sender's retransmits
// from the server's results or from our own sockets' TCP_INFO. Everything
// the server sends is bounded and every wait has a deadline: a busy, a
// silent and a broken server each end the test with an error that says so.
package iperf3

import (
	"errors"
	"fmt"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
)

// Spec is one test against an iperf3 server.
type Spec struct {
	// Streams is the number of parallel TCP streams (-P).
	Streams int
	// Duration ends the test (-t); 0 when Bytes ends it. iperf3 servers
	// take whole seconds: the server is told the duration rounded up,
	// and the client ends the test at Duration.
	Duration time.Duration
	// Bytes per stream ends the test when Duration is 0 (iperf3's -n is
	// their sum; reversed, the test ends when the sum has arrived, however
	// the server spread it); with a Duration, it caps the test, which
	// ends at whichever comes first.
	Bytes int64
	// Reverse has the server send and the client receive (-R).
	Reverse bool
	// Window sets SO_SNDBUF and SO_RCVBUF at both ends (-w); 0 leaves
	// the kernels' autotuning.
	Window int
	// Congestion is the congestion control at both ends (-C); "" for the
	// kernels' default. A server without it keeps its default, and the
	// result says which it used.
	Congestion string
	// FQRate paces each stream's sender to this many bit/s with the
	// kernel's socket pacing (SO_MAX_PACING_RATE, iperf3's --fq-rate),
	// at whichever end sends; 0 does not pace. An iperf3 3.12 server
	// paces only when Window is given too (it sets socket options on its
	// streams' listener only then; later versions on every stream).
	FQRate float64
	// BlockSize is what each write hands the kernel (-l); 0 is iperf3's
	// 128 KiB.
	BlockSize int
	// Interval is how often samples are cut; 0 is a second.
	Interval time.Duration
}

// Bounds of a spec, besides iperf3's own.
const (
	MinInterval = 10 * time.Millisecond
	MaxInterval = 10 * time.Second
	MinWindow   = 4096
	// maxWindow is iperf3's MAX_TCP_BUFFER.
	maxWindow = 512 << 20
	// maxFQRate is the most iperf3 paces a stream to: it hands the
	// kernel bytes a second as a 32-bit number.
	maxFQRate = 8 * (1<<32 - 1)
)

// Validate checks a spec against itself, iperf3's bounds, and an agent's
// limits (limits.Unlimited for the spec's own sense only).
func (s Spec) Validate(l limits.Limits) error {
	if err := l.Streams(s.Streams); err != nil {
		return err
	}
	if s.Streams > MaxStreams {
		return fmt.Errorf("streams %d: an iperf3 server takes at most %d", s.Streams, MaxStreams)
	}
	if err := l.Duration("duration", s.Duration); err != nil {
		return err
	}
	if err := l.BytesTimes("bytes per stream", s.Bytes, int64(s.Streams)); err != nil {
		return err
	}
	switch {
	case s.Duration == 0 && s.Bytes == 0:
		return errors.New("give a duration or a number of bytes")
	case s.Duration > MaxTime*time.Second:
		return fmt.Errorf("duration %v: an iperf3 server takes at most %v", s.Duration, MaxTime*time.Second)
	case s.Window != 0 && (s.Window < MinWindow || s.Window > maxWindow):
		return fmt.Errorf("window %d bytes: give 0 (autotuning) or %d to %d", s.Window, MinWindow, maxWindow)
	case s.BlockSize < 0 || s.BlockSize > MaxBlockSize:
		return fmt.Errorf("block size %d bytes: give 0 (128 KiB) or 1 to %d", s.BlockSize, MaxBlockSize)
	case s.Interval != 0 && (s.Interval < MinInterval || s.Interval > MaxInterval):
		return fmt.Errorf("interval %v: give %v to %v, or 0 for a second", s.Interval, MinInterval, MaxInterval)
	case s.FQRate != 0 && !(s.FQRate >= 8 && s.FQRate <= maxFQRate):
		return fmt.Errorf("fq rate %v bit/s: give 0 (no pacing) or 8 to %.0f bit/s a stream", s.FQRate, float64(maxFQRate))
	case len(s.Congestion) > 15: // TCP_CA_NAME_MAX with its NUL
		return fmt.Errorf("congestion control %q: names are at most 15 characters", s.Congestion)
	}
	return nil
}

func (s Spec) blockSize() int {
	if s.BlockSize == 0 {
		return DefaultBlockSize
	}
	return s.BlockSize
}

func (s Spec) interval() time.Duration {
	if s.Interval == 0 {
		return time.Second
	}
	return s.Interval
}

// params are the spec as the server is told it.
func (s Spec) params() params {
	p := params{
		TCP: true, Parallel: s.Streams, Reverse: s.Reverse, Window: s.Window, Len: s.blockSize(),
		PacingTimer: 1000, Congestion: s.Congestion, ClientVersion: "wanlab", FQRate: uint64(s.FQRate),
	}
	if s.Duration > 0 {
		p.Time = int((s.Duration + time.Second - 1) / time.Second)
	} else {
		p.Num = s.Bytes * int64(s.Streams)
	}
	return p
}

// DefaultTimeout bounds connecting and each wait for the server outside
// the test itself.
const DefaultTimeout = 10 * time.Second

// Options are how the client reaches the server.
type Options struct {
	// Network is "tcp4" or "tcp6" for one family (-4, -6); "" or "tcp"
	// takes the first address the name resolves to.
	Network string
	// LocalAddr is the address to connect from; "" lets the kernel choose.
	LocalAddr string
	// Timeout bounds connecting, each wait for the server's answer, and
	// how long the test may move no data; 0 is DefaultTimeout.
	Timeout time.Duration
	// MaxDuration gives up a test ended by bytes that has not moved them
	// in this long (a server that trickles data keeps clear of Timeout);
	// 0 is DefaultMaxDuration. An agent gives its limit on a test's
	// duration.
	MaxDuration time.Duration
	// OnInterval, if set, gets each interval as it ends, from the test's
	// own goroutine: it must return quickly.
	OnInterval func(Interval)
	// LinkRate is the most the path can carry, in bit/s: the server's
	// counts are held to what it carries in the test's time (0:
	// DefaultLinkRate).
	LinkRate float64
}

func (o Options) linkRate() float64 {
	if !(o.LinkRate > 0) {
		return DefaultLinkRate
	}
	return o.LinkRate
}

// DefaultMaxDuration is the longest a test ended by bytes may run.
const DefaultMaxDuration = time.Hour

func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

func (o Options) maxDuration() time.Duration {
	if o.MaxDuration <= 0 {
		return DefaultMaxDuration
	}
	return o.MaxDuration
}

func (o Options) network() (string, error) {
	switch o.Network {
	case "", "tcp":
		return "tcp", nil
	case "tcp4", "tcp6":
		return o.Network, nil
	}
	return "", fmt.Errorf("network %q: give tcp, tcp4 or tcp6", o.Network)
}
