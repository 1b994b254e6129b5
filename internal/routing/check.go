package routing

import "fmt"

// RouteError says which node of a route is wrong and why: Err is
// ErrNotLinked, ErrLoop or ErrTransit.
type RouteError struct {
	At   int    // index in the nodes given
	Node string // its name ("" if it is no node of the graph)
	Err  error
}

func (e *RouteError) Error() string {
	if e.Node == "" {
		return fmt.Sprintf("route node %d: %v", e.At, e.Err)
	}
	return fmt.Sprintf("route node %d (%s): %v", e.At, e.Node, e.Err)
}

func (e *RouteError) Unwrap() error { return e.Err }

// CheckRoute checks a route given as its nodes in order, ends included,
// with the sites it crosses (a host at a site leaves through it): every
// node joined to the one before it by an edge (ErrNotLinked), no node twice
// (ErrLoop), and the rules of the package comment (ErrTransit): no host
// inside the route, and a site only second, after one of its hosts, or
// last but one, before one of its hosts. A route of fewer than two nodes
// joins nothing (ErrNotLinked). The error is a *RouteError naming the
// first node found wrong.
func (g *Graph) CheckRoute(nodes []int) error {
	_, err := g.route(nodes, Delay, false)
	return err
}

// Follow checks a route as CheckRoute does and returns its edges in order,
// as Path does. Of two links between the same nodes it takes the one of
// least cost under by, then the lower Dir.
func (g *Graph) Follow(nodes []int, by Metric) ([]int32, error) {
	return g.route(nodes, by, true)
}

func (g *Graph) route(nodes []int, by Metric, edges bool) ([]int32, error) {
	fail := func(i int, err error) error {
		e := &RouteError{At: i, Err: err}
		if i < len(nodes) && nodes[i] >= 0 && nodes[i] < len(g.Nodes) {
			e.Node = g.Nodes[nodes[i]].Name
		}
		return e
	}
	if len(nodes) < 2 {
		return nil, fail(len(nodes), ErrNotLinked)
	}
	// pos is where each node first comes; loop, where one first comes again.
	pos := make(map[int]int, len(nodes))
	loop := len(nodes)
	for i, n := range nodes {
		if n < 0 || n >= len(g.Nodes) {
			return nil, fail(i, fmt.Errorf("%w: no node %d in a graph of %d", ErrNotLinked, n, len(g.Nodes)))
		}
		if _, ok := pos[n]; ok {
			loop = i
			break
		}
		pos[n] = i
	}
	// step[i] is the best edge from nodes[i-1] to nodes[i], in one pass.
	step := make([]int32, len(nodes))
	for i := range step {
		step[i] = -1
	}
	for ei, e := range g.Edges {
		i, ok := pos[int(e.To)]
		if !ok || i == 0 || i >= loop || int(e.From) != nodes[i-1] {
			continue
		}
		if best := step[i]; best >= 0 {
			c, _ := e.cost(by)
			bc, _ := g.Edges[best].cost(by)
			if c > bc || c == bc && e.Dir >= g.Edges[best].Dir {
				continue
			}
		}
		step[i] = int32(ei)
	}
	for i := 1; i < len(nodes); i++ {
		switch {
		case i == loop:
			return nil, fail(i, ErrLoop)
		case step[i] < 0:
			return nil, fail(i, ErrNotLinked)
		case i < len(nodes)-1 && !g.crosses(nodes, i):
			return nil, fail(i, ErrTransit)
		}
	}
	if !edges {
		return nil, nil
	}
	return step[1:], nil
}

// crosses reports whether a route may cross its node i, neither end: a
// router or the core always, a site only next to one of its hosts at an
// end, a host never.
func (g *Graph) crosses(nodes []int, i int) bool {
	switch g.Nodes[nodes[i]].Kind {
	case Router, Core:
		return true
	case Site:
		first, last := nodes[0], nodes[len(nodes)-1]
		return i == 1 && g.Nodes[first].Kind == Host || i == len(nodes)-2 && g.Nodes[last].Kind == Host
	}
	return false
}
