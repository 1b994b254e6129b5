package topology

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/routing"
	"github.com/wanlab/wanlab/internal/scenario"
)

// PathChange gives the ordered pair of hosts From -> To (indexes into
// Topology.Hosts) a new path: Dirs, indexes into Topology.Dirs in crossing
// order, as the engine's path changes take them.
type PathChange struct {
	From int   `json:"from"`
	To   int   `json:"to"`
	Dirs []int `json:"dirs"`
}

// routes is what New keeps to route pairs again: the test-bed's graph and
// the pairs routed on it, with the directions each crosses now.
type routes struct {
	g       routing.Graph
	metric  routing.Metric
	first   int           // the graph's node of host 0 (hosts follow the routers)
	reroute time.Duration // scenario.Testbed.Reroute
	edgeOf  []int32       // the graph's edge of each direction, -1 for none

	mu     sync.Mutex
	routed [][]int          // per source host, the hosts it reaches by a routed path
	cur    map[[2]int][]int // the directions each routed pair crosses now
}

// pairPath is the path of one ordered pair of hosts as New finds it.
type pairPath struct {
	dirs  []int
	nodes []string
	route string
}

func newRoutes(tb *scenario.Testbed) (*routes, error) {
	metric, err := routing.ParseMetric(tb.Routing)
	if err != nil {
		return nil, fmt.Errorf("test-bed %q: routing: %w", tb.Name, err)
	}
	r := &routes{g: tb.Graph(), metric: metric, first: len(tb.Routers), reroute: tb.Reroute,
		routed: make([][]int, len(tb.Hosts)), cur: map[[2]int][]int{}}
	r.edgeOf = make([]int32, 2*len(tb.Links)+2*len(tb.Sites))
	for i := range r.edgeOf {
		r.edgeOf[i] = -1
	}
	for i, e := range r.g.Edges {
		if e.Dir >= 0 && int(e.Dir) < len(r.edgeOf) {
			r.edgeOf[e.Dir] = int32(i)
		}
	}
	return r, nil
}

// pairs finds the path of every ordered pair of hosts, in host order: the
// link between them, else their site's LAN (a direction of its own for
// each pair, unless the LAN changes nothing), else their explicit route,
// else the best path on the graph. The pairs with none are Unreachable.
func (t *Topology) pairs(tb *scenario.Testbed) (map[[2]int]pairPath, error) {
	r := t.routes
	host := map[string]int{}
	for i, h := range tb.Hosts {
		host[h.Name] = i
	}
	out := map[[2]int]pairPath{}
	for i, l := range tb.Links {
		a, aok := host[l.A]
		b, bok := host[l.B]
		if aok && bok {
			out[[2]int{a, b}] = pairPath{dirs: []int{2 * i}, nodes: []string{l.A, l.B}, route: RouteLink}
			out[[2]int{b, a}] = pairPath{dirs: []int{2*i + 1}, nodes: []string{l.B, l.A}, route: RouteLink}
		}
	}
	explicit := map[[2]int]scenario.Route{}
	for _, rt := range tb.Routes {
		from, fok := host[rt.From]
		to, tok := host[rt.To]
		if fok && tok {
			explicit[[2]int{from, to}] = rt
		}
	}
	lans := map[string]scenario.Direction{}
	for _, s := range tb.Sites {
		lans[s.Name] = s.LAN
	}
	for i, a := range tb.Hosts {
		var pred []int32 // the best paths from a, found once it has a pair to route
		for j, b := range tb.Hosts {
			pair := [2]int{i, j}
			if _, linked := out[pair]; linked || i == j {
				continue
			}
			if rt, ok := explicit[pair]; ok && (a.Site == "" || a.Site != b.Site) {
				edges, err := r.g.Follow(tb.RouteNodes(rt), r.metric)
				if err != nil {
					return nil, fmt.Errorf("test-bed %q: the route from %s to %s: %w", tb.Name, a.Name, b.Name, err)
				}
				out[pair] = r.pathOf(edges, RouteExplicit, t.Routing)
				continue
			}
			switch {
			case a.Site != "" && a.Site == b.Site && isTransparent(lans[a.Site]):
				out[pair] = pairPath{nodes: []string{a.Name, "site " + a.Site, b.Name}, route: RouteLAN} // a perfect switch: forwarded at once
			case a.Site != "" && a.Site == b.Site:
				d := t.addDir(fmt.Sprintf("site %s lan %s->%s", a.Site, a.Name, b.Name), a.Name, b.Name, lans[a.Site])
				out[pair] = pairPath{dirs: []int{d}, nodes: []string{a.Name, "site " + a.Site, b.Name}, route: RouteLAN}
			default:
				if pred == nil {
					pred = r.g.From(r.first+i, r.metric, nil)
				}
				edges := r.g.Path(pred, r.first+j)
				if edges == nil {
					t.Unreachable = append(t.Unreachable, Unreachable{From: a.Name, To: b.Name})
					continue
				}
				p := r.pathOf(edges, "", t.Routing)
				if n := len(p.dirs); n > scenario.MaxPathDirs {
					return nil, fmt.Errorf("test-bed %q: the path from %s to %s crosses %d directions: at most %d (a packet's TTL must last it)", tb.Name, a.Name, b.Name, n, scenario.MaxPathDirs)
				}
				out[pair] = p
				r.routed[i] = append(r.routed[i], j)
				r.cur[pair] = p.dirs
			}
		}
	}
	return out, nil
}

