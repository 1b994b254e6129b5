package scenario

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/routing"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// graphChecker reads the test-bed's graph: its routers, the links between
// any two of its nodes, the routers sites join (via:), routing:, reroute:
// and the explicit routes:, and checks that every routed pair of hosts
// has one path that makes sense. Hosts and sites are read before it.
type graphChecker struct {
	*dirChecker
	tb *Testbed
	// kind is "host" or "router" for every node's name; sites are apart
	// (a site may share its name with a host, never with a router).
	kind  map[string]string
	sites map[string]bool
	// linkOf is the index in links of the link joining each pair of
	// nodes, the pair's names in order.
	linkOf map[[2]string]int
	// joins are the nodes each node joins, in file order, as messages
	// name them ("r2", "site bari", "na through site bari").
	joins map[string][]string
	// g is the graph, once its nodes and links are read.
	g routing.Graph
}

// pairKey is the key of an unordered pair of names.
func pairKey(a, b string) [2]string { return [2]string{min(a, b), max(a, b)} }

// bounded says whether the graph is within its bounds, counted before any
// of it is read; each bound passed is a problem (ErrTooLarge).
func (v *bedChecker) bounded(raw *rawFile) bool {
	ok := true
	tooMany := func(field string, n, most int, what, hint string) {
		if n > most {
			v.FailErr(field, yamlfile.ErrTooLarge, "%d %s: a test-bed holds at most %d (%s)", n, what, most, hint)
			ok = false
		}
	}
	tooMany("routers", len(raw.Routers), MaxRouters, "routers", "each forwards in the one engine")
	tooMany("links", len(raw.Links), MaxLinks, "links", "two directions each, in the one engine")
	tooMany("routes", len(raw.Routes), MaxRoutes, "routes", "route the other pairs by routing:")
	for i, r := range raw.Routes {
		if n := len(r.Via); n > MaxPathDirs-1 {
			v.FailErr(fmt.Sprintf("routes[%d].via", i), yamlfile.ErrTooLarge, "%d routers: a path crosses at most %d directions (a packet's TTL must last it), so a route at most %d routers", n, MaxPathDirs, MaxPathDirs-1)
			ok = false
		}
	}
	return ok
}

// read reads the graph into tb, whose hosts and sites are read.
func (v *graphChecker) read(raw *rawFile) {
	tb, problems := v.tb, v.Count()
	v.kind, v.sites, v.linkOf, v.joins = map[string]string{}, map[string]bool{}, map[[2]string]int{}, map[string][]string{}
	for _, s := range tb.Sites {
		v.sites[s.Name] = true
	}
	for _, h := range tb.Hosts {
		v.kind[h.Name] = "host"
	}
	v.routers(raw)
	v.links(raw)
	v.routerAddrs()
	v.vias()
	v.lonelyRouters()
	v.g = v.tb.Graph()
	v.routing(raw)
	v.routes(raw)
	if v.Count() == problems && len(tb.Routers) > 0 {
		v.paths()
	}
}

// routers reads the routers: names unique among nodes, each with the
// address it is given (checked with the hops' by routerAddrs).
func (v *graphChecker) routers(raw *rawFile) {
	for _, r := range raw.Routers {
		field := "routers." + r.Key
		v.name(field, "router", r.Key)
		switch {
		case v.kind[r.Key] == "host": // links to it join the host
			v.fail(field, "router %s has the name of a host: names of nodes are unique", r.Key)
		case v.sites[r.Key]:
			v.fail(field, "router %s has the name of a site: names of nodes are unique", r.Key)
		case r.Key == "core":
			v.fail(field, "core is the name of the core that sites without via: meet at: give the router another")
		}
		if v.kind[r.Key] != "host" {
			v.kind[r.Key] = "router"
		}
		rt := Router{Name: r.Key}
		if a := r.Value.Addr; a != "" {
			if h, err := ParseHop(a); err != nil || h.Name != "" {
				v.fail(field+".addr", "%q: give an IPv4 address outside the hosts' subnet (as 192.0.2.1)", a)
			} else {
				rt.Addr = h.Addr
			}
		}
		v.tb.Routers = append(v.tb.Routers, rt)
	}
}

