package iperf3

import (
	"fmt"
	"math"
	"time"

	"github.com/wanlab/wanlab/internal/workload/job"
)

// MaxKeptIntervals bounds the intervals a Result keeps: a test of an
// hour at 10 ms intervals over 128 streams would otherwise hold hundreds
// of thousands of samples, each with its TCP_INFO.
const MaxKeptIntervals = 600

// Result is one test against an iperf3 server: each stream as its sender
// and its receiver counted it, whoever was which, and the client's
// samples while it ran. It is what throughput's agent-to-agent tests
// report (a sender's and a receiver's summary, the sender's intervals
// with TCP_INFO), so that the two are shown alike.
type Result struct {
	// Server is the server as dialled; Local and Remote are the control
	// connection's ends.
	Server, Local, Remote string
	Reverse               bool
	Streams               []Stream
	// Sent and Received sum the streams as the sender and the receiver
	// counted them.
	Sent, Received Sum
	// Intervals are the client's samples: of what it sent (with its
	// sockets' TCP_INFO), or, reversed, of what it received; the first
	// MaxKeptIntervals of them (OnInterval gets every one), and
	// IntervalsDropped counts those past it.
	Intervals        []Interval
	IntervalsDropped int
	// Congestion is the sender's congestion control, as it said.
	Congestion string
	// ServerCPUPercent is the server's CPU use over the test, as it said.
	ServerCPUPercent float64
	// Partial says the test ended early; Error says why. What was
	// measured until then is kept.
	Partial bool
	Error   string
	// Warnings say what went otherwise than asked without failing the
	// test (a congestion control the server does not have).
	Warnings []string
}

// Stream is one stream of a test.
type Stream struct {
	// ID is iperf3's id of the stream (1, 3, 4, ...).
	ID int
	// Sent and Received are the bytes the sender wrote and the receiver
	// read; SenderSeconds and ReceiverSeconds the times each counted over.
	Sent, Received                 uint64
	SenderSeconds, ReceiverSeconds float64
	// Retransmits are the sender's, in all; nil when it did not say.
	Retransmits *uint32
	// TCP is the client's socket at the end of a test it sent.
	TCP *job.TCPInfo
}

// Sum is every stream, as one end counted them.
type Sum struct {
	Bytes         uint64
	Seconds       float64
	BitsPerSecond float64
	// Retransmits are the sender's; nil when it did not say.
	Retransmits *uint32
}

// Sample is one stream over one interval of the client's.
type Sample struct {
	ID    int
	Bytes uint64
	// Retransmits over the interval, and TCP_INFO at its end: of a
	// stream the client sends.
	Retransmits uint32
	TCP         *job.TCPInfo
}

// Interval is every stream over one interval, from the test's start.
type Interval struct {
	Start, End time.Duration
	Streams    []Sample
}

// BitsPerSecond is the interval's rate over all streams.
func (iv Interval) BitsPerSecond() float64 {
	var b uint64
	for _, s := range iv.Streams {
		b += s.Bytes
	}
	return bps(b, (iv.End - iv.Start).Seconds())
}

func bps(bytes uint64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(bytes) * 8 / seconds
}

// side is one end's count of the streams.
type side struct {
	bytes       []uint64
	seconds     []float64
	retransmits []*uint32
}

func newSide(n int) side {
	return side{bytes: make([]uint64, n), seconds: make([]float64, n), retransmits: make([]*uint32, n)}
}

// assemble fills the streams and sums from the sender's and the
// receiver's counts.
func (r *Result) assemble(ids []int, sent, received side, tcp []*job.TCPInfo) {
	r.Streams = make([]Stream, len(ids))
	var sumRetrans *uint32
	for i, id := range ids {
		s := Stream{ID: id, Sent: sent.bytes[i], Received: received.bytes[i],
			SenderSeconds: sent.seconds[i], ReceiverSeconds: received.seconds[i], Retransmits: sent.retransmits[i]}
		if tcp != nil {
			s.TCP = tcp[i]
		}
		if s.Retransmits != nil {
			if sumRetrans == nil {
				sumRetrans = new(uint32)
			}
			*sumRetrans = uint32(min(uint64(*sumRetrans)+uint64(*s.Retransmits), math.MaxUint32))
		}
		r.Streams[i] = s
		r.Sent.Bytes = addBytes(r.Sent.Bytes, s.Sent)
		r.Received.Bytes = addBytes(r.Received.Bytes, s.Received)
		// iperf3's sums take one stream's time; the longest is as near.
		r.Sent.Seconds = max(r.Sent.Seconds, s.SenderSeconds)
		r.Received.Seconds = max(r.Received.Seconds, s.ReceiverSeconds)
	}
	r.Sent.Retransmits = sumRetrans
	r.Sent.BitsPerSecond = bps(r.Sent.Bytes, r.Sent.Seconds)
	r.Received.BitsPerSecond = bps(r.Received.Bytes, r.Received.Seconds)
}

// addBytes adds byte counts, saturating at the largest: a server's counts
// (each under 2^63) summed over many streams do not wrap around.
func addBytes(a, b uint64) uint64 {
	if b > math.MaxUint64-a {
		return math.MaxUint64
	}
	return a + b
}

// DefaultLinkRate bounds what a server may say a test moved, when
// Options.LinkRate gives no rate: 1.6 Tbit/s, more than any one host's
// links carry.
const DefaultLinkRate = 1.6e12

// linkSlack is how much longer than the client a server may count: it
// stops when it hears TEST_END.
const linkSlack = time.Second

// linkBytes is the most a link of rate bit/s carries in d (and
// linkSlack).
func linkBytes(rate float64, d time.Duration) uint64 {
	b := rate / 8 * (max(d, 0) + linkSlack).Seconds()
	if !(b < math.MaxInt64) { // also NaN
		return math.MaxInt64
	}
	return uint64(b)
}

// capPeer holds the server's counts to what can have moved: in a test the
// client sent, no stream was received more than the client sent; and all
// streams together moved no more than most (what the link carries in the
// test's time). Each count it lowers is said in a warning.
func (r *Result) capPeer(ids []int, ours side, theirs *side, reverse bool, most uint64) {
	left := most
	for i, id := range ids {
		was := theirs.bytes[i]
		if !reverse {
			theirs.bytes[i] = min(theirs.bytes[i], ours.bytes[i])
		}
		theirs.bytes[i] = min(theirs.bytes[i], left)
		left -= theirs.bytes[i]
		if was != theirs.bytes[i] {
			r.Warnings = append(r.Warnings, fmt.Sprintf("the server counts %d bytes on stream %d, more than can have moved: taken as %d", was, id, theirs.bytes[i]))
		}
	}
}
