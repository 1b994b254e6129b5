package job

import (
	"testing"
	"time"
)

// TestWireRoundTrip: a record comes back from its wire form as it went,
// as a job of the host it is read for.
func TestWireRoundTrip(t *testing.T) {
	start := time.Unix(1700000000, 123)
	r := Record{ID: 7, Host: "b", Subject: "c", Start: start, End: start.Add(time.Second), Bytes: 1 << 20,
		Status: Failed, Reason: "reset", TCPRTTms: 20.5, TCPRetransmits: 3}
	got := RecordFromPB("b", RecordToPB(Record{ID: 7, Host: "sender's own", Subject: "c", Start: r.Start, End: r.End, Bytes: r.Bytes,
		Status: r.Status, Reason: r.Reason, TCPRTTms: r.TCPRTTms, TCPRetransmits: r.TCPRetransmits}))
	if !got.Start.Equal(r.Start) || !got.End.Equal(r.End) {
		t.Errorf("times %v-%v came back as %v-%v", r.Start, r.End, got.Start, got.End)
	}
	got.Start, got.End = r.Start, r.End
	if got != r {
		t.Errorf("record %+v came back as %+v", r, got)
	}
}
