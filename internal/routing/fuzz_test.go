package routing

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// decode makes a graph of up to 32 nodes and 128 edges from fuzz bytes:
// the node count, one kind a node (4 is no kind), then four bytes an edge:
// its ends (n is no node), flags (1: no direction; 2: one way only; 4: the
// direction of the edge before) and its delay in milliseconds (255: past
// MaxDelay).
func decode(data []byte) *Graph {
	g := &Graph{}
	if len(data) == 0 {
		return g
	}
	n := int(data[0])%32 + 1
	data = data[1:]
	for i := 0; i < n && i < len(data); i++ {
		g.Nodes = append(g.Nodes, Node{Name: "n" + string(rune('a'+i%26)), Kind: NodeKind(data[i] % 5)})
	}
	n = len(g.Nodes)
	if n == 0 {
		return g
	}
	data = data[n:]
	var dir int32
	for ; len(data) >= 4 && len(g.Edges) < 128; data = data[4:] {
		a, b, flags := int32(data[0])%int32(n+1), int32(data[1])%int32(n+1), data[2]
		delay := int64(data[3]) * int64(time.Millisecond)
		if data[3] == 255 {
			delay = MaxDelay + 1
		}
		d := dir
		switch {
		case flags&1 != 0:
			d = -1
		case flags&4 != 0 && dir > 0:
			d = dir - 1
		default:
			dir += 2
		}
		g.Edges = append(g.Edges, Edge{a, b, d, delay})
		if flags&2 == 0 {
			back := d
			if d >= 0 {
				back = d + 1
			}
			g.Edges = append(g.Edges, Edge{b, a, back, delay})
		}
	}
	return g
}

// encode is decode's inverse for graphs built by build (tests' seeds).
func encode(g *Graph) []byte {
	out := []byte{byte(len(g.Nodes) - 1)}
	for _, n := range g.Nodes {
		out = append(out, byte(n.Kind))
	}
	for i := 0; i < len(g.Edges); i += 2 {
		e := g.Edges[i]
		flags := byte(0)
		if e.Dir < 0 {
			flags = 1
		}
		out = append(out, byte(e.From), byte(e.To), flags, byte(e.Delay/int64(time.Millisecond)))
	}
	return out
}

// FuzzGraph: no graph makes the package panic or loop, and on every graph
// Check accepts, From's paths keep the rules (CheckRoute accepts them and
// Follow gives them back), Reaches agrees with From, and the paths do not
// depend on the order of the edges.
func FuzzGraph(f *testing.F) {
	f.Add(encode(garr(f)))
	f.Add(encode(leaves(f)))
	f.Add([]byte{3, 0, 1, 0, 0, 1, 0, 5, 1, 2, 0, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := decode(data)
		checked := g.Check() == nil
		r := g.Reachability()
		comp := g.Reach()
		if len(comp) != len(g.Nodes) {
			t.Fatalf("Reach: %d components for %d nodes", len(comp), len(g.Nodes))
		}
		rev := &Graph{Nodes: g.Nodes, Edges: slices.Clone(g.Edges)}
		slices.Reverse(rev.Edges)
		skip := make([]bool, len(g.Edges))
		for i := range skip {
			skip[i] = i%5 == 3
		}
		for _, by := range []Metric{Delay, Hops} {
			for src := range g.Nodes {
				pred, back := g.From(src, by, skip), rev.From(src, by, skip)
				eg := g.Egress(src, by, skip)
				full := g.From(src, by, nil)
				for dst := range g.Nodes {
					path := g.Path(pred, dst)
					if !checked {
						continue
					}
					if eg[dst] != nil && (path == nil || !slices.Contains(eg[dst], path[0])) {
						t.Fatalf("%d -> %d leaves by %v, not one of Egress's %v", src, dst, path, eg[dst])
					}
					if p := rev.Path(back, dst); !slices.Equal(g.content(path), rev.content(p)) {
						t.Fatalf("%d -> %d: %v, edges reversed %v", src, dst, g.content(path), rev.content(p))
					}
					if found := src == dst || g.Path(full, dst) != nil; found != r.Reaches(src, dst) {
						t.Fatalf("%d -> %d: From finds a path %v, Reaches says %v", src, dst, found, !found)
					}
					path = g.Path(full, dst) // Follow knows no direction down
					if path == nil {
						continue
					}
					nodes := []int{src}
					for _, e := range path {
						nodes = append(nodes, int(g.Edges[e].To))
					}
					edges, err := g.Follow(nodes, by)
					if err != nil || !slices.Equal(g.content(edges), g.content(path)) {
						t.Fatalf("%v: Follow = %v, %v; From's path %v", nodes, edges, err, path)
					}
				}
			}
		}
		if !checked {
			for i := range g.Nodes {
				_ = g.CheckRoute([]int{i, (i + 1) % len(g.Nodes), i})
				_ = r.Reaches(i, 0)
			}
			return
		}
		if err := g.CheckRoute([]int{0, 0}); len(g.Nodes) > 0 && !errors.Is(err, ErrLoop) {
			t.Fatalf("CheckRoute(0, 0) = %v, want ErrLoop", err)
		}
	})
}
