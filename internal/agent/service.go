package agent

import "github.com/wanlab/wanlab/internal/agent/agentpb"

// service is the agent's gRPC service: its calls, grouped by concern, each
// group a type of its own over the server's settings and shared state.
// Every call reaches it through the guard (admitUnary, admitStream).
type service struct {
	unimplemented
	hostCalls
	throughputCalls
	fileCalls
	probeCalls
	workloadCalls
	targetCalls
}

var _ agentpb.AgentServer = (*service)(nil)

func newService(s *Server) *service {
	return &service{hostCalls: hostCalls{s}, throughputCalls: throughputCalls{s}, fileCalls: fileCalls{s},
		probeCalls: probeCalls{s}, workloadCalls: workloadCalls{s}, targetCalls: targetCalls{s}}
}

// hostCalls say what the host is: Hello, Interfaces.
type hostCalls struct{ *Server }

// throughputCalls run throughput tests: Receive, Send.
type throughputCalls struct{ *Server }

// fileCalls move files and read and write the disk: ReceiveFile,
// SendFile, Disk.
type fileCalls struct{ *Server }

// probeCalls send and answer probes and traces: Reflect, Probe.
type probeCalls struct{ *Server }

// workloadCalls run the roles of application workloads: Workload,
// StopWorkload.
type workloadCalls struct{ *Server }

// unimplemented answers the methods of a newer API that this agent does
// not have; it is embedded a level below the calls, which it would make
// ambiguous beside them.
type unimplemented struct {
	agentpb.UnimplementedAgentServer
}
