package throughput

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

func TestCheck(t *testing.T) {
	n := func(i int) *int { return &i }
	kindtest.RunChecks(t, []string{"a", "b"}, Check, []kindtest.CheckCase[Raw, Step]{
		{Name: "defaults", Raw: Raw{From: "a", To: "b"},
			Step: &Step{From: "a", To: "b", Protocol: "tcp", Streams: 1, Duration: 10 * time.Second}},
		{Name: "udp", Raw: Raw{From: "a", To: "b", Protocol: "udp", Streams: n(2), Window: "1MiB", Duration: "3s", Congestion: "reno", Rate: "10Mbit"},
			Step: &Step{From: "a", To: "b", Protocol: "udp", Streams: 2, Window: 1 << 20, Duration: 3 * time.Second, Congestion: "reno", UDPRate: units.Rate(10e6)}},
		{Name: "a rate is for udp", Raw: Raw{From: "a", To: "b", Rate: "10Mbit"},
			Want: []string{"rate: rate is for udp tests"}},
		{Name: "udp without a rate", Raw: Raw{From: "a", To: "b", Protocol: "udp"},
			Want: []string{"rate: missing: a udp test needs a target rate, such as 10Mbit"}},
		{Name: "udp rate", Raw: Raw{From: "a", To: "b", Protocol: "udp", Rate: "fast"},
			Want: []string{"rate: "}},
		{Name: "protocol", Raw: Raw{From: "a", To: "b", Protocol: "sctp"},
			Want: []string{`protocol: "sctp": tcp or udp`}},
		{Name: "hosts", Raw: Raw{From: "a", To: "a", Streams: n(0)},
			Want: []string{"streams: ", `to: from and to are the same host "a"`}},
		{Name: "duration", Raw: Raw{From: "a", To: "b", Duration: "0s"},
			Want: []string{"duration: must be positive"}},
		{Name: "over the agent's limits", Raw: Raw{From: "a", To: "b", Duration: "1000h"},
			Want: []string{"duration: duration 1000h0m0s: over the agent's limit"}},
	})
}

// TestStepTest: a step's test is the agents' spec of its settings,
// reporting every second; a udp test's datagrams are of the default
// length (the agents refuse a length of 0).
func TestStepTest(t *testing.T) {
	for _, tc := range []struct {
		step Step
		want Spec
	}{
		{Step{Protocol: "tcp", Streams: 4, Window: 1 << 20, Duration: time.Second, Congestion: "reno"},
			Spec{Protocol: TCP, Streams: 4, Window: 1 << 20, Duration: time.Second, Congestion: "reno", Interval: time.Second}},
		{Step{Protocol: "udp", Streams: 1, Duration: time.Second, UDPRate: 10e6},
			Spec{Protocol: UDP, Streams: 1, Duration: time.Second, UDPRate: 10e6, UDPLength: DefaultUDPLength, Interval: time.Second}},
	} {
		if got := tc.step.test(); got != tc.want {
			t.Errorf("%+v: test %+v, want %+v", tc.step, got, tc.want)
		}
	}
}
