// Package throughput runs memory-to-memory throughput tests between two
// hosts: a receiver that accepts N streams and counts what arrives, and a
// sender that fills them, over TCP (sampling TCP_INFO) or paced UDP (with loss,
// reordering and jitter). It knows addresses and sockets, nothing of test-beds.
package throughput

import (
	"errors"
	"fmt"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// Protocol is the transport of a test.
type Protocol int

// The protocols.
const (
	TCP Protocol = iota + 1
	UDP
)

func (p Protocol) String() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	}
	return "unknown"
}

// Spec is one throughput test.
type Spec struct {
	Protocol Protocol
	Streams  int
	// Duration ends the test; if it is 0, Bytes per stream does.
	Duration time.Duration
	Bytes    int64
	// Window sets SO_SNDBUF and SO_RCVBUF; 0 leaves the kernel's autotuning.
	Window     int
	Congestion string
	// UDP only: the target rate over all streams in bit/s, and the datagram size.
	UDPRate   float64
	UDPLength int
	Interval  time.Duration
}

// Bounds of a sane test.
const (
	MinWindow   = 4096
	MinInterval = 10 * time.Millisecond
	// MaxInterval bounds how long an agent waits for a report of the
	// bytes a test moved (it counts them toward bytes_per_day).
	MaxInterval  = 10 * time.Second
	MinUDPLength = 16 + headerLen
	MaxUDPLength = 65507
)

// Validate checks a spec against itself and against the limits.
func (s Spec) Validate(l limits.Limits) error {
	if s.Protocol != TCP && s.Protocol != UDP {
		return errors.New("protocol must be tcp or udp")
	}
	if err := l.Streams(s.Streams); err != nil {
		return err
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
	case s.Window != 0 && s.Window < MinWindow:
		return fmt.Errorf("window %d bytes: give 0 (autotuning) or at least %d", s.Window, MinWindow)
	case s.Interval < MinInterval || s.Interval > MaxInterval:
		return fmt.Errorf("interval %v: give %v to %v", s.Interval, MinInterval, MaxInterval)
	}
	if s.Protocol == UDP {
		if err := l.Rate(s.UDPRate); err != nil {
			return fmt.Errorf("udp %w", err)
		}
		switch {
		case s.UDPLength < MinUDPLength || s.UDPLength > MaxUDPLength:
			return fmt.Errorf("datagram length %d: give %d to %d bytes", s.UDPLength, MinUDPLength, MaxUDPLength)
		}
	}
	return nil
}

// Sample is one stream over one interval, or over the whole test.
type Sample struct {
	ID          int
	Bytes       uint64
	Retransmits uint32       // TCP sender
	TCP         *job.TCPInfo // TCP sender, at the end of the interval
	// UDP receiver.
	Packets, Lost, OutOfOrder uint64
	JitterMS                  float64
}

// Interval is every stream over one interval of the test.
type Interval struct {
	Start, End time.Duration
	Streams    []Sample
}

// Summary is a whole test as one side saw it.
type Summary struct {
	Elapsed time.Duration
	Streams []Sample
	// Partial says the test ended early; Err says why.
	Partial bool
	Err     error
}
