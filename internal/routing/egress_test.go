package routing

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestEgress(t *testing.T) {
	for _, tt := range []struct {
		name  string
		links []string
		by    Metric
		from  string
		want  map[string][]string // node: the routers of the edges out of src
	}{
		{"two ways out at equal cost", []string{"h-r1:1ms", "h-r2:1ms", "r1-r3:1ms", "r2-r3:1ms", "r3-b"}, Delay, "h",
			map[string][]string{"r3": {"r1", "r2"}, "b": {"r1", "r2"}}},
		{"one way out is shorter", []string{"h-r1:1ms", "h-r2:2ms", "r1-r3:1ms", "r2-r3:1ms", "r3-b"}, Delay, "h", nil},
		{"by hops, a tie again", []string{"h-r1:1ms", "h-r2:2ms", "r1-r3:1ms", "r2-r3:1ms", "r3-b"}, Hops, "h",
			map[string][]string{"r3": {"r1", "r2"}, "b": {"r1", "r2"}}},
		{"ties inside the backbone are not egress ties", []string{"h-r1", "r1-r2:1ms", "r1-r3:1ms", "r2-r4:1ms", "r3-r4:1ms", "r4-b"}, Delay, "h", nil},
		{"two links to one router", []string{"h-r1:1ms", "h-r1:1ms", "r1-b"}, Delay, "h",
			map[string][]string{"r1": {"r1", "r1"}, "b": {"r1", "r1"}}},
		{"a host behind its site", []string{"h=s", "s-r1:1ms", "s-r2:1ms", "r1-b:1ms", "r2-b:1ms"}, Delay, "h", nil},
		{"into a site that is not its own", []string{"h-r1:1ms", "h-r2:1ms", "s-r1:1ms", "s-r2:1ms", "b=s"}, Delay, "h",
			map[string][]string{"s": {"r1", "r2"}, "b": {"r1", "r2"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := build(t, "r:r1 r:r2 r:r3 r:r4 h:h h:b s:s", tt.links...)
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
			eg := g.Egress(g.index(t, tt.from), tt.by, nil)
			for n, edges := range eg {
				var got []string
				for _, e := range edges {
					got = append(got, g.Nodes[g.Edges[e].To].Name)
				}
				if want := tt.want[g.Nodes[n].Name]; !slices.Equal(got, want) {
					t.Errorf("%s: ways out %v, want %v", g.Nodes[n].Name, got, want)
				}
			}
		})
	}
}

// TestEgressMatchesSearch: on random graphs, the ways out Egress gives are
// exactly the edges out of src through which a search that may leave src
// by that edge alone finds the best key.
func TestEgressMatchesSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	ties := 0
	for range 30 {
		g := randomGraph(rng, 8, 12, 8, 2, []time.Duration{time.Millisecond, 2 * time.Millisecond})
		none := make([]bool, len(g.Edges)+1)
		for _, by := range []Metric{Delay, Hops} {
			for src, n := range g.Nodes {
				if n.Kind != Host {
					continue
				}
				eg := g.Egress(src, by, nil)
				cost, dirs, reached := reference(g, src, by, none)
				ways := make([][]int32, len(g.Nodes))
				for out, e := range g.Edges {
					if int(e.From) != src {
						continue
					}
					only := &Graph{Nodes: g.Nodes}
					for i, f := range g.Edges {
						if int(f.From) != src || i == out {
							only.Edges = append(only.Edges, f)
						}
					}
					c, d, r := reference(only, src, by, none)
					for dst := range g.Nodes {
						if dst != src && r[dst] && reached[dst] && c[dst] == cost[dst] && d[dst] == dirs[dst] {
							ways[dst] = append(ways[dst], int32(out))
						}
					}
				}
				for dst, w := range ways {
					if len(w) < 2 {
						w = nil
					} else {
						ties++
					}
					if !slices.Equal(eg[dst], w) {
						t.Fatalf("%s -> %s by %v: Egress %v, want %v", g.Nodes[src].Name, g.Nodes[dst].Name, by, eg[dst], w)
					}
				}
			}
		}
	}
	if ties == 0 {
		t.Fatal("no egress tie in the random graphs: the test tests nothing")
	}
}

func TestUnion(t *testing.T) {
	for _, tt := range []struct{ a, b, want []int32 }{
		{nil, nil, nil}, {[]int32{1}, nil, []int32{1}}, {nil, []int32{2}, []int32{2}},
		{[]int32{1, 3}, []int32{2, 3, 4}, []int32{1, 2, 3, 4}}, {[]int32{1}, []int32{1}, []int32{1}},
	} {
		if got := union(tt.a, tt.b); !slices.Equal(got, tt.want) {
			t.Errorf("union(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
