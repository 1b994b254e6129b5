package routing

import (
	"cmp"
	"slices"
)

// Egress finds, for every node, the edges out of src that begin a best
// path to it under by (skip as for From), and returns them where there
// are two or more: there, the way out of src is decided by the tie-break
// (file order) rather than by cost, which a multihomed host's author may
// want to know. out[n] lists them in the order of g.Edges; it is nil where
// one edge begins every best path, or none reaches n.
func (g *Graph) Egress(src int, by Metric, skip []bool) [][]int32 {
	s := g.search(src, by, skip)
	out := make([][]int32, len(g.Nodes))
	if s.state == nil {
		return out
	}
	// Every best path to a node comes from nodes earlier in this order:
	// by key; within a key, src, then sites (after a host of theirs, at no
	// cost), then routers and the core, then hosts (after their site).
	var order []int
	for n := range g.Nodes {
		if s.state[n]&reached != 0 && n != src {
			order = append(order, n)
		}
	}
	step := func(n int) int {
		switch g.Nodes[n].Kind {
		case Site:
			return 0
		case Host:
			return 2
		}
		return 1
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(s.cost[a], s.cost[b]), cmp.Compare(s.dirs[a], s.dirs[b]),
			cmp.Compare(step(a), step(b)), cmp.Compare(a, b))
	})
	first := make([][]int32, len(g.Nodes))
	spread := func(u int) {
		for _, ei := range s.adj.of(u) {
			e := g.Edges[ei]
			v := int(e.To)
			if nc, nd, ok := s.along(u, e); !ok || nc != s.cost[v] || nd != s.dirs[v] {
				continue
			}
			if u == src {
				first[v] = union(first[v], []int32{ei})
			} else {
				first[v] = union(first[v], first[u])
			}
		}
	}
	spread(src)
	for _, u := range order {
		spread(u)
	}
	for n, f := range first {
		if len(f) > 1 {
			out[n] = f
		}
	}
	return out
}

// union merges two sorted sets, into a new slice unless one is empty: it
// never writes to either, which other nodes may share.
func union(a, b []int32) []int32 {
	switch {
	case len(a) == 0:
		return b
	case len(b) == 0:
		return a
	}
	out := make([]int32, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case len(a) == 0 || b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return out
}