// routerAddrs checks the routers' given addresses (outside the hosts'
// subnet, each its own, no hop's: every ICMP error names its router) and
// gives each router without one the next free address of RouterSubnet,
// in file order.
func (v *graphChecker) routerAddrs() {
	hop := map[netip.Addr]bool{}
	for _, d := range v.tb.namedDirections() {
		for _, h := range d.Hops {
			hop[h.Addr] = true
		}
	}
	for _, s := range v.tb.Sites {
		for _, h := range s.LAN.Hops {
			hop[h.Addr] = true
		}
	}
	owner := map[netip.Addr]string{}
	for _, r := range v.tb.Routers {
		field := "routers." + r.Name + ".addr"
		switch a := r.Addr; {
		case !a.IsValid():
		case v.tb.Subnet.Contains(a):
			v.fail(field, "router %s is in the hosts' subnet %s: give routers addresses outside it (as 192.0.2.0/24)", a, v.tb.Subnet)
		case owner[a] != "":
			v.fail(field, "%s is router %s's address already: give each router its own", a, owner[a])
		case hop[a]:
			v.fail(field, "%s is the address of a hop (hops:) already: give each router its own", a)
		default:
			owner[a] = r.Name
		}
	}
	next := RouterSubnet.Addr()
	for i := range v.tb.Routers {
		r := &v.tb.Routers[i]
		if r.Addr.IsValid() {
			continue
		}
		if v.tb.Subnet.Overlaps(RouterSubnet) {
			v.fail("routers."+r.Name, "give router %s an addr: the hosts' subnet %s overlaps %s, where routers' addresses are chosen", r.Name, v.tb.Subnet, RouterSubnet)
			continue
		}
		for next = next.Next(); owner[next] != "" || hop[next]; next = next.Next() {
		}
		r.Addr, owner[next] = next, r.Name
	}
}

// links reads the links, each between two nodes.
func (v *graphChecker) links(raw *rawFile) {
	legacy := len(raw.Routers) == 0 // say it as a test-bed of hosts alone always did
	nodes := "nodes"
	if legacy {
		nodes = "hosts"
	}
	for i, l := range raw.Links {
		field := fmt.Sprintf("links[%d]", i)
		if len(l.Between) != 2 {
			if legacy {
				v.fail(field+".between", "a link needs exactly two hosts, e.g. between: [a, b]")
			} else {
				v.fail(field+".between", "a link needs exactly two nodes (hosts or routers), e.g. between: [a, r1]")
			}
			continue
		}
		link := Link{A: l.Between[0], B: l.Between[1]}
		known := true
		for j, name := range l.Between {
			if v.kind[name] != "" {
				continue
			}
			known = false
			if legacy {
				v.fail(fmt.Sprintf("%s.between[%d]", field, j), "unknown host %q", name)
			} else {
				v.fail(fmt.Sprintf("%s.between[%d]", field, j), "unknown node %q (hosts: %s; routers: %s)", name, v.names("host"), v.names("router"))
			}
		}
		if link.A == link.B {
			v.fail(field+".between", "a link joins two different %s, not %q to itself", nodes, link.A)
		}
		key := pairKey(link.A, link.B)
		if j, dup := v.linkOf[key]; dup {
			if v.kind[link.A] == "host" && v.kind[link.B] == "host" {
				v.fail(field+".between", "hosts %s and %s are already joined by links[%d]", link.A, link.B, j)
			} else {
				v.fail(field+".between", "%s and %s are already joined by links[%d]", link.A, link.B, j)
			}
		} else {
			v.linkOf[key] = i
			if known && link.A != link.B {
				v.joins[link.A] = append(v.joins[link.A], link.B)
				v.joins[link.B] = append(v.joins[link.B], link.A)
			}
		}
		base := v.params(field, l.rawParams, Direction{MTU: DefaultMTU}, false)
		link.Forward = v.override(field+".forward", l.Forward, base)
		link.Reverse = v.override(field+".reverse", l.Reverse, base)
		v.tb.Links = append(v.tb.Links, link)
	}
}