// pathOf turns edges of the graph into a path: its directions, its nodes
// (the core left out) and how it was chosen: route if given, else
// RouteSites through no router, else the test-bed's routing.
func (r *routes) pathOf(edges []int32, route, routed string) pairPath {
	p := pairPath{route: route, dirs: []int{}}
	if len(edges) > 0 {
		p.nodes = []string{r.g.Nodes[r.g.Edges[edges[0]].From].Name}
	}
	router := false
	for _, ei := range edges {
		e := r.g.Edges[ei]
		if e.Dir >= 0 {
			p.dirs = append(p.dirs, int(e.Dir))
		}
		switch n := r.g.Nodes[e.To]; n.Kind {
		case routing.Core:
			continue
		case routing.Router:
			router = true
		}
		p.nodes = append(p.nodes, r.g.Nodes[e.To].Name)
	}
	if p.route == "" {
		p.route = RouteSites
		if router {
			p.route = routed
		}
	}
	return p
}

// paths resolves every reachable ordered pair into a Path.
func (t *Topology) paths(pairs map[[2]int]pairPath) []Path {
	if len(pairs) == 0 {
		return nil // as before routers: "paths": null
	}
	mtu := make(map[[2]int]int, len(pairs)) // the MTU of each pair's host route
	for i, a := range t.Hosts {
		for _, r := range a.Routes {
			mtu[[2]int{i, t.lookup(false).host[r.Peer]}] = r.MTU
		}
	}
	out := make([]Path, 0, len(pairs))
	for i, a := range t.Hosts {
		for j, b := range t.Hosts {
			there, ok := pairs[[2]int{i, j}]
			if !ok {
				continue
			}
			p := Path{From: a.Name, To: b.Name, Nodes: there.nodes, Route: there.route, MTU: mtu[[2]int{i, j}]}
			t.setPath(&p, there.dirs, pairs[[2]int{j, i}].dirs)
			out = append(out, p)
		}
	}
	return out
}

