package routing

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCheckRoute(t *testing.T) {
	for _, tt := range []struct {
		name  string
		g     *Graph
		route []string
		want  error
		at    int
	}{
		{"the design's policy route", garr(t), []string{"bari", "sbari", "na", "rm", "mi", "bo", "scnaf", "cnaf"}, nil, 0},
		{"from a router to a host", garr(t), []string{"na", "rm", "bo", "scnaf", "cnaf"}, nil, 0},
		{"two hosts of a site", leaves(t), []string{"a", "sa", "a2"}, nil, 0},
		{"na and bo are not linked", garr(t), []string{"bari", "sbari", "na", "bo", "scnaf", "cnaf"}, ErrNotLinked, 3},
		{"a host leaves through its site", garr(t), []string{"bari", "na", "rm"}, ErrNotLinked, 1},
		{"rm twice", garr(t), []string{"bari", "sbari", "na", "rm", "bo", "rm", "mi"}, ErrLoop, 5},
		{"a loop before a missing link", garr(t), []string{"bari", "sbari", "na", "rm", "na", "bo"}, ErrLoop, 4},
		{"a missing link before a loop", garr(t), []string{"bari", "sbari", "na", "bo", "na"}, ErrNotLinked, 3},
		{"through a host", build(t, "h:a h:m h:b", "a-m", "m-b"), []string{"a", "m", "b"}, ErrTransit, 1},
		{"through a site between routers", leaves(t), []string{"a", "sa", "r1", "sc", "r2", "sb", "b"}, ErrTransit, 3},
		{"a site between two routers", leaves(t), []string{"r1", "sc", "r2"}, ErrTransit, 1},
		{"one node", garr(t), []string{"bari"}, ErrNotLinked, 1},
		{"no node", garr(t), nil, ErrNotLinked, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nodes := make([]int, len(tt.route))
			for i, n := range tt.route {
				nodes[i] = tt.g.index(t, n)
			}
			err := tt.g.CheckRoute(nodes)
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("CheckRoute(%v) = %v, want %v", tt.route, err, tt.want)
			}
			if err == nil {
				edges, err := tt.g.Follow(nodes, Delay)
				if err != nil || tt.g.names(nodes[0], edges) != strings.Join(tt.route, " ") {
					t.Fatalf("Follow(%v) = %q, %v", tt.route, tt.g.names(nodes[0], edges), err)
				}
				return
			}
			var re *RouteError
			if !errors.As(err, &re) || re.At != tt.at || tt.at < len(tt.route) && re.Node != tt.route[tt.at] {
				t.Errorf("CheckRoute(%v) = %#v, want at %d", tt.route, err, tt.at)
			}
		})
	}
}

func TestCheckRouteUnknownNode(t *testing.T) {
	g := garr(t)
	for _, nodes := range [][]int{{0, 99}, {-1, 0}} {
		err := g.CheckRoute(nodes)
		if !errors.Is(err, ErrNotLinked) {
			t.Errorf("CheckRoute(%v) = %v, want ErrNotLinked", nodes, err)
		}
	}
}

func TestFollowTakesTheBestLink(t *testing.T) {
	g := build(t, "r:r1 r:r2 h:a h:b", "a-r1", "r1-r2:1ms", "r1-r2:500us", "r2-b")
	nodes := []int{2, 0, 1, 3}
	for _, tt := range []struct {
		by  Metric
		dir int32
	}{{Delay, 4}, {Hops, 2}} {
		edges, err := g.Follow(nodes, tt.by)
		if err != nil || g.Edges[edges[1]].Dir != tt.dir {
			t.Errorf("by %v: %v, %v: want direction %d", tt.by, edges, err, tt.dir)
		}
	}
}

