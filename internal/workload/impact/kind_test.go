package impact

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

func TestCheck(t *testing.T) {
	n := func(i int) *int { return &i }
	kindtest.RunChecks(t, []string{"a", "b", "c", "d"}, Check, []kindtest.CheckCase[Raw, Step]{
		{Name: "defaults", Raw: Raw{ProbeFrom: "c", ProbeTo: "d", From: "a", To: "b"},
			Step: &Step{ProbeFrom: "c", ProbeTo: "d", From: "a", To: "b", Streams: 1, Duration: 10 * time.Second, Phase: 5 * time.Second, Interval: 100 * time.Millisecond}},
		{Name: "every setting", Raw: Raw{ProbeFrom: "c", ProbeTo: "d", From: "a", To: "b", Streams: n(2), Window: "1MiB", Duration: "3s", Phase: "2s", Interval: "50ms"},
			Step: &Step{ProbeFrom: "c", ProbeTo: "d", From: "a", To: "b", Streams: 2, Window: 1 << 20, Duration: 3 * time.Second, Phase: 2 * time.Second, Interval: 50 * time.Millisecond}},
		{Name: "the probes' hosts", Raw: Raw{ProbeFrom: "c", ProbeTo: "c", From: "a", To: "b"},
			Want: []string{`probe_to: probe_from and probe_to are the same host "c"`}},
		{Name: "unknown hosts", Raw: Raw{ProbeFrom: "x", From: "a", To: "a"},
			Want: []string{`to: from and to are the same host "a"`, `probe_from: unknown host "x"`, "probe_to: missing"}},
		{Name: "positive", Raw: Raw{ProbeFrom: "c", ProbeTo: "d", From: "a", To: "b", Phase: "0s"},
			Want: []string{": duration, phase and interval must be positive"}},
		{Name: "over the agent's limits", Raw: Raw{ProbeFrom: "c", ProbeTo: "d", From: "a", To: "b", Duration: "1000h", Phase: "1000h"},
			Want: []string{"duration: duration 1000h0m0s: over the agent's limit", "phase: phase 1000h0m0s: over the agent's limit"}},
	})
}

// TestStepTest: a step's test probes with the header's size and loads
// over TCP, reporting every second.
func TestStepTest(t *testing.T) {
	s := Step{Streams: 3, Window: 1 << 20, Duration: 4 * time.Second, Phase: time.Second, Interval: 10 * time.Millisecond}
	want := Spec{Phase: time.Second, Interval: 10 * time.Millisecond, Size: probe.HeaderLen,
		Load: throughput.Spec{Protocol: throughput.TCP, Streams: 3, Window: 1 << 20, Duration: 4 * time.Second, Interval: time.Second}}
	if got := s.test(); got != want {
		t.Errorf("test %+v, want %+v", got, want)
	}
}
