package icmpecho

import (
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/binomial"
	"github.com/wanlab/wanlab/internal/delay"
)

// Result is a run of echoes toward one target.
type Result struct {
	Target netip.Addr `json:"target"`
	// Socket is the kind of socket the echoes went through: SocketDatagram
	// or SocketRaw.
	Socket string `json:"socket"`
	// Sent echoes; Received the replies that came back within the timeout
	// of their echo (one each: Duplicates are the others).
	Sent     int `json:"sent"`
	Received int `json:"received"`
	// Duplicates are replies to an echo already answered; Late the first
	// replies that came after their echo's timeout (it counts as lost);
	// Reordered the replies that came after the reply to a later echo
	// (RFC 4737's reordered packets).
	Duplicates int `json:"duplicates"`
	Late       int `json:"late"`
	Reordered  int `json:"reordered"`
	// Loss is the echoes without a timely reply, with its 95% interval.
	Loss binomial.Ratio `json:"loss"`
	// RTT summarises the round trips of the replies.
	RTT RTT `json:"rtt"`
	// KernelTimes is how many round trips end at the kernel's receive
	// timestamp (SO_TIMESTAMPNS); the others at the time the reply was read.
	KernelTimes int `json:"kernel_times"`
	// Echoes are every echo sent, in order.
	Echoes []Echo `json:"echoes"`
}

// RTT is a summary of round trips (all zero without any).
type RTT struct {
	Min    time.Duration `json:"min"`
	Median time.Duration `json:"median"`
	Mean   time.Duration `json:"mean"`
	Max    time.Duration `json:"max"`
	// StdDev is the population standard deviation (ping's mdev).
	StdDev time.Duration `json:"stddev"`
}

// Echo is one echo request and what became of it.
type Echo struct {
	Seq  int       `json:"seq"`
	Sent time.Time `json:"sent"`
	// RTT is its round trip; 0 when it was lost (no timely reply).
	RTT     time.Duration `json:"rtt,omitempty"`
	Replied bool          `json:"replied"`
}

// tally follows the echoes of a run and classifies their replies.
type tally struct {
	timeout time.Duration
	res     Result
	// answered tells the echoes a reply (timely or late) has come for;
	// last is the highest index a reply has come for (-1: none).
	answered []bool
	last     int
}

func newTally(count int, timeout time.Duration) *tally {
	return &tally{timeout: timeout, answered: make([]bool, count), last: -1, res: Result{Echoes: make([]Echo, 0, count)}}
}

// sent records the next echo, of sequence number seq, sent at at.
func (t *tally) sent(seq int, at time.Time) {
	t.res.Echoes = append(t.res.Echoes, Echo{Seq: seq, Sent: at})
	t.res.Sent++
}

// reply records a reply to echo i, read at read; kernel is the kernel's
// receive time (zero if the socket gave none). The round trip is the
// kernel's when it is within what the clock measured (a wall clock step
// could put it anywhere), else the read's.
func (t *tally) reply(i int, kernel, read time.Time) {
	if i < 0 || i >= len(t.res.Echoes) {
		return // a reply to an echo not sent: not this run's
	}
	e := &t.res.Echoes[i]
	if t.answered[i] {
		t.res.Duplicates++
		return
	}
	t.answered[i] = true
	if i < t.last {
		t.res.Reordered++
	}
	t.last = max(t.last, i)
	rtt := read.Sub(e.Sent)
	kernelRTT := kernel.Sub(e.Sent)
	usedKernel := !kernel.IsZero() && kernelRTT > 0 && kernelRTT <= rtt
	if usedKernel {
		rtt = kernelRTT
	}
	if rtt > t.timeout {
		t.res.Late++
		return
	}
	if usedKernel {
		t.res.KernelTimes++
	}
	e.RTT, e.Replied = max(rtt, 1), true // a round trip is never 0: 0 is lost
	t.res.Received++
}

// waiting says whether an echo sent has neither a reply nor its timeout
// passed at now.
func (t *tally) waiting(now time.Time) bool {
	for i, e := range t.res.Echoes {
		if !t.answered[i] && now.Sub(e.Sent) < t.timeout {
			return true
		}
	}
	return false
}

// result is the run's result.
func (t *tally) result() Result {
	r := t.res
	r.Echoes = slices.Clone(r.Echoes)
	r.Loss = binomial.NewRatio(r.Sent-r.Received, r.Sent)
	var rtts []float64
	for _, e := range r.Echoes {
		if e.Replied {
			rtts = append(rtts, float64(e.RTT))
		}
	}
	r.RTT = summarize(rtts)
	return r
}

// summarize is the summary of round trips in nanoseconds.
func summarize(ns []float64) RTT {
	if len(ns) == 0 {
		return RTT{}
	}
	slices.Sort(ns)
	var sum, sq float64
	for _, v := range ns {
		sum += v
	}
	mean := sum / float64(len(ns))
	for _, v := range ns {
		sq += (v - mean) * (v - mean)
	}
	d := func(v float64) time.Duration { return time.Duration(math.Round(v)) }
	return RTT{Min: d(ns[0]), Median: d(delay.Quantile(ns, 0.5)), Mean: d(mean), Max: d(ns[len(ns)-1]),
		StdDev: d(math.Sqrt(sq / float64(len(ns))))}
}
