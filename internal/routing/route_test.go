package routing

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestFromShortest(t *testing.T) {
	g := garr(t)
	for _, tt := range []struct {
		name     string
		from, to string
		by       Metric
		want     string
	}{
		{"delay: the short way round", "torino", "cnaf", Delay, "torino storino mi bo scnaf cnaf"},
		{"delay: 3+2 ms, not 2+6+2", "cnaf", "bari", Delay, "cnaf scnaf bo rm na sbari bari"},
		{"delay: 2+3+2 ms over three directions", "torino", "bari", Delay, "torino storino mi bo rm na sbari bari"},
		{"hops: two backbone directions, not three", "torino", "bari", Hops, "torino storino mi rm na sbari bari"},
		{"hops: back the same way", "bari", "torino", Hops, "bari sbari na rm mi storino torino"},
		{"from a router", "rm", "cnaf", Delay, "rm bo scnaf cnaf"},
		{"to a router", "cnaf", "na", Hops, "cnaf scnaf bo rm na"},
		{"to the host's own site", "bari", "sbari", Delay, "bari sbari"},
		{"to itself: no path", "bari", "bari", Delay, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := g.best(t, tt.from, tt.to, tt.by, nil); got != tt.want {
				t.Errorf("%s -> %s by %v: %q, want %q", tt.from, tt.to, tt.by, got, tt.want)
			}
		})
	}
}

func TestFromTieBreaks(t *testing.T) {
	diamond := []string{"a-r1", "r1-r2:1ms", "r1-r3:1ms", "r2-r4:1ms", "r3-r4:1ms", "r4-b"}
	for _, tt := range []struct {
		name  string
		nodes string
		links []string
		by    Metric
		want  string
		dir   int32 // of the path's second edge, if >= 0
	}{
		{"equal cost and directions: the first router in file order", "r:r1 r:r2 r:r3 r:r4 h:a h:b", diamond, Delay, "a r1 r2 r4 b", -1},
		{"file order decides, not names", "r:r1 r:r3 r:r2 r:r4 h:a h:b", diamond, Delay, "a r1 r3 r4 b", -1},
		{"hops: the same", "r:r1 r:r3 r:r2 r:r4 h:a h:b", diamond, Hops, "a r1 r3 r4 b", -1},
		{"equal delay: fewer directions first, whatever the rank", "r:r2 r:r1 r:r4 h:a h:b",
			[]string{"a-r1", "r1-r2:1ms", "r2-r4:1ms", "r1-r4:2ms", "r4-b"}, Delay, "a r1 r4 b", -1},
		{"two equal links: the lower direction", "r:r1 r:r2 h:a h:b",
			[]string{"a-r1", "r1-r2:1ms", "r1-r2:1ms", "r2-b"}, Delay, "a r1 r2 b", 2},
		{"two links: the shorter", "r:r1 r:r2 h:a h:b",
			[]string{"a-r1", "r1-r2:1ms", "r1-r2:500us", "r2-b"}, Delay, "a r1 r2 b", 4},
		{"two links by hops: the lower direction", "r:r1 r:r2 h:a h:b",
			[]string{"a-r1", "r1-r2:1ms", "r1-r2:500us", "r2-b"}, Hops, "a r1 r2 b", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := build(t, tt.nodes, tt.links...)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 20 {
				s := g
				if i > 0 {
					s = shuffled(rng, g)
				}
				a := s.index(t, "a")
				path := s.Path(s.From(a, tt.by, nil), s.index(t, "b"))
				if got := s.names(a, path); got != tt.want {
					t.Fatalf("edge order %d: %q, want %q", i, got, tt.want)
				}
				if tt.dir >= 0 && s.Edges[path[1]].Dir != tt.dir {
					t.Fatalf("edge order %d: crosses direction %d, want %d", i, s.Edges[path[1]].Dir, tt.dir)
				}
			}
		})
	}
}

