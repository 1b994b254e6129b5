package realhosts

import (
	"maps"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// Target is a far end that runs no agent, named by an inventory's
// targets: {NAME: {iperf3: HOST:PORT}}, {NAME: {stamp: HOST[:PORT]}} or
// {NAME: {ping: HOST}} (as a monitor configuration names them). A measure
// verb's --target NAME tests toward it from a host's agent, which
// resolves its address and tests it only if its policy names it.
type Target = farend.Target

// MaxTargets is the most targets an inventory names.
const MaxTargets = 1000

// rawTargets are targets as written: each name's one kind and address.
type rawTargets = yamlfile.Ordered[map[string]string]

// checkTargets reads an inventory's targets: each a valid name that no
// host has, of one known kind, at an address that kind takes.
func checkTargets(c *yamlfile.Checker, raw rawTargets, hosts []Host) []Target {
	if len(raw) > MaxTargets {
		c.Fail("targets", "%d targets: an inventory names at most %d", len(raw), MaxTargets)
		return nil
	}
	var out []Target
	for _, e := range raw {
		f := "targets." + e.Key
		switch {
		case !scenario.ValidName(e.Key):
			c.Fail(f, "target name %q must be 1-32 letters, digits, '-' or '_', starting with a letter or digit", e.Key)
			continue
		case slices.ContainsFunc(hosts, func(h Host) bool { return h.Name == e.Key }):
			c.Fail(f, "%s is a host of the inventory: give the target another name", e.Key)
			continue
		case len(e.Value) != 1:
			kinds := slices.Sorted(maps.Keys(e.Value))
			c.Fail(f, "target %s gives %d kinds (%s): give one, as {stamp: 192.0.2.7:862}, {iperf3: iperf.example.org:5201} or {ping: 192.0.2.1}",
				e.Key, len(kinds), strings.Join(kinds, ", "))
			continue
		}
		for kind, addr := range e.Value {
			t := Target{Name: e.Key, Kind: kind, Address: strings.TrimSpace(addr)}
			if !farend.Known(kind) {
				c.Fail(f+"."+kind, "%q: a target is {iperf3: HOST:PORT} (an iperf3 server), {stamp: HOST:PORT} (a STAMP or TWAMP-light reflector) or {ping: HOST}", kind)
				continue
			}
			if why := farend.CheckAddress(kind, t.Address); why != "" {
				c.Fail(f+"."+kind, "%q: %s", addr, why)
				continue
			}
			out = append(out, t)
		}
	}
	return out
}

// Target returns the inventory's target of that name.
func (inv *Inventory) Target(name string) (Target, bool) { return farend.Find(inv.Targets, name) }
