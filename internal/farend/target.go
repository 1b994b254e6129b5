package farend

import "slices"

// Target is a far end that runs no agent, as an inventory or a monitor
// configuration names it: the agents of hosts test toward it, each
// resolving its address and testing it only if its policy names it.
type Target struct {
	Name string
	// Kind is Iperf3, STAMP or Ping.
	Kind string
	// Address is as written: HOST, HOST:PORT or [IPv6]:PORT.
	Address string
}

// Find returns the target of that name among ts.
func Find(ts []Target, name string) (Target, bool) {
	i := slices.IndexFunc(ts, func(t Target) bool { return t.Name == name })
	if i < 0 {
		return Target{}, false
	}
	return ts[i], true
}

// KindWords names a kind of far end in a sentence ("an iperf3 server").
func KindWords(kind string) string {
	switch kind {
	case Iperf3:
		return "an iperf3 server"
	case STAMP:
		return "a STAMP reflector"
	}
	return "a ping target"
}

// KindWords names the target's kind in a sentence.
func (t Target) KindWords() string { return KindWords(t.Kind) }
