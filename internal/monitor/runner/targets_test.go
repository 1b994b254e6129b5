package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/binomial"
	"github.com/wanlab/wanlab/internal/delay"
	"github.com/wanlab/wanlab/internal/icmpecho"
	"github.com/wanlab/wanlab/internal/measure/target"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/stamp"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// The core's bounds of probe tests toward targets are the agent's.
func TestTargetBoundsAgree(t *testing.T) {
	if core.PingMinInterval != icmpecho.MinInterval || core.PingMaxCount != icmpecho.MaxCount || core.PingMaxSize != icmpecho.MaxSize ||
		core.STAMPMinInterval != stamp.MinInterval || core.STAMPMaxCount != stamp.MaxCount || core.STAMPMinSize != stamp.BaseLen ||
		core.ProbeTimeout > icmpecho.MaxTimeout {
		t.Error("core's bounds of target probes differ from icmpecho's and stamp's")
	}
	for _, k := range core.TargetKinds {
		if k != target.Ping && k != target.STAMP && k != target.Iperf3 {
			t.Errorf("kind %q is none of measure/target's", k)
		}
	}
}

// A round toward a target is stored as a probe summary between hosts
// is, with the target's name as dst, one-way delays only when the
// clocks were synchronised.
func TestTargetProbePoints(t *testing.T) {
	at := time.Unix(1e9, 0)
	s := &target.Summary{From: "a", Kind: target.STAMP, Target: "192.0.2.7", Address: "192.0.2.7:862", Sent: 10, Received: 8, Lost: 2, Duplicates: 1, Reordered: 2,
		RTTms: delay.Stats{Min: 10, P50: 12, Max: 20}, JitterMS: 1, Loss: binomial.Ratio{Lost: 2, Of: 10, Low: 0.05, High: 0.5},
		OneWay: &target.OneWay{Forward: delay.Stats{P50: 7}, Back: delay.Stats{P50: 5}}}
	got := map[string]float64{}
	for _, p := range TargetProbePoints(at, "lat", "refl", s) {
		if p.Src != "a" || p.Dst != "refl" || p.Test != "lat" || !p.T.Equal(at) {
			t.Errorf("point %+v", p)
		}
		if _, ok := core.ByName(p.Metric); !ok {
			t.Errorf("metric %q is not registered", p.Metric)
		}
		got[p.Metric] = p.Value
	}
	want := map[string]float64{"loss_ratio": 0.2, "duplicates_ratio": 0.1, "rtt_min_seconds": 0.010, "rtt_median_seconds": 0.012,
		"rtt_max_seconds": 0.020, "jitter_seconds": 0.001, "reordered_ratio": 0.25}
	for m, v := range want {
		if g, ok := got[m]; !ok || g != v {
			t.Errorf("%s = %v (%v), want %v", m, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("points %v: no one-way delay without synchronised clocks", got)
	}
	s.OneWay.Reliable = true
	n := len(TargetProbePoints(at, "lat", "refl", s))
	if n != len(want)+2 {
		t.Errorf("%d points with synchronised clocks, want the one-way delays too", n)
	}
	if l := TargetProbeLoss(s)[core.LossRatio]; l.Lost != 2 || l.Of != 10 || l.High != 0.5 {
		t.Errorf("loss count %+v", l)
	}
}

func TestTargetProbeRequest(t *testing.T) {
	req := TargetProbeRequest(core.Test{Rate: 10, Summary: time.Minute, Size: 64}, core.Target{Name: "gw", Kind: core.TargetPing, Address: "192.0.2.1"})
	p := req.GetProbe()
	if req.Kind != "ping" || req.Address != "192.0.2.1" || p.Count != 600 || p.IntervalNs != int64(100*time.Millisecond) || p.Size != 64 || p.TimeoutNs != int64(core.ProbeTimeout) {
		t.Errorf("request %+v", req)
	}
}

// A test toward an iperf3 server is laid out as one between agents: the
// server's count is the throughput, the host the sender.
func TestTargetThroughput(t *testing.T) {
	rt := uint32(4)
	res := &agentpb.TargetResult{Kind: target.Iperf3, Address: "[2001:db8::9]:5201",
		Throughput: &agentpb.Summary{SecondsNs: int64(2 * time.Second), HostCpuPercent: 30, Streams: []*agentpb.StreamSample{{Id: 0, Bytes: 250e6, Retransmits: rt}}},
		Server:     &agentpb.Summary{SecondsNs: int64(2 * time.Second), HostCpuPercent: -1, AgentCpuPercent: -1, Streams: []*agentpb.StreamSample{{Id: 0, Bytes: 200e6}}}}
	spec := throughput.Spec{Protocol: throughput.TCP, Streams: 1, Duration: 2 * time.Second}
	r := target.Throughput("a", "srv", spec, res)
	if r.Start.From != "a" || r.Start.To != "srv" || r.Start.Family != "ipv6" || r.End.SumReceived.BitsPerSecond != 800e6 || r.End.SumSent.BitsPerSecond != 1e9 {
		t.Errorf("result start %+v, sent %+v, received %+v", r.Start, r.End.SumSent, r.End.SumReceived)
	}
	var metrics []string
	for _, p := range TargetThroughputPoints(time.Now(), "bulk", r) {
		metrics = append(metrics, p.Metric)
		if p.Src != "a" || p.Dst != "srv" {
			t.Errorf("point %+v", p)
		}
	}
	if !slices.Equal(metrics, []string{"throughput_bits_per_second", "src_cpu_percent", "retransmits"}) {
		t.Errorf("metrics %q: the server's unknown CPU is left out", metrics)
	}
}
