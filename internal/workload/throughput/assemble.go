package throughput

// Assemble lays out a test whose two ends' totals came from elsewhere than
// two agents' Send and Receive (an iperf3 server's count beside its
// client's: the agent's Target call) as Measure lays out its own: sent is
// the sender's totals, recv the receiver's, either nil when unknown.
func Assemble(from, to string, spec Spec, sent, recv *Totals) *Result {
	r := &Result{Start: StartInfo{From: from, To: to, Protocol: spec.Protocol.String(), Streams: spec.Streams,
		Duration: spec.Duration.Seconds(), Bytes: spec.Bytes, Window: spec.Window, Congestion: spec.Congestion}}
	r.assemble(spec, nil, nil, sent, recv)
	return r
}
