package routing

import "math"

// From finds the best path from node src to every node by Dijkstra's
// algorithm and returns the predecessors: pred[n] is the index in g.Edges
// of the edge that enters n on the best path, -1 for src and for the nodes
// it does not reach. skip, indexed by direction (Edge.Dir), removes the
// directions that are down; it may be shorter than the directions or nil.
//
// A path's key is (cost under by, number of directions); of the edges that
// enter a node on a best path, the one from the node that comes first in
// g.Nodes wins, then the lower Dir. The rules of the package comment hold:
// no path leaves a host other than src, and a site is left towards a
// non-host only if src is one of its hosts (joined to it by an edge).
func (g *Graph) From(src int, by Metric, skip []bool) []int32 {
	return g.search(src, by, skip).pred
}

// search is Dijkstra's algorithm from one node, and what it leaves.
type search struct {
	g     *Graph
	src   int
	by    Metric
	skip  []bool
	adj   adjacency
	pred  []int32
	cost  []int64
	dirs  []int32
	state []uint8
}

// The bits of search.state.
const (
	reached = 1 << iota
	done
	own // a site of src, which is a host
)

func (g *Graph) search(src int, by Metric, skip []bool) *search {
	n := len(g.Nodes)
	s := &search{g: g, src: src, by: by, skip: skip, pred: make([]int32, n)}
	for i := range s.pred {
		s.pred[i] = -1
	}
	if src < 0 || src >= n {
		return s
	}
	s.adj = g.out()
	s.cost, s.dirs, s.state = make([]int64, n), make([]int32, n), make([]uint8, n)
	for _, e := range s.adj.of(src) {
		if to := g.Edges[e].To; g.Nodes[src].Kind == Host && g.Nodes[to].Kind == Site {
			s.state[to] |= own
		}
	}
	s.state[src] |= reached
	h := make(heap, 1, n)
	h[0] = item{node: int32(src)}
	for len(h) > 0 {
		u := int(h.pop().node)
		if s.state[u]&done != 0 {
			continue
		}
		s.state[u] |= done
		for _, ei := range s.adj.of(u) {
			e := g.Edges[ei]
			v := int(e.To)
			nc, nd, ok := s.along(u, e)
			switch {
			case !ok:
			case s.state[v]&reached == 0 || nc < s.cost[v] || nc == s.cost[v] && nd < s.dirs[v]:
				s.state[v] |= reached
				s.cost[v], s.dirs[v], s.pred[v] = nc, nd, ei
				h.push(item{nc, nd, int32(v)})
			case nc == s.cost[v] && nd == s.dirs[v] && g.before(e, g.Edges[s.pred[v]]):
				s.pred[v] = ei // the key is the same: nothing after v changes
			}
		}
	}
	return s
}

// along reports whether a path from src may go from u, which it reaches,
// along edge e, and the key it then has at e.To. Hosts never forward, a
// site forwards only its own hosts' packets (else it leads only to a
// host), no path comes back to src, and no path crosses a direction down.
func (s *search) along(u int, e Edge) (int64, int32, bool) {
	v := int(e.To)
	if v == s.src || e.Dir >= 0 && int(e.Dir) < len(s.skip) && s.skip[e.Dir] {
		return 0, 0, false
	}
	if u != s.src {
		switch s.g.Nodes[u].Kind {
		case Host:
			return 0, 0, false
		case Site:
			if s.state[u]&own == 0 && s.g.Nodes[v].Kind != Host {
				return 0, 0, false
			}
		}
	}
	c, d := e.cost(s.by)
	nc, nd := s.cost[u]+c, s.dirs[u]+d
	if nc < s.cost[u] {
		nc = math.MaxInt64
	}
	return nc, nd, true
}

// before reports whether edge e wins a tie against edge f into the same
// node: its tail comes first in g.Nodes, or it is the same node and e's
// direction index is lower.
func (g *Graph) before(e, f Edge) bool {
	if e.From != f.From {
		return e.From < f.From
	}
	return e.Dir < f.Dir
}

// Path returns the edges of the path to dst recorded in pred (From's
// result), in order: their Dirs are the directions (-1 for the step
// between a host and its site) and the nodes are the first edge's From
// then every edge's To. It is nil if dst is the source, is not reached, or
// pred does not belong to g.
func (g *Graph) Path(pred []int32, dst int) []int32 {
	if dst < 0 || dst >= len(pred) || pred[dst] < 0 {
		return nil
	}
	steps := 0
	for v := dst; pred[v] >= 0; steps++ {
		e := int(pred[v])
		if steps >= len(pred) || e >= len(g.Edges) || int(g.Edges[e].To) != v || !g.valid(g.Edges[e]) ||
			int(g.Edges[e].From) >= len(pred) {
			return nil // not a tree of g
		}
		v = int(g.Edges[e].From)
	}
	path := make([]int32, steps)
	for v := dst; steps > 0; v = int(g.Edges[path[steps]].From) {
		steps--
		path[steps] = pred[v]
	}
	return path
}

// adjacency lists the out-edges of every node: those of node n are
// edges[start[n]:start[n+1]], indices into Graph.Edges.
type adjacency struct {
	start []int32
	edges []int32
}

func (a adjacency) of(n int) []int32 { return a.edges[a.start[n]:a.start[n+1]] }

// out builds the adjacency of g's edges that join two of its nodes.
func (g *Graph) out() adjacency {
	a := adjacency{start: make([]int32, len(g.Nodes)+1)}
	valid := 0
	for _, e := range g.Edges {
		if g.valid(e) {
			a.start[e.From+1]++
			valid++
		}
	}
	for i := 1; i < len(a.start); i++ {
		a.start[i] += a.start[i-1]
	}
	a.edges = make([]int32, valid)
	next := make([]int32, len(g.Nodes))
	copy(next, a.start)
	for i, e := range g.Edges {
		if g.valid(e) {
			a.edges[next[e.From]] = int32(i)
			next[e.From]++
		}
	}
	return a
}

// item is a node in the queue with its key when queued.
type item struct {
	cost int64
	dirs int32
	node int32
}

func (a item) less(b item) bool {
	if a.cost != b.cost {
		return a.cost < b.cost
	}
	if a.dirs != b.dirs {
		return a.dirs < b.dirs
	}
	return a.node < b.node
}

// heap is a binary min-heap of items; stale items are skipped on pop.
type heap []item

func (h *heap) push(it item) {
	*h = append(*h, it)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *heap) pop() item {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(s) && s[l].less(s[m]) {
			m = l
		}
		if r := l + 1; r < len(s) && s[r].less(s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
