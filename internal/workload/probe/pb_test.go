package probe

import (
	"reflect"
	"testing"
	"time"
)

// TestWireRoundTrip: a spec and results come back from their wire forms
// as they went.
func TestWireRoundTrip(t *testing.T) {
	s := Spec{Count: 10, Interval: 20 * time.Millisecond, Size: 64, Timeout: time.Second}
	if got := SpecFromPB(SpecToPB(s)); got != s {
		t.Errorf("spec %+v came back as %+v", s, got)
	}
	for _, rs := range [][]Result{
		{},
		{{Seq: 0, Sent: 1, ReflectRx: 2, ReflectTx: 3, Received: 4}, {Seq: 1, Sent: 5, Duplicates: 2}},
		{{Seq: 0, Sent: 1, ReflectRx: 2, ReflectTx: 3, Received: 4, ReflectorCount: 1, ReflectorSession: 0xdeadbeef}},
	} {
		if got := ResultsFromPB(ResultsToPB(rs)); !reflect.DeepEqual(got, rs) {
			t.Errorf("results %+v came back as %+v", rs, got)
		}
	}
}
