package probe

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

func TestCheck(t *testing.T) {
	n := func(i int) *int { return &i }
	kindtest.RunChecks(t, []string{"a", "b"}, Check, []kindtest.CheckCase[Raw, Step]{
		{Name: "defaults", Raw: Raw{From: "a", To: "b"},
			Step: &Step{From: "a", To: "b", Count: 100, Interval: 100 * time.Millisecond}},
		{Name: "set", Raw: Raw{From: "a", To: "b", Count: n(20), Interval: "10ms"},
			Step: &Step{From: "a", To: "b", Count: 20, Interval: 10 * time.Millisecond}},
		{Name: "count", Raw: Raw{From: "a", To: "b", Count: n(0)},
			Want: []string{"count: 0 is out of range: from 1 to 1000000"}},
		{Name: "interval", Raw: Raw{From: "a", To: "b", Interval: "0s"},
			Want: []string{"interval: must be positive"}},
		{Name: "hosts", Raw: Raw{From: "a", To: "c"},
			Want: []string{`to: `}},
		{Name: "same host", Raw: Raw{From: "a", To: "a"},
			Want: []string{`to: from and to are the same host "a"`}},
		{Name: "over the agent's limits", Raw: Raw{From: "a", To: "b", Count: n(1_000_000), Interval: "1h"},
			Want: []string{"count: the probes 1000000h0m0s: over the agent's limit"}},
	})
}

// TestStepRound: a step's round is its probes, of the header's size, each
// awaited for 2 s; the step lasts as long as they take.
func TestStepRound(t *testing.T) {
	s := Step{From: "a", To: "b", Count: 20, Interval: 10 * time.Millisecond}
	if got, want := s.round(), (Spec{Count: 20, Interval: 10 * time.Millisecond, Size: HeaderLen, Timeout: 2 * time.Second}); got != want {
		t.Errorf("round %+v, want %+v", got, want)
	}
	if s.Length() != 200*time.Millisecond || s.RoleHosts() != nil {
		t.Errorf("length %v, role hosts %v", s.Length(), s.RoleHosts())
	}
}
