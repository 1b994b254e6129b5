package scenario

import (
	"fmt"
	"strings"

	"github.com/wanlab/wanlab/internal/routing"
)

// Reachable says whether hosts a and b of the test-bed can reach each
// other, by the rules its topology routes with (internal/topology), on
// its Graph: a link joins them, both are at one site (its LAN), or a
// path of routers (and the core where sites without via: meet) joins
// what each is linked to or its site joins. Packets are never forwarded
// through a third host.
func (t *Testbed) Reachable(a, b string) bool {
	return newReachability(t).reachable(a, b)
}

// reachability answers Reachable for many pairs of one test-bed, its
// graph made once.
type reachability struct {
	tb    *Testbed
	site  map[string]string
	hosts map[string]int // node of each host in the graph
	g     routing.Graph
	r     *routing.Reachability
}

func newReachability(t *Testbed) *reachability {
	r := &reachability{tb: t, site: map[string]string{}, hosts: map[string]int{}, g: t.Graph()}
	for i, h := range t.Hosts {
		r.hosts[h.Name] = len(t.Routers) + i
		r.site[h.Name] = h.Site
	}
	r.r = r.g.Reachability()
	return r
}

func (r *reachability) reachable(a, b string) bool {
	if a == b {
		return true
	}
	i, ok := r.hosts[a]
	j, ok2 := r.hosts[b]
	return ok && ok2 && r.r.Reaches(i, j)
}

// known says whether the test-bed has a host of that name.
func (r *reachability) known(name string) bool {
	_, ok := r.hosts[name]
	return ok
}

// why says in words why a and b cannot reach each other.
func (r *reachability) why(a, b string) string {
	if len(r.tb.Routers) == 0 { // as a test-bed of hosts and sites always said it
		var where string
		switch {
		case r.site[a] == "" && r.site[b] == "":
			where = "neither is at a site"
		case r.site[a] == "":
			where = a + " is at no site"
		default:
			where = b + " is at no site"
		}
		return fmt.Sprintf("hosts %s and %s cannot reach each other: no link joins them and %s (join them with a link, or put both at sites)", a, b, where)
	}
	ja, jb := r.joins(a), r.joins(b)
	switch {
	case len(ja) == 0 && len(jb) == 0:
		return fmt.Sprintf("hosts %s and %s cannot reach each other: no link joins them and neither joins a router or a site (join them with a link, or each to a router)", a, b)
	case len(ja) == 0 || len(jb) == 0:
		lone := a
		if len(jb) == 0 {
			lone = b
		}
		return fmt.Sprintf("hosts %s and %s cannot reach each other: no link joins them and %s joins no router and no site (link %s to a router, or put it at a site)", a, b, lone, lone)
	}
	return fmt.Sprintf("hosts %s and %s cannot reach each other: %s joins %s, which reaches none of what %s joins (%s): link the two networks, or the hosts", a, b, b, strings.Join(jb, ", "), a, strings.Join(ja, ", "))
}

// joins is what host h's packets leave it for, by name: the routers its
// links join and the router (or core) its site joins.
func (r *reachability) joins(h string) []string {
	var out []string
	for _, x := range exits(&r.g, r.hosts[h]) {
		if x.site == "" {
			out = append(out, x.to)
		} else {
			out = append(out, x.to+" through "+x.site)
		}
	}
	return out
}

// hostChecker checks a workload's references to hosts: each a host of the
// test-bed, and each pair that must reach each other able to (by the
// test-bed's reachability, made once).
type hostChecker struct {
	*fieldChecker
	// reach says which pairs of hosts can reach each other, once made.
	reach *reachability
	// all are the test-bed's hosts, a mesh's when it names none; allChecked
	// says they were checked to reach each other.
	all        []string
	allChecked bool
}

// host checks a reference to a host.
func (v *hostChecker) host(field, name string, tb *Testbed) {
	if name == "" {
		v.fail(field, "missing: name a host of the test-bed")
		return
	}
	if !v.knownHost(name, tb) {
		var names []string
		for _, h := range tb.Hosts {
			names = append(names, h.Name)
		}
		v.fail(field, "unknown host %q (hosts: %s)", name, strings.Join(names, ", "))
	}
}

// reaches refuses, at field, a workload role on host a that must reach
// host b and cannot. Real hosts are reached through the real network,
// which the scenario does not describe: they are not checked. Unknown
// hosts are reported where they are named.
func (v *hostChecker) reaches(field, a, b string, tb *Testbed) {
	if tb.RealHosts() || a == "" || b == "" {
		return
	}
	if v.reach == nil {
		v.reach = newReachability(tb)
	}
	r := v.reach
	if !r.known(a) || !r.known(b) || r.reachable(a, b) {
		return
	}
	v.fail(field, "%s", r.why(a, b))
}

// meshReaches refuses a mesh whose hosts cannot all reach each other,
// naming the first pair that cannot, those of a host at no site first
// (hosts at sites that join no router all reach each other).
func (v *hostChecker) meshReaches(field string, hosts []string, tb *Testbed) {
	if tb.RealHosts() || len(hosts) > 0 && len(v.all) > 0 && &hosts[0] == &v.all[0] && v.allChecked {
		return
	}
	if v.reach == nil {
		v.reach = newReachability(tb)
	}
	if len(hosts) > 0 && len(v.all) > 0 && &hosts[0] == &v.all[0] {
		v.allChecked = true
	}
	r := v.reach
	for _, sited := range []bool{false, true} {
		if sited && len(tb.Routers) == 0 {
			return // at sites on the core: every pair reaches the other
		}
		for _, a := range hosts {
			if (r.site[a] != "") != sited || !r.known(a) {
				continue
			}
			for _, b := range hosts {
				if r.known(b) && !r.reachable(a, b) {
					v.fail(field, "%s", r.why(a, b))
					return
				}
			}
		}
	}
}

// knownHost says whether the test-bed has a host of that name.
func (v *hostChecker) knownHost(name string, tb *Testbed) bool {
	if v.reach == nil {
		v.reach = newReachability(tb)
	}
	return v.reach.known(name)
}

// allHosts is the names of every host of the test-bed, in file order,
// made once: a mesh's hosts when it names none.
func (v *hostChecker) allHosts(tb *Testbed) []string {
	if v.all == nil {
		for _, h := range tb.Hosts {
			v.all = append(v.all, h.Name)
		}
	}
	return v.all
}
