package routing

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// build makes a graph from a list of nodes ("r:mi h:a s:bari c:core": kind
// letter and name; the order is the rank) and links: "a-b:2ms" gives the
// two directions a->b and b->a, numbered in the order given; "a=s" joins a
// host and its site; "a>b:1ms" gives the direction a->b alone.
func build(t testing.TB, nodes string, links ...string) *Graph {
	t.Helper()
	g := &Graph{}
	idx := map[string]int32{}
	for _, f := range strings.Fields(nodes) {
		k, name, _ := strings.Cut(f, ":")
		kind := map[string]NodeKind{"h": Host, "r": Router, "s": Site, "c": Core}[k]
		idx[name] = int32(len(g.Nodes))
		g.Nodes = append(g.Nodes, Node{Name: name, Kind: kind})
	}
	node := func(name string) int32 {
		i, ok := idx[name]
		if !ok {
			t.Fatalf("build: unknown node %q", name)
		}
		return i
	}
	var dir int32
	for _, l := range links {
		ends, delay, _ := strings.Cut(l, ":")
		var d time.Duration
		if delay != "" {
			var err error
			if d, err = time.ParseDuration(delay); err != nil {
				t.Fatal(err)
			}
		}
		if a, b, ok := strings.Cut(ends, "="); ok {
			g.Edges = append(g.Edges, Edge{node(a), node(b), -1, 0}, Edge{node(b), node(a), -1, 0})
			continue
		}
		if a, b, ok := strings.Cut(ends, ">"); ok {
			g.Edges = append(g.Edges, Edge{node(a), node(b), dir, int64(d)})
			dir++
			continue
		}
		a, b, _ := strings.Cut(ends, "-")
		g.Edges = append(g.Edges, Edge{node(a), node(b), dir, int64(d)}, Edge{node(b), node(a), dir + 1, int64(d)})
		dir += 2
	}
	return g
}

// index returns the node named name.
func (g *Graph) index(t testing.TB, name string) int {
	t.Helper()
	i := slices.IndexFunc(g.Nodes, func(n Node) bool { return n.Name == name })
	if i < 0 {
		t.Fatalf("no node %q", name)
	}
	return i
}

// names lists the nodes of a path from src, "" for none.
func (g *Graph) names(src int, path []int32) string {
	if path == nil {
		return ""
	}
	out := []string{g.Nodes[src].Name}
	for _, e := range path {
		out = append(out, g.Nodes[g.Edges[e].To].Name)
	}
	return strings.Join(out, " ")
}

// best is what From finds from src to dst, as node names.
func (g *Graph) best(t testing.TB, src, dst string, by Metric, skip []bool) string {
	t.Helper()
	s := g.index(t, src)
	return g.names(s, g.Path(g.From(s, by, skip), g.index(t, dst)))
}

// garr is the backbone of the design's first example: four routers, three
// sites hanging off them, and a host at each site.
func garr(t testing.TB) *Graph {
	return build(t, "r:mi r:bo r:rm r:na h:torino h:bari h:cnaf s:storino s:sbari s:scnaf",
		"mi-bo:2ms", "bo-rm:3ms", "rm-na:2ms", "mi-rm:6ms", // directions 0-7
		"storino-mi:2ms", "sbari-na:3ms", "scnaf-bo:1ms", // 8-13
		"torino=storino", "bari=sbari", "cnaf=scnaf")
}

// randomGraph makes a graph shaped as scenarios make them: routers joined
// by links, sites on a router or the core, hosts at a site or linked to one
// or two routers (or, now and then, to another host). Delays come from
// delays, so that ties are frequent.
func randomGraph(rng *rand.Rand, routers, links, hosts, sites int, delays []time.Duration) *Graph {
	g := &Graph{}
	add := func(kind NodeKind, name string, n int) int {
		first := len(g.Nodes)
		for i := range n {
			g.Nodes = append(g.Nodes, Node{Name: name + strconv.Itoa(i), Kind: kind})
		}
		return first
	}
	r0 := add(Router, "r", routers)
	h0 := add(Host, "h", hosts)
	s0 := add(Site, "s", sites)
	core := add(Core, "core", 1)
	var dir int32
	link := func(a, b int) {
		d := int64(delays[rng.IntN(len(delays))])
		g.Edges = append(g.Edges, Edge{int32(a), int32(b), dir, d}, Edge{int32(b), int32(a), dir + 1, d})
		dir += 2
	}
	router := func() int { return r0 + rng.IntN(routers) }
	for range links {
		if a, b := router(), router(); a != b {
			link(a, b)
		}
	}
	for s := range sites {
		if routers > 0 && rng.IntN(3) > 0 {
			link(s0+s, router())
		} else {
			link(s0+s, core)
		}
	}
	for h := range hosts {
		switch x := rng.IntN(10); {
		case sites > 0 && x < 4:
			s := s0 + rng.IntN(sites)
			g.Edges = append(g.Edges, Edge{int32(h0 + h), int32(s), -1, 0}, Edge{int32(s), int32(h0 + h), -1, 0})
		case x == 4 && h > 0:
			link(h0+h, h0+rng.IntN(h))
		case routers > 0:
			link(h0+h, router())
			if x > 7 {
				link(h0+h, router())
			}
		}
	}
	return g
}

// shuffled returns g with its edges in another order.
func shuffled(rng *rand.Rand, g *Graph) *Graph {
	s := &Graph{Nodes: g.Nodes, Edges: slices.Clone(g.Edges)}
	rng.Shuffle(len(s.Edges), func(i, j int) { s.Edges[i], s.Edges[j] = s.Edges[j], s.Edges[i] })
	return s
}

// content is a path as its edges' contents, which do not depend on the
// order of g.Edges.
func (g *Graph) content(path []int32) []Edge {
	out := make([]Edge, len(path))
	for i, e := range path {
		out[i] = g.Edges[e]
	}
	return out
}