// vias checks the router each site joins, and notes what a site's hosts
// join through it.
func (v *graphChecker) vias() {
	for _, s := range v.tb.Sites {
		if s.Via == "" {
			continue
		}
		field := "sites." + s.Name + ".via"
		switch v.kind[s.Via] {
		case "router":
			v.joins[s.Via] = append(v.joins[s.Via], "site "+s.Name)
		case "host":
			v.fail(field, "%q is a host: a site's access link joins a router (or, without via:, the core every such site meets at)", s.Via)
		default:
			v.fail(field, "unknown router %q (routers: %s)", s.Via, v.names("router"))
		}
	}
	for _, h := range v.tb.Hosts {
		if s, ok := v.tb.Site(h.Site); ok {
			where := "the core"
			if v.kind[s.Via] == "router" {
				where = s.Via
			}
			v.joins[h.Name] = append(v.joins[h.Name], where+" through site "+s.Name)
		}
	}
}

// lonelyRouters refuses routers that join nothing: no link, no site.
func (v *graphChecker) lonelyRouters() {
	for _, r := range v.tb.Routers {
		if len(v.joins[r.Name]) == 0 && v.kind[r.Name] == "router" {
			v.fail("routers."+r.Name, "router %s joins nothing: give it a link (links: - {between: [%s, ...]})", r.Name, r.Name)
		}
	}
}

// routing reads routing: and reroute:.
func (v *graphChecker) routing(raw *rawFile) {
	switch raw.Routing {
	case "", RoutingDelay, RoutingHops:
		v.tb.Routing = raw.Routing
	default:
		v.fail("routing", "%q: give delay (the least propagation delay, the default) or hops (the fewest directions)", raw.Routing)
	}
	switch raw.Reroute {
	case "":
	case "never":
		v.tb.Reroute = RerouteNever
	default:
		d, err := units.ParseDuration(raw.Reroute)
		switch {
		case err != nil:
			v.fail("reroute", "%v; or never, to keep paths where they are", err)
		case d < 0 || d > time.Hour:
			v.fail("reroute", "%s: give a duration from 0s (at once, the default) to 1h, or never", raw.Reroute)
		default:
			v.tb.Reroute = d
		}
	}
}

// routes reads the explicit routes: each from a host to another, through
// routers that follow each other along links, each once, for a pair that
// is routed (not joined by a link or a site's LAN) and has no other route.
func (v *graphChecker) routes(raw *rawFile) {
	first := map[[2]string]int{}
	for i, r := range raw.Routes {
		field := fmt.Sprintf("routes[%d]", i)
		ok := v.routeEnd(field+".from", r.From)
		ok = v.routeEnd(field+".to", r.To) && ok
		if r.From != "" && r.From == r.To {
			v.fail(field+".to", "from and to are the same host %q", r.From)
			ok = false
		}
		if ok {
			ok = v.routedPair(field, i, r.From, r.To, first)
		}
		if len(r.Via) == 0 {
			v.fail(field+".via", "missing: give the routers the route crosses, in order (as via: [r1, r2])")
			continue
		}
		for j, name := range r.Via {
			ok = v.routeRouter(fmt.Sprintf("%s.via[%d]", field, j), name) && ok
		}
		if ok {
			ok = v.followed(field, Route{From: r.From, To: r.To, Via: r.Via})
		}
		if ok {
			v.tb.Routes = append(v.tb.Routes, Route{From: r.From, To: r.To, Via: slices.Clone(r.Via)})
		}
	}
}

