package scenario

import "github.com/wanlab/wanlab/internal/routing"

// Graph is the test-bed's graph of nodes and link directions, which every
// pair of hosts that neither a link nor a site's LAN joins is routed
// over (routing.Graph.From, with the metric of Routing): validation and
// the topology both route on it, so they cannot disagree.
//
// Its Nodes are, in this order (the order ties are broken in): the
// routers in file order, the hosts, the sites (named "site x") and, if a
// site joins no router, the core (named "core"): host i of Hosts is node
// len(Routers)+i, and GraphNode finds a host or router by name.
// Its Edges are the directions, numbered as the topology numbers them:
// links[i] gives Dir 2i (A->B) and 2i+1 (B->A), sites[s] gives
// 2*len(Links)+2s (up, from the site to its router or the core) and the
// one after (down). A host and its site are joined by an edge each way
// with Dir -1. What names no node (in a test-bed that validation
// refuses) is left out.
func (tb *Testbed) Graph() routing.Graph {
	nodes := tb.graphNodes()
	g := routing.Graph{Nodes: make([]routing.Node, 0, nodes.count)}
	for _, r := range tb.Routers {
		g.Nodes = append(g.Nodes, routing.Node{Name: r.Name, Kind: routing.Router})
	}
	for _, h := range tb.Hosts {
		g.Nodes = append(g.Nodes, routing.Node{Name: h.Name, Kind: routing.Host})
	}
	for _, s := range tb.Sites {
		g.Nodes = append(g.Nodes, routing.Node{Name: "site " + s.Name, Kind: routing.Site})
	}
	if nodes.core >= 0 {
		g.Nodes = append(g.Nodes, routing.Node{Name: "core", Kind: routing.Core})
	}
	edge := func(from, to, dir int, d Direction) {
		g.Edges = append(g.Edges, routing.Edge{From: int32(from), To: int32(to), Dir: int32(dir), Delay: int64(d.Delay)})
	}
	for i, l := range tb.Links {
		a, b := nodes.of(l.A), nodes.of(l.B)
		if a >= 0 && b >= 0 && a != b {
			edge(a, b, 2*i, l.Forward)
			edge(b, a, 2*i+1, l.Reverse)
		}
	}
	for i, s := range tb.Sites {
		if at := nodes.siteJoins(s); at >= 0 {
			site, dir := nodes.site[s.Name], 2*len(tb.Links)+2*i
			edge(site, at, dir, s.Up)
			edge(at, site, dir+1, s.Down)
		}
	}
	for i, h := range tb.Hosts {
		if site, ok := nodes.site[h.Site]; ok {
			host := len(tb.Routers) + i
			edge(host, site, -1, Direction{})
			edge(site, host, -1, Direction{})
		}
	}
	return g
}

// GraphNode is the index in Graph().Nodes of the host or router of that
// name, -1 if there is none. It indexes the names on each call: for one
// look-up, not one per pair.
func (tb *Testbed) GraphNode(name string) int { return tb.graphNodes().of(name) }

// RouteNodes are the nodes of Graph() an explicit route crosses, ends and
// sites included ([bari, site bari, na, rm, mi, bo, site cnaf, cnaf]),
// for routing.Graph.Follow: from a host to the first router, a link
// between them if there is one, else the host's site if it joins that
// router (and the same at the other end). A name of no node is -1.
func (tb *Testbed) RouteNodes(r Route) []int {
	nodes := tb.graphNodes()
	return nodes.route(tb, r)
}

// graphNodes says where the test-bed's nodes are in its Graph.
type graphNodes struct {
	host, router, site map[string]int
	core, count        int
}

func (tb *Testbed) graphNodes() graphNodes {
	n := graphNodes{host: map[string]int{}, router: map[string]int{}, site: map[string]int{}, core: -1}
	for i, r := range tb.Routers {
		n.router[r.Name] = i
	}
	for i, h := range tb.Hosts {
		n.host[h.Name] = len(tb.Routers) + i
	}
	n.count = len(tb.Routers) + len(tb.Hosts)
	for i, s := range tb.Sites {
		n.site[s.Name] = n.count + i
		if s.Via == "" {
			n.core = n.count + len(tb.Sites)
		}
	}
	n.count += len(tb.Sites)
	if n.core >= 0 {
		n.count++
	}
	return n
}

// of is the node of a host or router, -1 if there is none: a host first
// (a router with a host's name is refused).
func (n graphNodes) of(name string) int {
	if i, ok := n.host[name]; ok {
		return i
	}
	if i, ok := n.router[name]; ok {
		return i
	}
	return -1
}

// siteJoins is the node a site's access link joins: its router or the
// core; -1 for a router that does not exist.
func (n graphNodes) siteJoins(s Site) int {
	if s.Via == "" {
		return n.core
	}
	if i, ok := n.router[s.Via]; ok {
		return i
	}
	return -1
}

// route is RouteNodes.
func (n graphNodes) route(tb *Testbed, r Route) []int {
	linked := map[[2]string]bool{}
	for _, l := range tb.Links {
		linked[pairKey(l.A, l.B)] = true
	}
	// siteTo is the site of host h if a route steps through it to or
	// from router, -1 if a link or nothing joins them.
	siteTo := func(h, router string) int {
		host, _ := tb.Host(h)
		s, ok := tb.Site(host.Site)
		if !ok || linked[pairKey(h, router)] || s.Via != router {
			return -1
		}
		return n.site[s.Name]
	}
	out := []int{n.of(r.From)}
	if len(r.Via) > 0 {
		if s := siteTo(r.From, r.Via[0]); s >= 0 {
			out = append(out, s)
		}
	}
	for _, name := range r.Via {
		i, ok := n.router[name]
		if !ok {
			i = -1
		}
		out = append(out, i)
	}
	if len(r.Via) > 0 {
		if s := siteTo(r.To, r.Via[len(r.Via)-1]); s >= 0 {
			out = append(out, s)
		}
	}
	return append(out, n.of(r.To))
}

// exit is a way out of a host for its routed packets: a link to a router,
// or its site's access link (to a router or the core).
type exit struct {
	to    string // the router or core it reaches
	node  int    // its node
	site  string // the site it leaves through ("site x"); "" for a link
	dir   int32  // the direction that leaves: the link's, or the site's up
	delay int64  // that direction's delay
}

// exits are the ways out of node src of g, in the order of g's edges.
func exits(g *routing.Graph, src int) []exit {
	var out []exit
	for _, e := range g.Edges {
		if int(e.From) != src {
			continue
		}
		switch to := g.Nodes[e.To]; to.Kind {
		case routing.Router:
			out = append(out, exit{to: to.Name, node: int(e.To), dir: e.Dir, delay: e.Delay})
		case routing.Site:
			for _, up := range g.Edges {
				if up.From == e.To && g.Nodes[up.To].Kind != routing.Host {
					out = append(out, exit{to: g.Nodes[up.To].Name, node: int(up.To), site: to.Name, dir: up.Dir, delay: up.Delay})
				}
			}
		}
	}
	return out
}
