package throughput_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/measure/measuretest"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// The tests through real agents are of the external test package: the
// agent's server imports this package.

func TestMeasureThroughAgents(t *testing.T) {
	a, _ := measuretest.Agent(t, "a", limits.Default)
	b, _ := measuretest.Agent(t, "b", limits.Default)
	for _, spec := range []throughput.Spec{
		{Protocol: throughput.TCP, Streams: 4, Duration: 600 * time.Millisecond, Interval: 200 * time.Millisecond},
		{Protocol: throughput.UDP, Streams: 2, Duration: 600 * time.Millisecond, Interval: 200 * time.Millisecond, UDPRate: 10e6, UDPLength: 1000},
	} {
		t.Run(spec.Protocol.String(), func(t *testing.T) {
			res, err := throughput.Measure(context.Background(), a, b, spec)
			if err != nil {
				t.Fatal(err)
			}
			e := res.End
			if res.Partial || e.SumReceived.Bytes == 0 || len(e.Streams) != spec.Streams {
				t.Fatalf("result %+v", res)
			}
			if spec.Protocol == throughput.TCP {
				if e.SumSent.Bytes != e.SumReceived.Bytes || e.SumSent.Retransmits == nil {
					t.Errorf("TCP: sent %d, received %d bytes; retransmits %v", e.SumSent.Bytes, e.SumReceived.Bytes, e.SumSent.Retransmits)
				}
				if len(res.Intervals) < 2 || res.Intervals[0].Sum.RTT == 0 {
					t.Errorf("TCP intervals without TCP_INFO: %+v", res.Intervals)
				}
			} else if got := e.SumReceived.Packets + e.SumReceived.LostPackets; got*1000 != e.SumSent.Bytes {
				t.Errorf("UDP: received+lost %d datagrams, sent %d bytes of 1000-byte datagrams", got, e.SumSent.Bytes)
			}
			if e.CPU.SenderAgent <= 0 || e.CPU.ReceiverAgent <= 0 {
				t.Errorf("CPU %+v: both agents used some", e.CPU)
			}
		})
	}
}

func TestAgentRefusesOverItsLimits(t *testing.T) {
	small := limits.Default
	small.MaxStreams, small.MaxDuration = 2, time.Second
	a, _ := measuretest.Agent(t, "a", limits.Default)
	b, _ := measuretest.Agent(t, "b", small)
	tests := []struct {
		spec throughput.Spec
		want string
	}{
		{throughput.Spec{Protocol: throughput.TCP, Streams: 8, Duration: 500 * time.Millisecond, Interval: time.Second}, "agent on b: agent on b refuses the test: streams 8: over the agent's limit of 2 streams"},
		{throughput.Spec{Protocol: throughput.TCP, Streams: 1, Duration: 5 * time.Second, Interval: time.Second}, "duration 5s: over the agent's limit of 1s"},
	}
	for _, tt := range tests {
		_, err := throughput.Measure(context.Background(), a, b, tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want one containing %q", err, tt.want)
		}
	}
}

func TestReceiverAgentVanishes(t *testing.T) {
	a, _ := measuretest.Agent(t, "a", limits.Default)
	b, killB := measuretest.Agent(t, "b", limits.Default)
	spec := throughput.Spec{Protocol: throughput.TCP, Streams: 2, Duration: 3 * time.Second, Interval: 100 * time.Millisecond}
	time.AfterFunc(500*time.Millisecond, killB)
	start := time.Now()
	res, err := throughput.Measure(context.Background(), a, b, spec)
	if err == nil || res == nil || !res.Partial {
		t.Fatalf("receiver gone: result %+v, error %v; want a partial result and an error", res, err)
	}
	if !strings.Contains(err.Error(), "agent on b") {
		t.Errorf("error %q does not name the host whose agent vanished", err)
	}
	if len(res.Intervals) == 0 || res.End.SumSent.Bytes == 0 {
		t.Errorf("what was measured before the agent vanished was lost: %+v", res)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v to notice", took)
	}
}

// TestKindRunsATest: a throughput step runs one test between its hosts'
// agents and keeps its figures and samples.
func TestKindRunsATest(t *testing.T) {
	env := measuretest.NewEnv(t, throughput.Kind, "a", "b")
	for _, step := range []*throughput.Step{
		{From: "a", To: "b", Protocol: "tcp", Streams: 2, Duration: 1500 * time.Millisecond},
		{From: "b", To: "a", Protocol: "udp", Streams: 1, Duration: 1500 * time.Millisecond, UDPRate: 5e6},
	} {
		t.Run(step.Protocol, func(t *testing.T) {
			o, err := throughput.Kind.Run(context.Background(), env, step)
			if err != nil {
				t.Fatal(err)
			}
			m := o.Metrics
			if m[results.ThroughputMbps] <= 0 || m[results.Streams] != float64(step.Streams) {
				t.Errorf("figures %v", m)
			}
			if _, ok := m[results.LostPercent]; ok != (step.Protocol == "udp") {
				t.Errorf("figures %v: loss is a udp test's", m)
			}
			var sums int
			for _, s := range o.Samples {
				if s.Metric == "bandwidth.achievable" && s.Subject == step.From+"->"+step.To {
					sums++
				}
			}
			if sums == 0 {
				t.Errorf("no samples of the path's rate in %d samples", len(o.Samples))
			}
		})
	}
	if _, err := throughput.Kind.Run(context.Background(), env, &throughput.Step{From: "a", To: "c", Protocol: "tcp", Streams: 1, Duration: time.Second}); !errors.Is(err, measure.ErrNoHost) {
		t.Errorf("a host without an agent: %v", err)
	}
}
