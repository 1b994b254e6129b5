package probe

import (
	"fmt"

	"github.com/wanlab/wanlab/internal/binomial"
)

// Loss is a round of probes' loss: round trip, and on each way when the
// reflector numbered what it received.
type Loss struct {
	// Roundtrip is every probe sent: those with no reply.
	Roundtrip binomial.Ratio `json:"roundtrip"`
	// Forward is the probes that did not reach the reflector, of those
	// counted; Back the replies that did not come back, of the probes
	// that reached it. Both nil when unknown (Note says why).
	Forward *binomial.Ratio `json:"forward,omitempty"`
	Back    *binomial.Ratio `json:"back,omitempty"`
	// Counted is the probes the one-way figures count: those up to the
	// last one whose reply came back. The probes after it were lost one
	// way or the other, and which is unknown: they count in the round
	// trip only (Uncounted).
	Counted   int `json:"counted"`
	Uncounted int `json:"uncounted"`
	// Note says why the one-way figures are missing or incomplete.
	Note string `json:"note,omitempty"`
}

// Why the one-way figures can be missing.
const (
	noteUnnumbered = "the reflector does not number the probes it receives (an older agent on one end): loss is round trip only"
	noteMixed      = "some replies carry the reflector's count and some do not: loss is round trip only"
	noteRestarted  = "the reflector's count restarted during the probes (it forgot this prober's session): loss is round trip only"
	noteNoReply    = "no reply came back, so which way the probes were lost is unknown: loss is round trip only"
)

// lossOf counts a round of probes' loss (probes in sequence order, as
// Run returns them). probes of fewer than NumberedLen bytes (size) have
// no room for the reflector's count.
//
// With the reflector's count c of the last reply received (probe S,
// counting from 0), the reflector had received c of the probes 0..S
// when it answered: S+1-c were lost on the way there, and of the c
// that reached it, c minus the replies received were lost on the way
// back. The largest count is taken, which reordering on the way there
// cannot lower, bounded by what is possible (the replies received, S+1).
// A duplicate carries the count of the first copy; the reflector does
// not count duplicates (count.go).
func lossOf(probes []Result, size int) Loss {
	l := Loss{}
	lost, last, most, replies, unnumbered := 0, -1, 0, 0, 0
	var session uint32
	restarted := false
	for i, p := range probes {
		if p.Lost() {
			lost++
			continue
		}
		if p.ReflectorCount == 0 {
			unnumbered++
			continue
		}
		restarted = restarted || replies > 0 && p.ReflectorSession != session
		session = p.ReflectorSession
		last, most, replies = i, max(most, int(p.ReflectorCount)), replies+1
	}
	l.Roundtrip = binomial.NewRatio(lost, len(probes))
	switch {
	case len(probes) == 0:
		return l
	case size < NumberedLen:
		l.Note = fmt.Sprintf("probes of %d bytes have no room for the reflector's count (give at least %d): loss is round trip only", size, NumberedLen)
		return l
	case unnumbered > 0 && replies == 0:
		l.Note = noteUnnumbered
		return l
	case unnumbered > 0:
		l.Note = noteMixed
		return l
	case restarted:
		l.Note = noteRestarted
		return l
	case replies == 0:
		l.Note = noteNoReply
		return l
	}
	l.Counted = last + 1
	l.Uncounted = len(probes) - l.Counted
	reached := min(max(most, replies), l.Counted)
	fwd, back := binomial.NewRatio(l.Counted-reached, l.Counted), binomial.NewRatio(reached-replies, reached)
	l.Forward, l.Back = &fwd, &back
	if l.Uncounted > 0 {
		l.Note = fmt.Sprintf("the last %d probes had no reply: lost one way or the other, they count in the round trip only", l.Uncounted)
	}
	return l
}
