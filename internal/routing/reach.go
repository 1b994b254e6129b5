package routing

import (
	"cmp"
	"slices"
)

// Reach returns a component number for every node: routers and the core
// joined by edges share one; a site has that of the router or core it
// attaches to, and a host that of the routers it links to or its site
// attaches to (the lowest, if several); a host or site attached to no
// router or core has a number of its own. Hosts and sites never join two
// components, since they forward nobody else's packets.
//
// Two hosts with the same number reach each other. A host linked into two
// components has one number only, so use Reachability to ask about a pair.
// Reach, like Reachability, counts on every edge having one back, which
// Check ensures.
func (g *Graph) Reach() []int32 {
	r := g.Reachability()
	comp := make([]int32, len(g.Nodes))
	next := r.comps
	for n := range comp {
		comp[n] = -1
		for _, x := range r.hold.of(n) {
			if att := r.att.of(int(x)); len(att) > 0 && (comp[n] < 0 || att[0] < comp[n]) {
				comp[n] = att[0]
			}
		}
		if comp[n] < 0 {
			comp[n] = next
			next++
		}
	}
	return comp
}

// Reachability answers which nodes reach which, without a search per
// pair: build it once per graph.
type Reachability struct {
	kinds []NodeKind
	nb    adjacency // sorted neighbours of every node (node indices)
	att   adjacency // sorted components of every node's forwarding neighbours (its own if it forwards)
	hold  adjacency // the nodes whose att a node enters and leaves by: itself, and a host's sites
	comps int32     // number of components of forwarding nodes
}

// Reachability computes the components of g's forwarding nodes and what
// every node attaches to.
func (g *Graph) Reachability() *Reachability {
	n := len(g.Nodes)
	r := &Reachability{kinds: make([]NodeKind, n)}
	parent := make([]int32, n)
	for i, node := range g.Nodes {
		r.kinds[i] = node.Kind
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	var pairs [][2]int32
	for _, e := range g.Edges {
		if !g.valid(e) {
			continue
		}
		pairs = append(pairs, [2]int32{e.From, e.To}, [2]int32{e.To, e.From})
		if r.kinds[e.From].forwards() && r.kinds[e.To].forwards() {
			parent[find(e.From)] = find(e.To)
		}
	}
	r.nb = group(n, pairs)
	comp := make([]int32, n)
	number := make([]int32, n)
	for i := range number {
		number[i] = -1
	}
	for i := range comp {
		if !r.kinds[i].forwards() {
			continue
		}
		root := find(int32(i))
		if number[root] < 0 {
			number[root] = r.comps
			r.comps++
		}
		comp[i] = number[root]
	}
	// A node attaches to its own component if it forwards, else to those
	// of its forwarding neighbours. (A host also enters and leaves by its
	// sites' attachments: Reaches looks there rather than copying them to
	// every host of a site.)
	var att [][2]int32
	for i := range n {
		if r.kinds[i].forwards() {
			att = append(att, [2]int32{int32(i), comp[i]})
			continue
		}
		for _, m := range r.nb.of(i) {
			if r.kinds[m].forwards() {
				att = append(att, [2]int32{int32(i), comp[m]})
			}
		}
	}
	r.att = group(n, att)
	var hold [][2]int32
	for i := range n {
		hold = append(hold, [2]int32{int32(i), int32(i)})
		for _, m := range r.nb.of(i) {
			if r.kinds[i] == Host && r.kinds[m] == Site {
				hold = append(hold, [2]int32{int32(i), m})
			}
		}
	}
	r.hold = group(n, hold)
	return r
}

// Reaches reports whether From(a) finds a path to b: a and b are the same
// node or neighbours, b is a neighbour of a site of host a, or both attach
// to one component (a host by its routers or its sites').
func (r *Reachability) Reaches(a, b int) bool {
	n := len(r.kinds)
	if a < 0 || a >= n || b < 0 || b >= n {
		return false
	}
	if a == b {
		return true
	}
	if _, ok := slices.BinarySearch(r.nb.of(a), int32(b)); ok {
		return true
	}
	if r.kinds[a] == Host {
		for _, s := range r.nb.of(a) {
			if r.kinds[s] != Site {
				continue
			}
			if _, ok := slices.BinarySearch(r.nb.of(int(s)), int32(b)); ok {
				return true
			}
		}
	}
	for _, x := range r.hold.of(a) {
		for _, y := range r.hold.of(b) {
			if meet(r.att.of(int(x)), r.att.of(int(y))) {
				return true
			}
		}
	}
	return false
}

// meet reports whether two sorted sets share a member.
func meet(x, y []int32) bool {
	for len(x) > 0 && len(y) > 0 {
		switch {
		case x[0] == y[0]:
			return true
		case x[0] < y[0]:
			x = x[1:]
		default:
			y = y[1:]
		}
	}
	return false
}

// group turns (node, value) pairs into an adjacency of sorted, distinct
// values per node.
func group(n int, pairs [][2]int32) adjacency {
	slices.SortFunc(pairs, func(p, q [2]int32) int {
		if c := cmp.Compare(p[0], q[0]); c != 0 {
			return c
		}
		return cmp.Compare(p[1], q[1])
	})
	pairs = slices.Compact(pairs)
	a := adjacency{start: make([]int32, n+1), edges: make([]int32, len(pairs))}
	for i, p := range pairs {
		a.start[p[0]+1]++
		a.edges[i] = p[1]
	}
	for i := 1; i <= n; i++ {
		a.start[i] += a.start[i-1]
	}
	return a
}
