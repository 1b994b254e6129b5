// Package routing finds the paths of a test-bed's hosts through a graph of
// hosts, routers, sites and the perfect core, one edge per link direction.
//
// It is pure: a Graph in, predecessors, paths and components out. The
// scenario builds the Graph once (validation and the topology use the same
// one, so they cannot disagree) and the topology turns paths into the
// directions the engine forwards along.
//
// The rules of a path, which keep the scenarios of before routers
// meaning what they meant:
//   - Hosts never forward: a path leaves a host only if the host is its
//     source, so no path crosses a third host.
//   - Sites are leaves: a site's node is crossed only by its own hosts'
//     packets. A path may leave a site towards a router or the core only if
//     its source is a host of that site (joined to it by an edge); it may
//     always leave a site towards a host, which is then its end.
//   - Routers and the core forward.
//
// Cost is a Metric: the sum of the edges' one-way delays (Delay) or the
// number of directions (Hops). Ties go first to fewer directions, then to
// the predecessor that comes first in Graph.Nodes, then to the lower
// direction index: lay Nodes out in file order (routers, then hosts, then
// sites, then the core) and the result does not depend on the order of
// Graph.Edges.
package routing

import (
	"errors"
	"fmt"
	"time"
)

// NodeKind says what a node is, and so whether it forwards.
type NodeKind uint8

// The kinds of node.
const (
	Host   NodeKind = iota // an end: forwards nothing
	Router                 // forwards
	Site                   // a leaf: forwards only its own hosts' packets
	Core                   // the perfect core that sites without a router meet at: forwards
)

