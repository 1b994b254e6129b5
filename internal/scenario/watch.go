package scenario

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/tcpwatch"
)

// What a workload watches during its steps: packet captures of links and
// the TCP state of hosts' connections.

// capture reads a workload's capture: {links: [a->b], snaplen: 128, count: 100000}.
func (v *timelineChecker) capture(f string, n *yaml.Node, tb *Testbed) *Capture {
	if !v.emulated(f, n, tb, yaml.MappingNode,
		"a capture is made inside the emulated engine: on real hosts there is none (capture there with tcpdump)",
		"expected {links: [a->b], snaplen: 128, count: 100000}") {
		return nil
	}
	c := &Capture{}
	selectors := v.linkSelectors(tb)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i].Value, n.Content[i+1]
		switch k {
		case "links":
			if val.Kind != yaml.SequenceNode || len(val.Content) == 0 {
				v.fail(f+".links", "give the links to capture, as [a->b, site cern]")
				continue
			}
			for j, l := range val.Content {
				v.link(fmt.Sprintf("%s.links[%d]", f, j), l.Value, selectors)
				c.Links = append(c.Links, l.Value)
			}
		case "snaplen", "count":
			x, err := strconv.Atoi(val.Value)
			switch {
			case err != nil || x < 0:
				v.fail(f+"."+k, "%q: give a whole number", val.Value)
			case k == "snaplen" && x != 0 && (x < 20 || x > 65535):
				v.fail(f+".snaplen", "%d: give 20 to 65535 bytes (0: whole packets)", x)
			case k == "snaplen":
				c.Snaplen = x
			default:
				c.Count = x
			}
		default:
			v.fail(f+"."+k, "unknown field %q (a capture has links, snaplen and count)", k)
		}
	}
	if len(c.Links) == 0 {
		v.fail(f+".links", "give the links to capture, as [a->b, site cern]")
	}
	return c
}

// watches reads a workload's watch: {host: h, port: 8080, peer: 10.0.0.0/8,
// interval: 10ms}, or a list of them.
func (v *timelineChecker) watches(f string, n *yaml.Node, tb *Testbed) []Watch {
	if absent(n) {
		return nil
	}
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []Watch
	for i, item := range items {
		g := f
		if n.Kind == yaml.SequenceNode {
			g = fmt.Sprintf("%s[%d]", f, i)
		}
		if item.Kind != yaml.MappingNode {
			v.fail(g, "expected {host: NAME, port: 8080, interval: 10ms}")
			continue
		}
		w := Watch{Interval: 10 * time.Millisecond}
		for j := 0; j+1 < len(item.Content); j += 2 {
			k, val := item.Content[j].Value, item.Content[j+1]
			switch k {
			case "host":
				w.Host = val.Value
			case "port":
				p, err := strconv.Atoi(val.Value)
				if err != nil || p < 1 || p > 65535 {
					v.fail(g+".port", "%q: give a port, 1-65535", val.Value)
				}
				w.Port = p
			case "peer":
				w.Peer = val.Value
			case "cgroup":
				w.Cgroup = val.Value
			case "interval":
				d, err := units.ParseDuration(val.Value)
				if err != nil {
					v.fail(g+".interval", "%v", err)
				}
				w.Interval = d
			default:
				v.fail(g+"."+k, "unknown field %q (a watch has host, port, peer, cgroup and interval)", k)
			}
		}
		v.hosts.host(g+".host", w.Host, tb)
		spec := tcpwatch.Spec{Port: w.Port, Peer: w.Peer, Cgroup: w.Cgroup, Interval: w.Interval}
		if v.hosts.knownHost(w.Peer, tb) {
			spec.Peer = "" // a host, whose address the run knows
		}
		if err := spec.Validate(limits.Default); err != nil {
			v.fail(g, "%v", err)
		}
		out = append(out, w)
	}
	return out
}
