package target

import (
	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// Throughput lays out a test from host src toward the iperf3 server
// named name as a throughput test between agents: the host's end (the
// sender) and the server's (the receiver), whose count is the path's
// throughput; the family is that of the address the agent tested.
func Throughput(src, name string, spec throughput.Spec, res *agentpb.TargetResult) *throughput.Result {
	sent, recv := throughput.SummaryFromPB(res.GetThroughput()), throughput.SummaryFromPB(res.GetServer())
	out := throughput.Assemble(src, name, spec, &sent, &recv)
	out.Start.Family = measure.FamilyOf(res.GetAddress())
	return out
}