func (k NodeKind) String() string {
	switch k {
	case Host:
		return "host"
	case Router:
		return "router"
	case Site:
		return "site"
	case Core:
		return "core"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// forwards reports whether a node of kind k carries packets between others.
func (k NodeKind) forwards() bool { return k == Router || k == Core }

// Node is a host, router, site or the core.
type Node struct {
	Name string
	Kind NodeKind
}

// Edge is one direction of a link, from node From to node To (indices into
// Graph.Nodes). Dir is the direction's index, unique in a graph, which
// paths are made of and skip is indexed by. Delay is its one-way
// propagation delay in nanoseconds.
//
// An edge with Dir -1 joins a host and its site (one each way): it is no
// direction, costs nothing and counts as no direction under either metric.
type Edge struct {
	From, To int32
	Dir      int32
	Delay    int64
}

// member reports whether e joins a host and its site rather than being a
// direction.
func (e Edge) member() bool { return e.Dir < 0 }

// Graph is the directed graph of a test-bed's nodes and link directions.
type Graph struct {
	Nodes []Node
	Edges []Edge
}

// Metric is what a path's cost counts.
type Metric uint8

// The metrics of `routing:`.
const (
	Delay Metric = iota // the sum of one-way propagation delays
	Hops                // the number of directions
)

func (m Metric) String() string {
	switch m {
	case Delay:
		return "delay"
	case Hops:
		return "hops"
	}
	return fmt.Sprintf("metric(%d)", uint8(m))
}

// ParseMetric reads the value of `routing:`; empty means Delay.
func ParseMetric(s string) (Metric, error) {
	switch s {
	case "", "delay":
		return Delay, nil
	case "hops":
		return Hops, nil
	}
	return 0, fmt.Errorf("routing %q: want delay or hops", s)
}

// Bounds on what a graph may hold, so that no file makes a reader allocate
// past them. They are above what one machine's test-bed holds (512 hosts,
// 1024 routers, 16384 directions).
const (
	MaxNodes = 4096
	MaxEdges = 65536
	MaxDelay = int64(time.Hour) // per edge; a path's sum cannot overflow
)

// Errors of a graph and of a route, matched with errors.Is.
var (
	ErrTooLarge  = errors.New("graph too large")
	ErrInvalid   = errors.New("invalid graph")
	ErrNotLinked = errors.New("no link joins consecutive nodes")
	ErrLoop      = errors.New("node appears twice")
	ErrTransit   = errors.New("node does not forward")
)

// CheckSize refuses a graph of more than MaxNodes nodes or MaxEdges edges.
// Count them and call it before building anything.
func CheckSize(nodes, edges int) error {
	if nodes > MaxNodes {
		return fmt.Errorf("%w: %d nodes: at most %d", ErrTooLarge, nodes, MaxNodes)
	}
	if edges > MaxEdges {
		return fmt.Errorf("%w: %d link directions: at most %d", ErrTooLarge, edges, MaxEdges)
	}
	return nil
}

// Check reports the first thing wrong with g: its size, a kind, an edge's
// ends, delay or direction index (unique, below MaxEdges; -1, with no
// delay, between a host and a site and nowhere else), an edge between two sites, or an edge
// with no edge back. The other methods never panic on a graph
// Check refuses, but their results mean nothing.
func (g *Graph) Check() error {
	if err := CheckSize(len(g.Nodes), len(g.Edges)); err != nil {
		return err
	}
	for i, n := range g.Nodes {
		if n.Kind > Core {
			return fmt.Errorf("%w: node %d (%s): unknown kind %d", ErrInvalid, i, n.Name, n.Kind)
		}
	}
	seen := make([]bool, MaxEdges)
	for i, e := range g.Edges {
		if !g.valid(e) {
			return fmt.Errorf("%w: edge %d: ends %d->%d: want two different nodes below %d", ErrInvalid, i, e.From, e.To, len(g.Nodes))
		}
		name := g.Nodes[e.From].Name + "->" + g.Nodes[e.To].Name
		switch {
		case e.Delay < 0 || e.Delay > MaxDelay:
			return fmt.Errorf("%w: edge %d (%s): delay %dns: want 0 to %v", ErrInvalid, i, name, e.Delay, time.Duration(MaxDelay))
		case e.member() != g.joinsSite(e) || e.member() && (e.Dir != -1 || e.Delay != 0):
			return fmt.Errorf("%w: edge %d (%s): direction %d: a host and its site are joined by no direction (-1, no delay), and nothing else is", ErrInvalid, i, name, e.Dir)
		case e.member():
		case e.Dir >= MaxEdges:
			return fmt.Errorf("%w: edge %d (%s): direction %d: at most %d", ErrInvalid, i, name, e.Dir, MaxEdges-1)
		case seen[e.Dir]:
			return fmt.Errorf("%w: edge %d (%s): direction %d used twice: one edge per direction", ErrInvalid, i, name, e.Dir)
		default:
			seen[e.Dir] = true
		}
		if a, b := g.Nodes[e.From].Kind, g.Nodes[e.To].Kind; a == Site && b == Site {
			return fmt.Errorf("%w: edge %d (%s) joins two sites: a site joins its hosts and one router or the core", ErrInvalid, i, name)
		}
	}
	return g.checkReverse()
}

// checkReverse reports an edge whose reverse is missing: a link has both
// directions, a site its up and down, a host and its site one edge each
// way. Reach counts on it.
func (g *Graph) checkReverse() error {
	pairs := make(map[[2]int32]int, len(g.Edges))
	for _, e := range g.Edges {
		pairs[[2]int32{e.From, e.To}]++
	}
	for i, e := range g.Edges {
		if pairs[[2]int32{e.To, e.From}] == 0 {
			return fmt.Errorf("%w: edge %d (%s->%s) has no edge back: every link joins both ways", ErrInvalid, i, g.Nodes[e.From].Name, g.Nodes[e.To].Name)
		}
	}
	return nil
}

// valid reports whether e joins two different nodes of g.
func (g *Graph) valid(e Edge) bool {
	n := int32(len(g.Nodes))
	return e.From >= 0 && e.From < n && e.To >= 0 && e.To < n && e.From != e.To
}

// joinsSite reports whether e joins a host and a site, either way.
func (g *Graph) joinsSite(e Edge) bool {
	a, b := g.Nodes[e.From].Kind, g.Nodes[e.To].Kind
	return a == Host && b == Site || a == Site && b == Host
}

// cost is what e adds to a path's cost under m, and its count of
// directions.
func (e Edge) cost(m Metric) (int64, int32) {
	if e.member() {
		return 0, 0
	}
	if m == Hops {
		return 1, 1
	}
	return min(max(e.Delay, 0), MaxDelay), 1
}
