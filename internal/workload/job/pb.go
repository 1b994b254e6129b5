package job

import (
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// RecordToPB converts a job record to its wire form (agentpb), as an
// agent's role reports it. The host does not travel: the controller knows
// which agent it asked.
func RecordToPB(r Record) *agentpb.Job {
	return &agentpb.Job{Id: uint32(r.ID), Subject: r.Subject, StartUnixNs: r.Start.UnixNano(), EndUnixNs: r.End.UnixNano(),
		Bytes: uint64(r.Bytes), Status: r.Status, Reason: r.Reason, TcpRttMs: r.TCPRTTms, TcpRetransmits: r.TCPRetransmits}
}

// RecordFromPB converts a wire job back, as a job of host.
func RecordFromPB(host string, p *agentpb.Job) Record {
	return Record{ID: int(p.GetId()), Host: host, Subject: p.GetSubject(), Start: time.Unix(0, p.GetStartUnixNs()), End: time.Unix(0, p.GetEndUnixNs()),
		Bytes: int64(p.GetBytes()), Status: p.GetStatus(), Reason: p.GetReason(), TCPRTTms: p.GetTcpRttMs(), TCPRetransmits: p.GetTcpRetransmits()}
}