// setPath fills in what a path's directions there and back make of it:
// Via and Back, the bottleneck, the base RTT and the loss.
func (t *Topology) setPath(p *Path, there, back []int) {
	p.Via, p.Back, p.Bottleneck, p.BottleneckDir = make([]string, 0, len(there)), make([]string, 0, len(back)), 0, ""
	var rtt time.Duration
	keep := 1.0
	for _, d := range there {
		c := t.Dirs[d].Config
		p.Via = append(p.Via, t.Dirs[d].Name)
		rtt += c.Delay
		keep *= 1 - c.Loss.Mean()
		if c.Rate > 0 && (p.Bottleneck == 0 || float64(c.Rate) < p.Bottleneck) {
			p.Bottleneck, p.BottleneckDir = float64(c.Rate), t.Dirs[d].Name
		}
	}
	for _, d := range back {
		rtt += t.Dirs[d].Config.Delay
		p.Back = append(p.Back, t.Dirs[d].Name)
	}
	p.BaseRTTms = float64(rtt) / float64(time.Millisecond)
	p.Loss = 1 - keep
}

// listPaths lists on every direction the paths that cross it, in path order.
func (t *Topology) listPaths() {
	x := newIndex(t)
	for i := range t.Dirs {
		t.Dirs[i].Paths = []string{}
	}
	for _, p := range t.Paths {
		path := p.Name()
		for _, name := range p.Via {
			if d, ok := x.dir[name]; ok {
				t.Dirs[d].Paths = append(t.Dirs[d].Paths, path)
			}
		}
	}
}

// Reroute routes the pairs of hosts that the test-bed's routing routes
// (not those of a link, a site LAN or an explicit route) again with the
// directions down (indexed like Dirs; shorter or nil is all up) left out,
// and returns the pairs whose path changes: from the paths they take now,
// which Reroute and ApplyPaths change. A pair that no path joins any more
// keeps its path. The Paths and Dirs take the new paths. It does nothing
// on a Topology that New did not make. Reroute and ApplyPaths change t:
// they must not run while t is read.
func (t *Topology) Reroute(down []bool) []PathChange {
	r := t.routes
	if r == nil {
		return nil
	}
	r.mu.Lock()
	changes := r.next(down)
	r.mu.Unlock()
	t.showPaths(changes)
	return changes
}

// next is Reroute on the routed pairs alone.
func (r *routes) next(down []bool) []PathChange {
	var out []PathChange
	for src, dsts := range r.routed {
		if len(dsts) == 0 {
			continue
		}
		pred := r.g.From(r.first+src, r.metric, down)
		for _, dst := range dsts {
			edges := r.g.Path(pred, r.first+dst)
			if edges == nil {
				continue // no way round: the pair keeps its path
			}
			dirs := r.pathOf(edges, RouteSites, "").dirs
			pair := [2]int{src, dst}
			if len(dirs) > scenario.MaxPathDirs || slices.Equal(dirs, r.cur[pair]) {
				continue
			}
			r.cur[pair] = dirs
			out = append(out, PathChange{From: src, To: dst, Dirs: dirs})
		}
	}
	return out
}

// ApplyPaths gives pairs of hosts the paths of changes (from Reroute, or
// from ResolvePaths once the engine has applied them), in Paths, Dirs and
// what Reroute routes from. A change must be of a pair that has a path.
func (t *Topology) ApplyPaths(changes []PathChange) error {
	for _, c := range changes {
		if c.From < 0 || c.From >= len(t.Hosts) || c.To < 0 || c.To >= len(t.Hosts) {
			return fmt.Errorf("path change %d -> %d: no such pair of hosts", c.From, c.To)
		}
		if _, ok := t.Path(t.Hosts[c.From].Name, t.Hosts[c.To].Name); !ok {
			return fmt.Errorf("path change %s -> %s: the pair has no path", t.Hosts[c.From].Name, t.Hosts[c.To].Name)
		}
		for _, d := range c.Dirs {
			if d < 0 || d >= len(t.Dirs) {
				return fmt.Errorf("path change %s -> %s: no direction %d", t.Hosts[c.From].Name, t.Hosts[c.To].Name, d)
			}
		}
	}
	if r := t.routes; r != nil {
		r.mu.Lock()
		for _, c := range changes {
			if pair := [2]int{c.From, c.To}; r.cur[pair] != nil {
				r.cur[pair] = slices.Clone(c.Dirs)
			}
		}
		r.mu.Unlock()
	}
	t.showPaths(changes)
	return nil
}

