// Package farend is the vocabulary of far ends that run no wanlab agent
// (issue 36): their kinds (an iperf3 server, a STAMP reflector, a host
// that answers ping), the ports they listen on by default, and the
// reasons an agent gives for a refusal that is neither a policy's nor a
// limit's. It is a leaf: the policy, the agent, the controller's side
// (measure/target) and the monitoring core all name far ends through it.
package farend

// The kinds of far end, as policies, Target requests, inventories and
// monitor configurations name them.
const (
	// Iperf3 is an iperf3 server: a throughput test.
	Iperf3 = "iperf3"
	// STAMP is a STAMP or TWAMP-light reflector (RFC 8762): probes.
	STAMP = "stamp"
	// Ping is a host that answers ICMP echo only: probes.
	Ping = "ping"
)

// Kinds are every kind of far end, in the order messages list them.
var Kinds = []string{Iperf3, STAMP, Ping}

// Known says whether kind is a kind of far end.
func Known(kind string) bool { return kind == Iperf3 || kind == STAMP || kind == Ping }

// The ports far ends listen on when an address names none.
const (
	// STAMPPort is RFC 8762's (TWAMP-Test's well-known port).
	STAMPPort = 862
	// Iperf3Port is iperf3's default (iperf3 -s).
	Iperf3Port = 5201
)

// DefaultPort is the port a far end of kind listens on when an address
// names none: 0 for ping, which has none.
func DefaultPort(kind string) int {
	switch kind {
	case STAMP:
		return STAMPPort
	case Iperf3:
		return Iperf3Port
	}
	return 0
}

// ErrorDomain and the reasons are what an agent's refusal of a Target
// call carries (a google.rpc.ErrorInfo detail of its gRPC status) when its
// code alone (Unavailable) does not say which failure it was.
const (
	ErrorDomain = "wanlab.agent"
	// ReasonBusy: the far end (an iperf3 server) runs another test.
	ReasonBusy = "FAR_END_BUSY"
	// ReasonResolveTimeout: the far end's name did not resolve in time
	// (or the resolver failed for now).
	ReasonResolveTimeout = "RESOLVE_TIMEOUT"
)