// TestFollowMatchesFrom: a path From finds is a route CheckRoute accepts,
// and Follow gives back the same edges.
func TestFollowMatchesFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 10 {
		g := randomGraph(rng, 15, 25, 12, 4, []time.Duration{time.Millisecond, 2 * time.Millisecond})
		for _, by := range []Metric{Delay, Hops} {
			for src := range g.Nodes {
				pred := g.From(src, by, nil)
				for dst := range g.Nodes {
					path := g.Path(pred, dst)
					if path == nil {
						continue
					}
					nodes := []int{src}
					for _, e := range path {
						nodes = append(nodes, int(g.Edges[e].To))
					}
					got, err := g.Follow(nodes, by)
					if err != nil || !slices.Equal(g.content(got), g.content(path)) {
						t.Fatalf("%s: Follow = %v, %v; From's path %v", g.names(src, path), got, err, path)
					}
				}
			}
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(g *Graph)
		want   error
	}{
		{"valid", func(g *Graph) {}, nil},
		{"too many nodes", func(g *Graph) { g.Nodes = make([]Node, MaxNodes+1) }, ErrTooLarge},
		{"too many edges", func(g *Graph) { g.Edges = make([]Edge, MaxEdges+1) }, ErrTooLarge},
		{"unknown kind", func(g *Graph) { g.Nodes[0].Kind = 7 }, ErrInvalid},
		{"edge past the nodes", func(g *Graph) { g.Edges[0].To = 99 }, ErrInvalid},
		{"negative end", func(g *Graph) { g.Edges[0].From = -1 }, ErrInvalid},
		{"edge to itself", func(g *Graph) { g.Edges[0].To = g.Edges[0].From }, ErrInvalid},
		{"negative delay", func(g *Graph) { g.Edges[0].Delay = -1 }, ErrInvalid},
		{"delay past the bound", func(g *Graph) { g.Edges[0].Delay = MaxDelay + 1 }, ErrInvalid},
		{"direction twice", func(g *Graph) { g.Edges[1].Dir = 0 }, ErrInvalid},
		{"direction past the bound", func(g *Graph) { g.Edges[1].Dir = MaxEdges }, ErrInvalid},
		{"routers joined by no direction", func(g *Graph) { g.Edges[0].Dir = -1 }, ErrInvalid},
		{"a host and its site by a direction", func(g *Graph) { g.Edges[len(g.Edges)-1].Dir = 100 }, ErrInvalid},
		{"a host and its site with a delay", func(g *Graph) { g.Edges[len(g.Edges)-1].Delay = 1 }, ErrInvalid},
		{"direction -2", func(g *Graph) { g.Edges[len(g.Edges)-1].Dir = -2 }, ErrInvalid},
		{"no edge back", func(g *Graph) { g.Edges = g.Edges[1:] }, ErrInvalid},
		{"two sites joined", func(g *Graph) {
			g.Edges = append(g.Edges, Edge{7, 8, 50, 0}, Edge{8, 7, 51, 0})
		}, ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := garr(t)
			tt.change(g)
			err := g.Check()
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Errorf("Check() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCheckSize(t *testing.T) {
	for _, tt := range []struct {
		nodes, edges int
		ok           bool
	}{{0, 0, true}, {MaxNodes, MaxEdges, true}, {MaxNodes + 1, 0, false}, {0, MaxEdges + 1, false}} {
		if err := CheckSize(tt.nodes, tt.edges); (err == nil) != tt.ok || !tt.ok && !errors.Is(err, ErrTooLarge) {
			t.Errorf("CheckSize(%d, %d) = %v", tt.nodes, tt.edges, err)
		}
	}
}

func TestReach(t *testing.T) {
	g := build(t, "r:r1 r:r2 r:r3 h:a h:b h:m h:c h:d h:lone s:sd c:core",
		"r1-r2:1ms", "a-r1", "b-r2", "m-r2", "m-r3", "c-r3", "sd-core", "d=sd")
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	comp := g.Reach()
	want := map[string]int32{"r1": 0, "r2": 0, "r3": 1, "core": 2, "a": 0, "b": 0, "m": 0, "c": 1, "sd": 2, "d": 2}
	for name, c := range want {
		if got := comp[g.index(t, name)]; got != c {
			t.Errorf("component of %s: %d, want %d", name, got, c)
		}
	}
	if lone := comp[g.index(t, "lone")]; lone < 3 {
		t.Errorf("a host attached to nothing has component %d, shared with others", lone)
	}
	r := g.Reachability()
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"a", "b", true}, {"a", "c", false}, {"m", "c", true}, {"m", "a", true}, {"a", "m", true},
		{"c", "a", false}, {"d", "a", false}, {"d", "sd", true}, {"d", "core", true}, {"lone", "lone", true}, {"lone", "a", false},
	} {
		if got := r.Reaches(g.index(t, tt.a), g.index(t, tt.b)); got != tt.want {
			t.Errorf("Reaches(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	if r.Reaches(-1, 0) || r.Reaches(0, len(g.Nodes)) {
		t.Error("Reaches of no node")
	}
}

// TestReachMatchesFrom: on random graphs, Reaches holds exactly when From
// finds a path.
func TestReachMatchesFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 50 {
		g := randomGraph(rng, 1+rng.IntN(15), rng.IntN(20), 1+rng.IntN(15), rng.IntN(5), []time.Duration{time.Millisecond})
		if err := g.Check(); err != nil {
			t.Fatal(err)
		}
		r := g.Reachability()
		comp := g.Reach()
		for a := range g.Nodes {
			pred := g.From(a, Hops, nil)
			for b := range g.Nodes {
				found := a == b || g.Path(pred, b) != nil
				if got := r.Reaches(a, b); got != found {
					t.Fatalf("%s reaches %s: %v, From finds a path: %v", g.Nodes[a].Name, g.Nodes[b].Name, got, found)
				}
				if comp[a] == comp[b] && !found {
					t.Fatalf("%s and %s share component %d but From finds no path", g.Nodes[a].Name, g.Nodes[b].Name, comp[a])
				}
			}
		}
	}
}
