package probe

import (
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// The wire forms of probes' spec and results, as the agent API carries
// them (agentpb): the controller and the agent convert with these.

// SpecToPB converts a probe spec to its wire form.
func SpecToPB(s Spec) *agentpb.ProbeSpec {
	return &agentpb.ProbeSpec{Count: uint32(s.Count), IntervalNs: int64(s.Interval), Size: uint32(s.Size), TimeoutNs: int64(s.Timeout)}
}

// SpecFromPB converts a wire probe spec back.
func SpecFromPB(p *agentpb.ProbeSpec) Spec {
	return Spec{Count: int(p.GetCount()), Interval: time.Duration(p.GetIntervalNs()), Size: int(p.GetSize()), Timeout: time.Duration(p.GetTimeoutNs())}
}

// ResultsToPB converts probe results to their wire form.
func ResultsToPB(rs []Result) []*agentpb.ProbeResult {
	out := make([]*agentpb.ProbeResult, len(rs))
	for i, r := range rs {
		out[i] = &agentpb.ProbeResult{Seq: uint32(r.Seq), SentNs: r.Sent, ReflectRxNs: r.ReflectRx, ReflectTxNs: r.ReflectTx,
			ReceivedNs: r.Received, Duplicates: uint32(r.Duplicates), ReflectorCount: r.ReflectorCount, ReflectorSession: r.ReflectorSession}
	}
	return out
}

// ResultsFromPB converts wire probe results back.
func ResultsFromPB(ps []*agentpb.ProbeResult) []Result {
	out := make([]Result, len(ps))
	for i, p := range ps {
		out[i] = Result{Seq: int(p.Seq), Sent: p.SentNs, ReflectRx: p.ReflectRxNs, ReflectTx: p.ReflectTxNs, Received: p.ReceivedNs, Duplicates: int(p.Duplicates),
			ReflectorCount: p.ReflectorCount, ReflectorSession: p.ReflectorSession}
	}
	return out
}
