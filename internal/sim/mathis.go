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

// The congestion controls whose response to loss TCPStream knows; any
// other is taken as Reno.
const (
	Reno  = "reno"
	Cubic = "cubic"
	BBR   = "bbr"
)

// CUBIC's constants (RFC 9438 section 4, Linux's tcp_cubic): the window's
// growth C, in segments per second cubed, and its decrease factor beta.
const (
	cubicC    = 0.4
	cubicBeta = 0.7
)

// CubicBPS is the rate, in bits per second, that CUBIC holds a flow to
// under random loss (RFC 8312 section 5.1, kept in RFC 9438): the larger of
// CUBIC's own average window, (C*(3+beta)/(4*(1-beta)))^(1/4) *
// RTT^(3/4) / p^(3/4) segments, and that of its Reno-friendly region,
// which is Reno's (MathisBPS); arguments and +Inf as MathisBPS.
func CubicBPS(mss int, rtt time.Duration, loss float64) float64 {
	reno := MathisBPS(mss, rtt, loss)
	if math.IsNaN(reno) || math.IsInf(reno, 1) {
		return reno
	}
	p := math.Min(loss, 1)
	w := math.Pow(cubicC*(3+cubicBeta)/(4*(1-cubicBeta)), 0.25) * math.Pow(rtt.Seconds(), 0.75) / math.Pow(p, 0.75)
	return math.Max(reno, w*float64(mss)*8/rtt.Seconds())
}

// LossBoundBPS is the rate congestion control cc holds a flow to under
// random loss in the long run: CubicBPS for cubic, +Inf for bbr (which
// paces at the bottleneck it measures and does not back off on random
// loss), MathisBPS for reno and any other.
func LossBoundBPS(cc string, mss int, rtt time.Duration, loss float64) float64 {
	switch cc {
	case Cubic:
		return CubicBPS(mss, rtt, loss)
	case BBR:
		if math.IsNaN(loss) {
			return loss
		}
		return math.Inf(1)
	}
	return MathisBPS(mss, rtt, loss)
}

// InitialWindow is a TCP connection's first congestion window in
// segments (RFC 6928; Linux's).
const InitialWindow = 10

// maxRounds bounds the round trips TCPStream walks one by one; past them
// the rest goes at the mean rate of the later half of those walked.
const maxRounds = 20000

// queueShare is the bottleneck's queue in TCPStream, as a share of the
// stream's pipe: half its bandwidth-delay product (the test-bed's default
// queue on a site's link of half the path's delay).
const queueShare = 0.5

// TCPStream is one TCP connection in a fluid model of its congestion
// window (cwnd), one round trip at a time: slow start from InitialWindow,
// doubling each round trip; a loss every 1/Loss segments (periodic, as the
// Mathis bound assumes), and one whenever what it puts in flight passes
// its pipe and the queue (half the pipe again); after a loss cwnd is cut
// by the congestion control's factor (Reno 1/2, CUBIC 0.7; BBR takes no
// notice) and grows again in congestion avoidance (Reno one segment a
// round trip, CUBIC its cubic or its Reno-friendly line, whichever is
// larger). Each round trip it delivers the least of cwnd, its window and
// its pipe; as Linux, cwnd grows to at most twice the window in slow
// start and not past it in congestion avoidance. In the long run it sends
// at LossBoundBPS (or its window's or pipe's rate); over a short test or
// transfer, slow start and the time to the first loss count too.
type TCPStream struct {
	MSS  int
	RTT  time.Duration
	Loss float64
	// MaxSegments is the socket's window, in segments; 0 or less for none.
	MaxSegments float64
	// PipeSegments is the stream's share of the bottleneck's
	// bandwidth-delay product, in segments; 0 or less for none.
	PipeSegments float64
	// CC is the congestion control: Reno, Cubic or BBR.
	CC string
}

