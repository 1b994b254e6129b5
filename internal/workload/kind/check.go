package kind

import "fmt"

// Pair checks a step between two hosts, at the settings from and to:
// both known, not the same, and to reachable from from.
func Pair(c Check, from, to string) {
	c.Host("from", from)
	c.Host("to", to)
	if from != "" && from == to {
		c.Fail("to", "from and to are the same host %q", from)
	}
	c.Reaches("to", from, to)
}

// Hub checks a step's central host (the setting hubName, such as server)
// and the hosts of the setting spokesName (such as clients), of which
// there must be at least one (missing says how to list them): each a known
// host, not the hub, and one the hub reaches.
func Hub(c Check, hubName, hub, spokesName string, spokes []string, missing string) {
	c.Host(hubName, hub)
	if len(spokes) == 0 {
		c.Fail(spokesName, "missing: %s", missing)
	}
	for i, h := range spokes {
		f := fmt.Sprintf("%s[%d]", spokesName, i)
		c.Host(f, h)
		if h != "" && h == hub {
			c.Fail(f, "%q is the %s", h, hubName)
		}
		c.Reaches(f, hub, h)
	}
}

// DecodeWith makes a kind's Decode from its check: the settings are
// decoded into the raw form R (a struct with yaml tags), then checked
// into the step's spec S; nil when nothing decoded or check made none.
func DecodeWith[R any, S interface {
	Spec
	comparable
}](check func(Check, R) S) func(Decoder, Check) Spec {
	return func(decode Decoder, c Check) Spec {
		var r R
		if !decode(&r) {
			return nil
		}
		var none S
		if s := check(c, r); s != none {
			return s
		}
		return nil
	}
}
