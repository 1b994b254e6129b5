package kind

// The round trips of messages on a TCP connection that stays open (a task
// farm's worker and its master): slow start from the initial window, and
// Linux's restart of the window after the connection idled.

import (
	"math"
	"time"

	"github.com/wanlab/wanlab/internal/sim"
)

// RTOMin is Linux's least retransmission timeout beyond the smoothed
// round trip (TCP_RTO_MIN): on a path of steady round trips a
// connection's RTO is its RTT plus this.
const RTOMin = 200 * time.Millisecond

// ConnAssumption is what TCPConn assumes, for a Model's Assumptions.
const ConnAssumption = "A message on a connection that stays open takes one round trip per flight of its congestion window: slow start from 10 segments on a fresh connection, doubling each round trip, the window growing by the message's segments; after the connection idled longer than its RTO (its round trip plus 200 ms), Linux's slow start after idle (net.ipv4.tcp_slow_start_after_idle, 1 in every network namespace) halves the window once per RTO idle, down to 10 segments, for every congestion control but BBR, which keeps its window (the model cannot see a scenario that sets the sysctl to 0). No loss."

// TCPConn is one TCP connection that stays open between messages, from
// one host to another: its congestion window as each message it sends
// starts (the zero window is a fresh connection's).
type TCPConn struct {
	// MSS is a segment's payload in bytes (PathFacts.MSS).
	MSS int
	// RTT is the path's round trip.
	RTT time.Duration
	// CC is the congestion control of the sending host (bbr keeps its
	// window over idle periods).
	CC string
	// cwnd is the window in segments; 0 before the first message.
	cwnd float64
}

// ConnOf is a fresh connection on path.
func ConnOf(path PathFacts) *TCPConn {
	return &TCPConn{MSS: path.MSS(), RTT: path.RTT, CC: path.Congestion}
}

// Message sends a message of bytes after the connection idled idle
// seconds since its last one, and says how many round trips beyond the
// first it takes: its window's flights, doubling each round trip, less
// one. The window it leaves is the one it started with plus the message's
// segments (each acknowledged segment adds one, in slow start).
func (c *TCPConn) Message(bytes int64, idle float64) int {
	if c.MSS <= 0 || bytes <= 0 {
		return 0
	}
	if c.cwnd <= 0 {
		c.cwnd = sim.InitialWindow
	}
	c.restart(idle)
	segments := math.Ceil(float64(bytes) / float64(c.MSS))
	rounds := 0
	for w, sent := c.cwnd, 0.0; sent < segments; w *= 2 {
		sent += w
		rounds++
	}
	c.cwnd += segments
	return rounds - 1
}

// restart is Linux's tcp_cwnd_restart: after idle seconds with nothing in
// flight, past the RTO, cwnd halves once per RTO elapsed but not below
// the initial window (BBR, whose cong_control keeps its own state, is
// exempt).
func (c *TCPConn) restart(idle float64) {
	rto := (c.RTT + RTOMin).Seconds()
	if c.CC == sim.BBR || idle <= rto {
		return
	}
	floor := math.Min(sim.InitialWindow, c.cwnd)
	for d := idle - rto; d > 0 && c.cwnd > floor; d -= rto {
		c.cwnd = math.Floor(c.cwnd / 2)
	}
	c.cwnd = math.Max(c.cwnd, floor)
}
