package throughput

import (
	"errors"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// The wire forms of a test's spec and results, as the agent API carries
// them (agentpb): the controller and the agent convert with these.

// SpecToPB converts a throughput spec to its wire form.
func SpecToPB(s Spec) *agentpb.ThroughputSpec {
	return &agentpb.ThroughputSpec{
		Protocol: agentpb.Protocol(s.Protocol), Streams: uint32(s.Streams),
		DurationNs: int64(s.Duration), Bytes: uint64(s.Bytes), WindowBytes: uint64(s.Window),
		Congestion: s.Congestion, UdpRateBps: uint64(s.UDPRate), UdpLength: uint32(s.UDPLength),
		IntervalNs: int64(s.Interval),
	}
}

// SpecFromPB converts a wire spec back.
func SpecFromPB(p *agentpb.ThroughputSpec) Spec {
	return Spec{
		Protocol: Protocol(p.GetProtocol()), Streams: int(p.GetStreams()),
		Duration: time.Duration(p.GetDurationNs()), Bytes: int64(p.GetBytes()), Window: int(p.GetWindowBytes()),
		Congestion: p.GetCongestion(), UDPRate: float64(p.GetUdpRateBps()), UDPLength: int(p.GetUdpLength()),
		Interval: time.Duration(p.GetIntervalNs()),
	}
}

// SampleToPB converts a stream sample to its wire form.
func SampleToPB(s Sample) *agentpb.StreamSample {
	p := &agentpb.StreamSample{
		Id: uint32(s.ID), Bytes: s.Bytes, Retransmits: s.Retransmits,
		Packets: s.Packets, Lost: s.Lost, OutOfOrder: s.OutOfOrder, JitterMs: s.JitterMS,
	}
	if t := s.TCP; t != nil {
		p.Tcp = &agentpb.TCPInfo{SndCwnd: t.SndCwnd, SndMss: t.SndMSS, RttUs: t.RTT, RttvarUs: t.RTTVar, TotalRetrans: t.TotalRetrans, PacingRate: t.PacingRate}
	}
	return p
}

// SampleFromPB converts a wire sample back.
func SampleFromPB(p *agentpb.StreamSample) Sample {
	s := Sample{
		ID: int(p.GetId()), Bytes: p.GetBytes(), Retransmits: p.GetRetransmits(),
		Packets: p.GetPackets(), Lost: p.GetLost(), OutOfOrder: p.GetOutOfOrder(), JitterMS: p.GetJitterMs(),
	}
	if t := p.GetTcp(); t != nil {
		s.TCP = &job.TCPInfo{SndCwnd: t.SndCwnd, SndMSS: t.SndMss, RTT: t.RttUs, RTTVar: t.RttvarUs, TotalRetrans: t.TotalRetrans, PacingRate: t.PacingRate}
	}
	return s
}

// IntervalFromPB converts a wire interval back.
func IntervalFromPB(p *agentpb.Interval) Interval {
	iv := Interval{Start: time.Duration(p.GetStartNs()), End: time.Duration(p.GetEndNs())}
	for _, s := range p.GetStreams() {
		iv.Streams = append(iv.Streams, SampleFromPB(s))
	}
	return iv
}

// Totals is one side's summary of a test with the CPU it used.
type Totals struct {
	Summary
	AgentCPUPercent float64
	HostCPUPercent  float64 // -1 when unknown
	// Alongside counts the other tests the agent ran meanwhile.
	Alongside int
}

// SummaryFromPB converts a wire summary back.
func SummaryFromPB(p *agentpb.Summary) Totals {
	t := Totals{
		Summary:         Summary{Elapsed: time.Duration(p.GetSecondsNs()), Partial: p.GetPartial()},
		AgentCPUPercent: p.GetAgentCpuPercent(), HostCPUPercent: p.GetHostCpuPercent(), Alongside: int(p.GetAlongside()),
	}
	if p.GetError() != "" {
		t.Err = errors.New(p.GetError())
	}
	for _, s := range p.GetStreams() {
		t.Streams = append(t.Streams, SampleFromPB(s))
	}
	return t
}
