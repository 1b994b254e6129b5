package scenario

import "fmt"

// Reachable says whether hosts a and b of the test-bed can reach each
// other, by the rules its topology routes with (internal/topology): a link
// joins them, or both are at sites (two hosts of one site share its LAN).
// Packets are never forwarded through a third host.
func (t *Testbed) Reachable(a, b string) bool {
	return newReachability(t).reachable(a, b)
}

// reachability answers Reachable for many pairs of one test-bed.
type reachability struct {
	site   map[string]string
	linked map[[2]string]bool
	hosts  map[string]bool
}

func newReachability(t *Testbed) *reachability {
	r := &reachability{site: map[string]string{}, linked: map[[2]string]bool{}, hosts: map[string]bool{}}
	for _, h := range t.Hosts {
		r.hosts[h.Name] = true
		r.site[h.Name] = h.Site
	}
	for _, l := range t.Links {
		r.linked[[2]string{min(l.A, l.B), max(l.A, l.B)}] = true
	}
	return r
}

func (r *reachability) reachable(a, b string) bool {
	return a == b || r.linked[[2]string{min(a, b), max(a, b)}] || r.site[a] != "" && r.site[b] != ""
}

// why says in words why a and b cannot reach each other.
func (r *reachability) why(a, b string) string {
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

// reaches refuses, at field, a workload role on host a that must reach
// host b and cannot. Real hosts are reached through the real network,
// which the scenario does not describe: they are not checked. Unknown
// hosts are reported where they are named.
func (v *validator) reaches(field, a, b string, tb *Testbed) {
	if tb.RealHosts() || a == "" || b == "" {
		return
	}
	if v.reach == nil {
		v.reach = newReachability(tb)
	}
	r := v.reach
	if !r.hosts[a] || !r.hosts[b] || r.reachable(a, b) {
		return
	}
	v.fail(field, "%s", r.why(a, b))
}

// meshReaches refuses a mesh whose hosts cannot all reach each other,
// naming the first pair that cannot (hosts at sites reach each other: only
// those without a site are looked at).
func (v *validator) meshReaches(field string, hosts []string, tb *Testbed) {
	if tb.RealHosts() || len(hosts) > 0 && len(v.all) > 0 && &hosts[0] == &v.all[0] && v.allChecked {
		return
	}
	if v.reach == nil {
		v.reach = newReachability(tb)
	}
	if len(hosts) > 0 && len(v.all) > 0 && &hosts[0] == &v.all[0] {
		v.allChecked = true
	}
	for _, a := range hosts {
		if v.reach.site[a] != "" {
			continue
		}
		for _, b := range hosts {
			if v.reach.hosts[a] && v.reach.hosts[b] && !v.reach.reachable(a, b) {
				v.fail(field, "%s", v.reach.why(a, b))
				return
			}
		}
	}
}

// fine says, without making a message, that host h of a role with a peer
// (its server, its master) is a known host other than the peer, which it
// can reach: the common case, checked for every member of every step.
func (v *validator) fine(h, peer string, tb *Testbed) bool {
	if !v.knownHost(h, tb) || h == peer {
		return false
	}
	return tb.RealHosts() || !v.reach.hosts[peer] || v.reach.reachable(h, peer)
}

// knownHost says whether the test-bed has a host of that name.
func (v *validator) knownHost(name string, tb *Testbed) bool {
	if v.reach == nil {
		v.reach = newReachability(tb)
	}
	return v.reach.hosts[name]
}

// allHosts is the names of every host of the test-bed, in file order,
// made once: a mesh's hosts when it names none.
func (v *validator) allHosts(tb *Testbed) []string {
	if v.all == nil {
		for _, h := range tb.Hosts {
			v.all = append(v.all, h.Name)
		}
	}
	return v.all
}
