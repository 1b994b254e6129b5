package transfer

import "testing"

// TestWireRoundTrip: a spec comes back from its wire form as it went, but
// for what the agent decides itself.
func TestWireRoundTrip(t *testing.T) {
	s := Spec{Streams: 4, Window: 1 << 20, Block: 1 << 16, Compress: true, Serial: true}
	if got := SpecFromPB(SpecToPB(s)); got != s {
		t.Errorf("spec %+v came back as %+v", s, got)
	}
	if got := SpecFromPB(SpecToPB(Spec{Streams: 1, Uncached: true, ReadRate: 1e6})); got.Uncached || got.ReadRate != 0 {
		t.Errorf("the agent's own choices travelled: %+v", got)
	}
}
