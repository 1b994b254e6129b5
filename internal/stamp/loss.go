package stamp

import "fmt"

// Loss is a session's loss: round trip, and on each way when the
// reflector numbers its replies (stateful mode, RFC 8762 section 4): a
// reply's number is the count of the session's packets the reflector
// had received before, so the highest number tells how many reached it.
//
// Figures are counts; an interval around a ratio (binomial.NewRatio's
// Wilson interval) is the caller's to draw.
type Loss struct {
	Sent int
	// RoundTrip is the packets sent that had no reply.
	RoundTrip int
	// OneWay says Forward and Backward are known: of the Counted
	// packets from First on, Forward did not reach the reflector and
	// Backward reached it but their replies did not come back. The
	// packets outside (after the last one replied to; before the first
	// one when the reflector's numbers did not start with this session)
	// were lost one way or the other, which is unknown.
	OneWay            bool
	First, Counted    int
	Forward, Backward int
	// Note says why the one-way figures are missing or partial.
	Note string
}

// Why the one-way figures can be missing.
const (
	noteNoReply   = "no reply came back, so which way the packets were lost is unknown: loss is round trip only"
	noteStateless = "every reply carries the packet's own sequence number: a stateless reflector, or no loss on the way there; loss is round trip only (a session told ReflectorStateful counts it all on the way back)"
	noteSpan      = "the reflector's sequence numbers span more than the packets sent (a shared or wrapped counter): loss is round trip only"
)

// lossOf counts the loss of a session's packets (by sequence number).
// The reflector's count started with the session when its lowest number
// is no higher than the first packet replied to (a fresh count numbers
// the first arrival 0); the packets up to the last one replied to count
// then, else those from the first replied to. The count of those that
// reached the reflector, from its highest number, which reordering on
// the way there cannot lower, is bounded by what is possible: the
// replies received, the packets counted.
func lossOf(ps []Packet, stateful bool) Loss {
	l := Loss{Sent: len(ps)}
	first, last, replies := -1, -1, 0
	var rmin, rmax uint32
	numbered := false
	for i, p := range ps {
		if p.Lost() {
			l.RoundTrip++
			continue
		}
		if first < 0 {
			first, rmin, rmax = i, p.ReflectorSeq, p.ReflectorSeq
		}
		rmin, rmax = min(rmin, p.ReflectorSeq), max(rmax, p.ReflectorSeq)
		numbered = numbered || p.ReflectorSeq != p.Seq
		last, replies = i, replies+1
	}
	if replies == 0 {
		l.Note = noteNoReply
		return l
	}
	reached := int64(rmax) + 1
	if int64(rmin) > int64(first) {
		// Numbers that did not start with this session: count from the
		// first packet replied to.
		l.First, reached = first, int64(rmax-rmin)+1
	}
	l.Counted = last + 1 - l.First
	switch {
	case l.Counted == replies:
		// No loss among the packets counted, whatever the reflector.
		reached = int64(replies)
	case !numbered && !stateful:
		l.First, l.Counted, l.Note = 0, 0, noteStateless
		return l
	case reached > 2*int64(l.Counted)+1:
		l.First, l.Counted, l.Note = 0, 0, noteSpan
		return l
	}
	reached = min(max(reached, int64(replies)), int64(l.Counted))
	l.OneWay = true
	l.Forward, l.Backward = l.Counted-int(reached), int(reached)-replies
	if out := len(ps) - l.Counted; out > 0 {
		l.Note = fmt.Sprintf("%d packets before the first reply or after the last had no reply: lost one way or the other, they count in the round trip only", out)
	}
	return l
}
