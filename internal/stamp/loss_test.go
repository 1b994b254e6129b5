package stamp

import (
	"testing"
	"time"
)

// packets makes a session's packets from the reflector's numbers of
// their replies, -1 for a packet without one.
func packets(numbers ...int64) []Packet {
	ps := make([]Packet, len(numbers))
	for i, n := range numbers {
		ps[i].Seq = uint32(i)
		if n >= 0 {
			ps[i].Received, ps[i].ReflectorSeq = time.Unix(1, 0), uint32(n)
		}
	}
	return ps
}

func TestLossOf(t *testing.T) {
	for _, c := range []struct {
		name     string
		ps       []Packet
		stateful bool
		want     Loss
		note     bool
	}{
		{"none sent", nil, false, Loss{Note: noteNoReply}, true},
		{"no reply", packets(-1, -1), false, Loss{Sent: 2, RoundTrip: 2, Note: noteNoReply}, true},
		{"all back", packets(0, 1, 2), false, Loss{Sent: 3, OneWay: true, Counted: 3}, false},
		// Packet 1 never reached the reflector: packet 2 is its second.
		{"forward", packets(0, -1, 1, 2), false, Loss{Sent: 4, RoundTrip: 1, OneWay: true, Counted: 4, Forward: 1}, false},
		// Packet 1 did not reach it (packet 2 is its second); packet 3
		// reached it (packet 4 is its fourth) but did not come back.
		{"both ways", packets(0, -1, 1, -1, 3), false, Loss{Sent: 5, RoundTrip: 2, OneWay: true, Counted: 5, Forward: 1, Backward: 1}, false},
		{"backward, unnumbered", packets(0, -1, 2), false, Loss{Sent: 3, RoundTrip: 1, Note: noteStateless}, true},
		{"backward, known stateful", packets(0, -1, 2), true, Loss{Sent: 3, RoundTrip: 1, OneWay: true, Counted: 3, Backward: 1}, false},
		// Reordered on the way there: packet 1 reached it after 2.
		{"reordered", packets(0, 2, 1, 3), false, Loss{Sent: 4, OneWay: true, Counted: 4}, false},
		// A count that did not start with the session (a reflector that
		// keeps its sessions by other means): packets 0 and 1 are not
		// counted, and of 2-5 one (3) did not reach it.
		{"old count", packets(-1, -1, 500, -1, 501, 502), false,
			Loss{Sent: 6, RoundTrip: 3, OneWay: true, First: 2, Counted: 4, Forward: 1}, true},
		{"numbers spanning too much", packets(0, -1, 1000), false, Loss{Sent: 3, RoundTrip: 1, Note: noteSpan}, true},
		// Duplicated on the way there: the count runs ahead, bounded by
		// the packets counted.
		{"duplicated forward", packets(0, 2, -1, 4), false, Loss{Sent: 4, RoundTrip: 1, OneWay: true, Counted: 4, Backward: 1}, false},
	} {
		got := lossOf(c.ps, c.stateful)
		if (got.Note != "") != c.note || (c.want.Note != "" && got.Note != c.want.Note) {
			t.Errorf("%s: note %q", c.name, got.Note)
		}
		got.Note, c.want.Note = "", ""
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
