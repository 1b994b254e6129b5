package sim

import (
	"math"
	"time"
)

// mathisC is the constant of the Mathis bound for periodic losses and
// delayed ACKs off: sqrt(3/2).
var mathisC = math.Sqrt(1.5)

// MathisBPS is the rate, in bits per second, that TCP's congestion control
// holds a flow to under random loss (Mathis, Semke, Mahdavi and Ott, "The
// macroscopic behavior of the TCP congestion avoidance algorithm", 1997):
// MSS*8/RTT * C/sqrt(p) with C = sqrt(3/2), for a segment of mss bytes, a
// round-trip time rtt and a loss rate loss from 0 to 1 (above 1 counts as 1;
// NaN gives NaN).
//
// Without loss (loss <= 0), or without a round-trip time, there is no bound
// and it is +Inf: take it through math.Min with the flow's other bounds (its
// window over the round trip). As an Op's RateBPS, where 0 means no cap,
// +Inf cannot go as it is: Run refuses non-finite numbers.
func MathisBPS(mss int, rtt time.Duration, loss float64) float64 {
	if math.IsNaN(loss) {
		return math.NaN()
	}
	if loss <= 0 || rtt <= 0 {
		return math.Inf(1)
	}
	return float64(mss) * 8 / rtt.Seconds() * mathisC / math.Sqrt(math.Min(loss, 1))
}
