package measure

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// startAgent serves an agent on a socket in a temporary directory and
// returns an endpoint for it on loopback, and a function that kills it.
func startAgent(t *testing.T, host string, lim limits.Limits) (Endpoint, context.CancelFunc) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, host+".sock")
	data, err := datadir.Open(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &agent.Server{Host: host, Version: "test", Limits: lim, Data: data}
	served := make(chan error, 1)
	go func() { served <- srv.ServeSocket(ctx, sock) }()
	t.Cleanup(func() { cancel(); <-served })
	var c *agent.Client
	for range 100 {
		if c, err = agent.Dial(context.Background(), host, sock); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return Endpoint{Host: host, Addr: "127.0.0.1", Agent: c}, cancel
}

func TestThroughputThroughAgents(t *testing.T) {
	a, _ := startAgent(t, "a", limits.Default)
	b, _ := startAgent(t, "b", limits.Default)
	for _, spec := range []throughput.Spec{
		{Protocol: throughput.TCP, Streams: 4, Duration: 600 * time.Millisecond, Interval: 200 * time.Millisecond},
		{Protocol: throughput.UDP, Streams: 2, Duration: 600 * time.Millisecond, Interval: 200 * time.Millisecond, UDPRate: 10e6, UDPLength: 1000},
	} {
		t.Run(spec.Protocol.String(), func(t *testing.T) {
			res, err := Throughput(context.Background(), a, b, spec)
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
	a, _ := startAgent(t, "a", limits.Default)
	b, _ := startAgent(t, "b", small)
	tests := []struct {
		spec throughput.Spec
		want string
	}{
		{throughput.Spec{Protocol: throughput.TCP, Streams: 8, Duration: 500 * time.Millisecond, Interval: time.Second}, "agent on b: agent on b refuses the test: streams 8: over the agent's limit of 2 streams"},
		{throughput.Spec{Protocol: throughput.TCP, Streams: 1, Duration: 5 * time.Second, Interval: time.Second}, "duration 5s: over the agent's limit of 1s"},
	}
	for _, tt := range tests {
		_, err := Throughput(context.Background(), a, b, tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want one containing %q", err, tt.want)
		}
	}
}

func TestReceiverAgentVanishes(t *testing.T) {
	a, _ := startAgent(t, "a", limits.Default)
	b, killB := startAgent(t, "b", limits.Default)
	spec := throughput.Spec{Protocol: throughput.TCP, Streams: 2, Duration: 3 * time.Second, Interval: 100 * time.Millisecond}
	time.AfterFunc(500*time.Millisecond, killB)
	start := time.Now()
	res, err := Throughput(context.Background(), a, b, spec)
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