// routeEnd checks a route's from or to: a host.
func (v *graphChecker) routeEnd(field, name string) bool {
	switch {
	case name == "":
		v.fail(field, "missing: name a host of the test-bed")
	case v.kind[name] == "router":
		v.fail(field, "%q is a router: a route runs from a host to a host", name)
	case v.kind[name] != "host":
		v.fail(field, "unknown host %q (hosts: %s)", name, v.names("host"))
	default:
		return true
	}
	return false
}

// routeRouter checks a router a route crosses.
func (v *graphChecker) routeRouter(field, name string) bool {
	switch {
	case v.kind[name] == "router":
		return true
	case v.kind[name] == "host":
		v.fail(field, "%q is a host: hosts do not forward", name)
	case v.sites[name]:
		v.fail(field, "%q is a site: a route names the routers it crosses (its hosts' sites are on their paths already)", name)
	default:
		v.fail(field, "unknown router %q (routers: %s)", name, v.names("router"))
	}
	return false
}

// routedPair checks that hosts a and b are routed (not joined by a link
// or a LAN) and that no earlier route is theirs.
func (v *graphChecker) routedPair(field string, i int, a, b string, first map[[2]string]int) bool {
	if j, ok := v.linkOf[pairKey(a, b)]; ok {
		v.fail(field, "%s and %s are joined directly by links[%d]: their path is that link", a, b, j)
		return false
	}
	ha, _ := v.tb.Host(a)
	if hb, _ := v.tb.Host(b); ha.Site != "" && ha.Site == hb.Site {
		v.fail(field, "%s and %s are both at site %s: their path is the site's LAN", a, b, ha.Site)
		return false
	}
	if j, dup := first[[2]string{a, b}]; dup {
		v.fail(field, "%s -> %s has a route already: routes[%d] (a route is one way: %s -> %s takes a route of its own)", a, b, j, b, a)
		return false
	}
	first[[2]string{a, b}] = i
	return true
}

// followed checks, on the graph, that a route's nodes follow each other
// along links, each once.
func (v *graphChecker) followed(field string, r Route) bool {
	nodes := v.tb.RouteNodes(r)
	err := v.g.CheckRoute(nodes)
	var re *routing.RouteError
	if !errors.As(err, &re) {
		return err == nil
	}
	// at is the field of nodes[i]: a site is the router's next to it.
	at := func(i int) string {
		switch {
		case i <= 0:
			return field + ".from"
		case i >= len(nodes)-1 || i == len(nodes)-2 && v.g.Nodes[nodes[i]].Kind == routing.Site:
			return field + ".to"
		}
		j := slices.Index(r.Via, v.g.Nodes[nodes[i]].Name)
		if errors.Is(re.Err, routing.ErrLoop) {
			j += 1 + slices.Index(r.Via[j+1:], r.Via[j])
		}
		return fmt.Sprintf("%s.via[%d]", field, max(j, 0))
	}
	name := func(i int) string { return v.g.Nodes[nodes[i]].Name }
	switch {
	case errors.Is(re.Err, routing.ErrLoop):
		v.fail(at(re.At), "%s appears twice: a route crosses a router once", name(re.At))
	case errors.Is(re.Err, routing.ErrNotLinked) && re.At > 0 && re.At < len(nodes):
		prev := name(re.At - 1)
		v.fail(at(re.At), "no link joins %s and %s (%s joins: %s)", prev, name(re.At), prev, v.joinList(prev))
	default:
		v.fail(at(re.At), "%v", err)
	}
	return false
}

// joinList is what a node joins, for a message.
func (v *graphChecker) joinList(name string) string {
	if len(v.joins[name]) == 0 {
		return "nothing"
	}
	return strings.Join(v.joins[name], ", ")
}

// names lists the names of the nodes of a kind, in file order, for a
// message.
func (v *graphChecker) names(kind string) string {
	var out []string
	if kind == "host" {
		for _, h := range v.tb.Hosts {
			out = append(out, h.Name)
		}
	} else {
		for _, r := range v.tb.Routers {
			out = append(out, r.Name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