// TestFromPermutedEdges: on graphs full of ties, every path is the same
// whatever the order of the edges.
func TestFromPermutedEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	delays := []time.Duration{time.Millisecond, 2 * time.Millisecond}
	for range 5 {
		g := randomGraph(rng, 30, 60, 20, 5, delays)
		if err := g.Check(); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			s := shuffled(rng, g)
			for _, by := range []Metric{Delay, Hops} {
				for src := range g.Nodes {
					p, q := g.From(src, by, nil), s.From(src, by, nil)
					for dst := range g.Nodes {
						if a, b := g.content(g.Path(p, dst)), s.content(s.Path(q, dst)); !slices.Equal(a, b) {
							t.Fatalf("%s -> %s by %v: %v, after a shuffle %v", g.Nodes[src].Name, g.Nodes[dst].Name, by, a, b)
						}
					}
				}
			}
		}
	}
}

func TestHostsNeverTransit(t *testing.T) {
	for _, tt := range []struct {
		name     string
		nodes    string
		links    []string
		from, to string
		want     string
	}{
		{"the long way round a host", "r:r1 h:a h:m h:b", []string{"a-m:1ms", "m-b:1ms", "a-r1:10ms", "r1-b:10ms"}, "a", "b", "a r1 b"},
		{"no way but through a host", "h:a h:m h:b", []string{"a-m:1ms", "m-b:1ms"}, "a", "b", ""},
		{"a host's own link", "h:a h:m h:b", []string{"a-m:1ms", "m-b:1ms"}, "a", "m", "a m"},
		{"between routers", "r:r1 r:r2 h:a h:m h:b", []string{"a-r1", "r1-m:1ms", "m-r2:1ms", "r2-b", "r1-r2:50ms"}, "a", "b", "a r1 r2 b"},
		{"from a router", "r:r1 r:r2 h:m", []string{"r1-m:1ms", "m-r2:1ms"}, "r1", "r2", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := build(t, tt.nodes, tt.links...)
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
			if got := g.best(t, tt.from, tt.to, Delay, nil); got != tt.want {
				t.Errorf("%s -> %s: %q, want %q", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

// leaves has a site, sc, on two routers: a shortcut between them that
// nobody but sc's own hosts may take.
func leaves(t testing.TB) *Graph {
	return build(t, "r:r1 r:r2 h:a h:a2 h:b h:c h:d h:e s:sa s:sb s:sc s:sd s:se c:core",
		"sa-r1:1ms", "sb-r2:1ms", "sc-r1:1ms", "sc-r2:1ms", "r1-r2:100ms", "sd-core:1ms", "se-core:1ms",
		"a=sa", "a2=sa", "b=sb", "c=sc", "d=sd", "e=se")
}

func TestSitesAreLeaves(t *testing.T) {
	g := leaves(t)
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ from, to, want string }{
		{"a", "b", "a sa r1 r2 sb b"}, // not through sc, 98 ms shorter
		{"c", "b", "c sc r2 sb b"},    // sc's own host goes through it
		{"a", "c", "a sa r1 sc c"},    // into sc, to its host
		{"r1", "r2", "r1 r2"},
		{"a", "a2", "a sa a2"}, // the site's LAN
		{"d", "e", "d sd core se e"},
		{"a", "e", ""}, // the core joins no router
	} {
		if got := g.best(t, tt.from, tt.to, Delay, nil); got != tt.want {
			t.Errorf("%s -> %s: %q, want %q", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestFromSkip(t *testing.T) {
	g := garr(t)
	down := func(dirs ...int) []bool {
		s := make([]bool, 8) // shorter than the directions: the rest are up
		for _, d := range dirs {
			s[d] = true
		}
		return s
	}
	for _, tt := range []struct {
		name     string
		skip     []bool
		from, to string
		want     string
	}{
		{"mi->bo down", down(0), "torino", "cnaf", "torino storino mi rm bo scnaf cnaf"},
		{"bo->mi is still up", down(0), "cnaf", "torino", "cnaf scnaf bo mi storino torino"},
		{"both down", down(0, 1), "cnaf", "torino", "cnaf scnaf bo rm mi storino torino"},
		{"nothing down", down(), "torino", "cnaf", "torino storino mi bo scnaf cnaf"},
		{"cut off", down(0, 3, 6), "torino", "cnaf", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := g.best(t, tt.from, tt.to, Delay, tt.skip); got != tt.want {
				t.Errorf("%s -> %s: %q, want %q", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

// TestFromOptimal compares From with a search that tries every edge until
// nothing improves, under the same rules, on random graphs with directions
// down.
func TestFromOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	delays := []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 7 * time.Millisecond}
	for range 20 {
		g := randomGraph(rng, 12, 20, 10, 4, delays)
		skip := make([]bool, len(g.Edges))
		for i := range skip {
			skip[i] = rng.IntN(8) == 0
		}
		for _, by := range []Metric{Delay, Hops} {
			for src := range g.Nodes {
				pred := g.From(src, by, skip)
				cost, dirs, reached := reference(g, src, by, skip)
				for dst := range g.Nodes {
					path := g.Path(pred, dst)
					if dst == src || !reached[dst] {
						if path != nil {
							t.Fatalf("%s -> %s: path %q, want none", g.Nodes[src].Name, g.Nodes[dst].Name, g.names(src, path))
						}
						continue
					}
					var c int64
					var d int32
					for _, e := range path {
						ec, ed := g.Edges[e].cost(by)
						c, d = c+ec, d+ed
						if g.Edges[e].Dir >= 0 && skip[g.Edges[e].Dir] {
							t.Fatalf("%s -> %s crosses down direction %d", g.Nodes[src].Name, g.Nodes[dst].Name, g.Edges[e].Dir)
						}
					}
					if c != cost[dst] || d != dirs[dst] {
						t.Fatalf("%s -> %s by %v: %q costs (%d, %d), best (%d, %d)", g.Nodes[src].Name, g.Nodes[dst].Name, by,
							g.names(src, path), c, d, cost[dst], dirs[dst])
					}
				}
			}
		}
	}
}

// reference is Bellman-Ford under the package's rules.
func reference(g *Graph, src int, by Metric, skip []bool) ([]int64, []int32, []bool) {
	n := len(g.Nodes)
	cost, dirs, reached := make([]int64, n), make([]int32, n), make([]bool, n)
	for i := range cost {
		cost[i] = math.MaxInt64
	}
	cost[src], reached[src] = 0, true
	own := func(s int32) bool {
		return g.Nodes[src].Kind == Host && slices.ContainsFunc(g.Edges, func(e Edge) bool { return int(e.From) == src && e.To == s })
	}
	for range n {
		for _, e := range g.Edges {
			u, v := int(e.From), int(e.To)
			if !reached[u] || v == src || e.Dir >= 0 && skip[e.Dir] {
				continue
			}
			if u != src && (g.Nodes[u].Kind == Host || g.Nodes[u].Kind == Site && !own(e.From) && g.Nodes[v].Kind != Host) {
				continue
			}
			c, d := e.cost(by)
			if nc, nd := cost[u]+c, dirs[u]+d; nc < cost[v] || nc == cost[v] && nd < dirs[v] {
				cost[v], dirs[v], reached[v] = nc, nd, true
			}
		}
	}
	return cost, dirs, reached
}

func TestPathOfForeignPred(t *testing.T) {
	g := garr(t)
	for _, tt := range []struct {
		name string
		pred []int32
		dst  int
	}{
		{"out of range", []int32{-1, 0}, 5},
		{"negative", []int32{-1, 0}, -1},
		{"edge past the graph", []int32{-1, 99}, 1},
		{"edge into another node", []int32{-1, 2}, 1}, // edge 2 enters rm
		{"a cycle", []int32{1, 0}, 1},
	} {
		if p := g.Path(tt.pred, tt.dst); p != nil {
			t.Errorf("%s: %v, want nil", tt.name, p)
		}
	}
}

func TestParseMetric(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Metric
		ok   bool
	}{{"", Delay, true}, {"delay", Delay, true}, {"hops", Hops, true}, {"Hops", 0, false}, {"bgp", 0, false}} {
		got, err := ParseMetric(tt.in)
		if (err == nil) != tt.ok || tt.ok && got != tt.want {
			t.Errorf("ParseMetric(%q) = %v, %v", tt.in, got, err)
		}
		if tt.ok && got.String() != map[Metric]string{Delay: "delay", Hops: "hops"}[tt.want] {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}

// backbone is the benchmark's graph: a ring of routers with random chords,
// and hosts on random routers, half of them behind a site.
func backbone(routers, links, hosts int) *Graph {
	rng := rand.New(rand.NewPCG(7, 8))
	g := &Graph{}
	for range routers {
		g.Nodes = append(g.Nodes, Node{Name: "r", Kind: Router})
	}
	var dir int32
	link := func(a, b int) {
		d := int64(rng.IntN(20)+1) * int64(time.Millisecond)
		g.Edges = append(g.Edges, Edge{int32(a), int32(b), dir, d}, Edge{int32(b), int32(a), dir + 1, d})
		dir += 2
	}
	for i := range links {
		if i < routers {
			link(i, (i+1)%routers)
		} else if a, b := rng.IntN(routers), rng.IntN(routers); a != b {
			link(a, b)
		}
	}
	for h := range hosts {
		g.Nodes = append(g.Nodes, Node{Name: "h", Kind: Host})
		host := len(g.Nodes) - 1
		if h%2 == 0 {
			link(host, rng.IntN(routers))
			continue
		}
		g.Nodes = append(g.Nodes, Node{Name: "s", Kind: Site})
		site := len(g.Nodes) - 1
		g.Edges = append(g.Edges, Edge{int32(host), int32(site), -1, 0}, Edge{int32(site), int32(host), -1, 0})
		link(site, rng.IntN(routers))
	}
	return g
}

// hostsOf are the indexes of g's hosts.
func hostsOf(g *Graph) []int {
	var hosts []int
	for i, n := range g.Nodes {
		if n.Kind == Host {
			hosts = append(hosts, i)
		}
	}
	return hosts
}

// BenchmarkRoute routes every ordered pair of 100 hosts over 200 routers
// and 400 links: one From per source, one Path per pair.
func BenchmarkRoute(b *testing.B) {
	g := backbone(200, 400, 100)
	if err := g.Check(); err != nil {
		b.Fatal(err)
	}
	hosts := hostsOf(g)
	b.ReportAllocs()
	for b.Loop() {
		pairs := 0
		for _, src := range hosts {
			pred := g.From(src, Delay, nil)
			for _, dst := range hosts {
				if dst != src && g.Path(pred, dst) != nil {
					pairs++
				}
			}
		}
		if pairs != len(hosts)*(len(hosts)-1) {
			b.Fatalf("%d pairs routed, want %d", pairs, len(hosts)*(len(hosts)-1))
		}
	}
}

func TestRouteErrorMatches(t *testing.T) {
	err := error(&RouteError{At: 2, Node: "r3", Err: ErrNotLinked})
	var re *RouteError
	if !errors.Is(err, ErrNotLinked) || errors.Is(err, ErrLoop) || !errors.As(err, &re) || re.At != 2 {
		t.Errorf("%v: does not match as it should", err)
	}
	for _, tt := range []struct {
		err  *RouteError
		want string
	}{
		{&RouteError{At: 2, Node: "r3", Err: ErrLoop}, "route node 2 (r3): node appears twice"},
		{&RouteError{At: 1, Err: ErrNotLinked}, "route node 1: no link joins consecutive nodes"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// BenchmarkReaches asks every ordered pair of 100 hosts over the same
// graph as BenchmarkRoute, with the Reachability built once.
func BenchmarkReaches(b *testing.B) {
	g := backbone(200, 400, 100)
	hosts := hostsOf(g)
	b.ReportAllocs()
	for b.Loop() {
		r := g.Reachability()
		for _, a := range hosts {
			for _, h := range hosts {
				if !r.Reaches(a, h) {
					b.Fatalf("%d does not reach %d", a, h)
				}
			}
		}
	}
}
