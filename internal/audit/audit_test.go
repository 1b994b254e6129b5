package audit

import (
	"encoding/json"
	"testing"
	"time"
)

// TestOutcome: an outcome reads back as the decision and reason it was
// made of, a reason with ": " in it too.
func TestOutcome(t *testing.T) {
	for _, e := range []Entry{
		{Decision: "ok"},
		{Decision: "refused", Reason: "no identity"},
		{Decision: "refused", Reason: "42 sign-ins not recorded: the most from 192.0.2.8 40"},
	} {
		var back Entry
		back.SetOutcome(e.Outcome())
		if back.Decision != e.Decision || back.Reason != e.Reason {
			t.Errorf("%q read back as %q, %q", e.Outcome(), back.Decision, back.Reason)
		}
	}
}

// TestLogLine: an agent's audit log line keeps its keys (operators and
// the e2e suite read them).
func TestLogLine(t *testing.T) {
	e := Entry{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Identity: "cn:ctl", Remote: "192.0.2.1:4000", Rule: "ops",
		Method: "/wanlab.agent.v1.Agent/Send", Test: "t1", Kind: "throughput", Peers: []string{"10.0.0.1:5201"},
		Decision: "end", Reason: "", Bytes: 1000, Seconds: 1.5}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2026-01-02T03:04:05Z","identity":"cn:ctl","remote":"192.0.2.1:4000","rule":"ops","method":"/wanlab.agent.v1.Agent/Send","test":"t1","kind":"throughput","peers":["10.0.0.1:5201"],"decision":"end","bytes":1000,"seconds":1.5}`
	if string(b) != want {
		t.Errorf("log line\n%s\nwant\n%s", b, want)
	}
}