// showPaths makes Paths and Dirs say the paths of changes: each changed
// path and the way back of its reverse.
func (t *Topology) showPaths(changes []PathChange) {
	if len(changes) == 0 {
		return
	}
	x := newIndex(t)
	dirsOf := func(names []string) []int {
		out := make([]int, 0, len(names))
		for _, n := range names {
			out = append(out, x.dir[n])
		}
		return out
	}
	for _, c := range changes {
		a, b := t.Hosts[c.From].Name, t.Hosts[c.To].Name
		k, ok := x.path[[2]string{a, b}]
		if !ok {
			continue
		}
		p := &t.Paths[k]
		back, hasBack := x.path[[2]string{b, a}]
		var backDirs []int
		if hasBack {
			backDirs = dirsOf(t.Paths[back].Via)
		}
		p.Nodes = t.nodesOf(a, b, c.Dirs)
		if len(c.Dirs) > 0 {
			p.MTU = pathMTU(t.Dirs, c.Dirs)
		}
		t.setPath(p, c.Dirs, backDirs)
		if hasBack {
			rp := &t.Paths[back]
			t.setPath(rp, backDirs, c.Dirs)
		}
	}
	t.listPaths()
}

// nodesOf are the nodes a path from host a to host b through dirs crosses,
// ends included and the core left out.
func (t *Topology) nodesOf(a, b string, dirs []int) []string {
	nodes := []string{a}
	add := func(n string) {
		if n != nodes[len(nodes)-1] {
			nodes = append(nodes, n)
		}
	}
	for _, d := range dirs {
		for _, end := range []string{t.Dirs[d].From, t.Dirs[d].To} {
			if !t.routes.isCore(t, d, end) {
				add(end)
			}
		}
	}
	add(b)
	return nodes
}

// isCore reports whether end of t's direction d is the perfect core; r
// may be nil (t was not made by New).
func (r *routes) isCore(t *Topology, d int, end string) bool {
	if r != nil && d < len(r.edgeOf) && r.edgeOf[d] >= 0 {
		e := r.g.Edges[r.edgeOf[d]]
		return end == "core" && (r.g.Nodes[e.From].Kind == routing.Core || r.g.Nodes[e.To].Kind == routing.Core)
	}
	return end == "core" && !slices.ContainsFunc(t.Routers, func(r Router) bool { return r.Name == end })
}

// Joined are the groups of directions a reroute may move a pair's path
// onto, for the engine to run each group on one thread (linkemu's
// Config.Joined): for each component of the routers and the core, the
// directions into and out of it, in direction order. It is nil for a
// test-bed without routers, one that never reroutes, or a Topology New
// did not make.
func (t *Topology) Joined() [][]int {
	r := t.routes
	if r == nil || r.reroute < 0 || len(t.Routers) == 0 {
		return nil
	}
	comp := r.g.Reach()
	groups := map[int32][]int{}
	var order []int32
	for _, e := range r.g.Edges {
		if e.Dir < 0 {
			continue
		}
		for _, n := range []int32{e.From, e.To} {
			if k := r.g.Nodes[n].Kind; k == routing.Router || k == routing.Core {
				c := comp[n]
				if _, ok := groups[c]; !ok {
					order = append(order, c)
				}
				groups[c] = append(groups[c], int(e.Dir))
				break
			}
		}
	}
	slices.Sort(order)
	var out [][]int
	for _, c := range order {
		g := groups[c]
		slices.Sort(g)
		if g = slices.Compact(g); len(g) > 1 {
			out = append(out, g)
		}
	}
	return out
}