// BytesIn is how many bytes the stream sends in seconds.
func (s TCPStream) BytesIn(seconds float64) float64 {
	b, _ := s.walk(seconds, 0)
	return b
}

// SecondsFor is how long the stream takes to send bytes.
func (s TCPStream) SecondsFor(bytes float64) float64 {
	_, t := s.walk(0, bytes)
	return t
}

// walk runs the stream round trip by round trip until seconds have passed
// (seconds > 0) or bytes are sent, and returns the bytes sent and the time
// taken. Without a round trip or a segment size there is nothing to
// walk: it returns 0, 0.
func (s TCPStream) walk(seconds, bytes float64) (sent, t float64) {
	rtt, mss := s.RTT.Seconds(), float64(s.MSS)
	if rtt <= 0 || mss <= 0 || (seconds <= 0 && bytes <= 0) {
		return 0, 0
	}
	wnd, pipe := 1e12, 1e12 // segments: none, and no overflow
	if s.MaxSegments > 0 {
		wnd = math.Max(s.MaxSegments, 1)
	}
	if s.PipeSegments > 0 {
		pipe = math.Max(s.PipeSegments, 1)
	}
	overflow := pipe * (1 + queueShare)
	every := math.Inf(1) // segments between losses
	if s.Loss > 0 && s.CC != BBR {
		every = 1 / math.Min(s.Loss, 1)
	}
	beta := 0.5
	if s.CC == Cubic {
		beta = cubicBeta
	}
	cwnd := float64(InitialWindow)
	slow := true
	var since, wMax, tLoss float64 // segments since the last loss; cwnd then, and when
	cut := func(w float64) {
		wMax, tLoss, slow = w, t, false
		cwnd = math.Max(beta*w, 1)
	}
	var halfSent, halfT float64
	for round := 0; round < maxRounds; round++ {
		if round == maxRounds/2 {
			halfSent, halfT = sent, t
		}
		n := math.Min(cwnd, math.Min(wnd, pipe)) // segments delivered this round trip
		switch {
		case seconds > 0 && t+rtt >= seconds:
			return sent + n*mss*(seconds-t)/rtt, seconds
		case seconds <= 0 && sent+n*mss >= bytes:
			return bytes, t + rtt*(bytes-sent)/(n*mss)
		}
		sent, t, since = sent+n*mss, float64(round+1)*rtt, since+n
		switch {
		case since >= every:
			since -= every
			cut(cwnd)
		case s.CC != BBR && math.Min(cwnd, wnd) > overflow:
			cut(overflow)
		case slow:
			cwnd = math.Min(2*cwnd, 2*wnd)
		case cwnd >= wnd:
			// Not limited by cwnd: it does not grow.
		case s.CC == Cubic:
			// RFC 9438 4.2 and 4.3: the cubic from the last loss, or the
			// Reno-friendly estimate, whichever is larger.
			e := t - tLoss
			k := math.Cbrt(wMax * (1 - cubicBeta) / cubicC)
			cubic := cubicC*math.Pow(e-k, 3) + wMax
			friendly := wMax*cubicBeta + 3*(1-cubicBeta)/(1+cubicBeta)*e/rtt
			cwnd = math.Min(math.Max(math.Max(cubic, friendly), cwnd), wnd)
		default:
			cwnd = math.Min(cwnd+1, wnd)
		}
	}
	// Past maxRounds: the rest at the later half's mean rate.
	rate := (sent - halfSent) / (t - halfT)
	if seconds > 0 {
		return sent + rate*(seconds-t), seconds
	}
	return bytes, t + (bytes-sent)/rate
}

// MeanBPS is the stream's mean rate in bits per second over seconds (when
// seconds > 0), else over the time it takes to send bytes; 0 when it cannot
// say (no round trip, nothing to send).
func (s TCPStream) MeanBPS(seconds, bytes float64) float64 {
	b, t := s.walk(seconds, bytes)
	if t <= 0 {
		return 0
	}
	return b * 8 / t
}
