package scenario

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/routing"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// TestGraphErrors checks each bad graph (one file per problem of the
// design's table, issue 33) gives exactly these errors: file, line, field
// and message.
func TestGraphErrors(t *testing.T) {
	want := map[string]string{
		"unknown-node": `
6: links[1].between[1]: unknown node "r3" (hosts: a, b; routers: r1, r2)
8: links[3].between: a link joins two different nodes, not "r1" to itself
9: links[4].between: a link needs exactly two nodes (hosts or routers), e.g. between: [a, r1]`,
		"lonely-router": `
4: routers.r9: router r9 joins nothing: give it a link (links: - {between: [r9, ...]})`,
		"router-name": `
3: routers.a: router a has the name of a host: names of nodes are unique
4: routers.x: router x has the name of a site: names of nodes are unique
6: routers.core: core is the name of the core that sites without via: meet at: give the router another`,
		"router-addr": `
3: routers.r1.addr: router 10.250.0.9 is in the hosts' subnet 10.250.0.0/16: give routers addresses outside it (as 192.0.2.0/24)
5: routers.r3.addr: 192.0.2.1 is router r2's address already: give each router its own
6: routers.r4.addr: 198.51.100.7 is the address of a hop (hops:) already: give each router its own
7: routers.r5.addr: "::1": give an IPv4 address outside the hosts' subnet (as 192.0.2.1)`,
		"site-via": `
7: sites.x.via: unknown router "r9" (routers: r1)
8: sites.y.via: "c" is a host: a site's access link joins a router (or, without via:, the core every such site meets at)`,
		"route-ends": `
10: routes[0].from: "r1" is a router: a route runs from a host to a host
11: routes[1].to: unknown host "nobody" (hosts: a, b, c)
12: routes[2].via[1]: "c" is a host: hosts do not forward
13: routes[3].via[1]: "x" is a site: a route names the routers it crosses (its hosts' sites are on their paths already)
14: routes[4].via[1]: unknown router "r7" (routers: r1, r2)
15: routes[5].via: missing: give the routers the route crosses, in order (as via: [r1, r2])`,
		"route-not-linked": `
13: routes[0].via[1]: no link joins na and mi (na joins: rm, site bari)
14: routes[1].via[0]: no link joins cnaf and rm (cnaf joins: bo through site cnaf)
15: routes[2].to: no link joins bo and solo (bo joins: mi, site cnaf)`,
		"route-loop": `
10: routes[0].via[2]: r1 appears twice: a route crosses a router once`,
		"route-direct": `
10: routes[0]: c and d are joined directly by links[2]: their path is that link
11: routes[1]: a and b are both at site x: their path is the site's LAN
13: routes[3]: a -> c has a route already: routes[2] (a route is one way: c -> a takes a route of its own)`,
		"multihomed": `
3: hosts.h: h reaches b through r1 and r2 at equal cost: give routes: or different delays`,
		"routing": `
2: routing: "shortest": give delay (the least propagation delay, the default) or hops (the fewest directions)
3: reroute: duration "soon": use a number and ns, us, ms, s, m or h, as 25ms, 1.5s, 2m or 1h30m (µs or μs for us); or never, to keep paths where they are`,
		"too-large": `
3: routers: 1025 routers: a test-bed holds at most 1024 (each forwards in the one engine)
1030: routes[0].via: 64 routers: a path crosses at most 64 directions (a packet's TTL must last it), so a route at most 63 routers`,
		"path-length": `
67: hosts.a: the path from a to b crosses 65 directions: at most 64 (a packet's TTL must last it): give a shorter route (routes:) or links that shorten it
67: hosts.b: the path from b to a crosses 65 directions: at most 64 (a packet's TTL must last it): give a shorter route (routes:) or links that shorten it`,
		"unreachable": `
8: workloads[0].throughput.to: hosts a and b cannot reach each other: b joins r9, which reaches none of what a joins (r1): link the two networks, or the hosts
9: workloads[1].throughput.to: hosts lone and a cannot reach each other: no link joins them and lone joins no router and no site (link lone to a router, or put it at a site)`,
	}
	files, _ := filepath.Glob("testdata/graph/*.bad.yaml")
	if len(files) != len(want) {
		t.Errorf("%d files in testdata/graph, %d in the table: give each file its errors", len(files), len(want))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".bad.yaml")
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("%s is not in the table", f)
			}
			_, err := Load(f, false)
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *scenario.Error", err)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(w), "\n") {
				lines = append(lines, f+":"+l)
			}
			if got, w := err.Error(), strings.Join(lines, "\n"); got != w {
				t.Errorf("got\n%s\nwant\n%s", got, w)
			}
			if tooLarge := errors.Is(err, yamlfile.ErrTooLarge); tooLarge != (name == "too-large") {
				t.Errorf("errors.Is(err, ErrTooLarge) = %v", tooLarge)
			}
		})
	}
}

// nodeNames are the names of nodes, for a message.
func nodeNames(g *routing.Graph, nodes []int) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, g.Nodes[n].Name)
	}
	return out
}

// pathOf is the nodes and directions of a list of edges.
func pathOf(g *routing.Graph, edges []int32) (nodes []string, dirs []int32) {
	for i, ei := range edges {
		e := g.Edges[ei]
		if i == 0 {
			nodes = append(nodes, g.Nodes[e.From].Name)
		}
		nodes = append(nodes, g.Nodes[e.To].Name)
		if e.Dir >= 0 {
			dirs = append(dirs, e.Dir)
		}
	}
	return nodes, dirs
}

// TestGraphWorkedExamples reads the design's worked examples: routers
// with their addresses, the sites' routers, routes, and the graph
// routing and the topology take (node order, direction numbers), on which
// the explicit route, the routed way back and a shared direction come out
// as the design says.
func TestGraphWorkedExamples(t *testing.T) {
	f, err := Load("testdata/graph/garr.good.yaml", false)
	if err != nil {
		t.Fatal(err)
	}
	tb := f.Testbed
	wantRouters := []Router{
		{"mi", netip.MustParseAddr("10.251.0.1")}, {"bo", netip.MustParseAddr("10.251.0.2")},
		{"rm", netip.MustParseAddr("193.206.0.1")}, {"na", netip.MustParseAddr("10.251.0.3")},
	}
	if !slices.Equal(tb.Routers, wantRouters) {
		t.Errorf("routers %v, want %v", tb.Routers, wantRouters)
	}
	if tb.Routing != RoutingDelay || tb.Reroute != 2*time.Second {
		t.Errorf("routing %q reroute %v, want delay 2s", tb.Routing, tb.Reroute)
	}
	if s, _ := tb.Site("bari"); s.Via != "na" {
		t.Errorf("site bari via %q, want na", s.Via)
	}
	if len(tb.Routes) != 1 || !slices.Equal(tb.Routes[0].Via, []string{"na", "rm", "mi", "bo"}) {
		t.Fatalf("routes %+v", tb.Routes)
	}
	g := tb.Graph()
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	if got := nodeNames(&g, []int{0, 3, 4, 6, 7, 14}); !slices.Equal(got, []string{"mi", "na", "cnaf", "bari", "site cnaf", "site trieste"}) {
		t.Errorf("nodes %v: want routers, hosts, sites in file order", got)
	}
	if len(g.Nodes) != 15 || tb.GraphNode("bari") != 6 || tb.GraphNode("rm") != 2 || tb.GraphNode("site x") != -1 {
		t.Errorf("%d nodes (want 15, no core: every site joins a router); bari at %d, rm at %d", len(g.Nodes), tb.GraphNode("bari"), tb.GraphNode("rm"))
	}
	route := tb.RouteNodes(tb.Routes[0])
	if got, want := nodeNames(&g, route), []string{"bari", "site bari", "na", "rm", "mi", "bo", "site cnaf", "cnaf"}; !slices.Equal(got, want) {
		t.Errorf("route nodes %v, want %v", got, want)
	}
	// Directions: links[i] 2i and 2i+1, then sites[s] 8+2s (up), 9+2s (down).
	edges, err := g.Follow(route, routing.Delay)
	if err != nil {
		t.Fatal(err)
	}
	if _, dirs := pathOf(&g, edges); !slices.Equal(dirs, []int32{14, 5, 7, 0, 9}) {
		t.Errorf("route directions %v, want site bari up, na->rm, rm->mi, mi->bo, site cnaf down", dirs)
	}
	back := g.Path(g.From(tb.GraphNode("cnaf"), routing.Delay, nil), tb.GraphNode("bari"))
	nodes, dirs := pathOf(&g, back)
	if !slices.Equal(nodes, []string{"cnaf", "site cnaf", "bo", "rm", "na", "site bari", "bari"}) || !slices.Equal(dirs, []int32{8, 2, 4, 15}) {
		t.Errorf("cnaf -> bari: %v %v, want by delay through bo, rm, na", nodes, dirs)
	}

	f, err = Load("testdata/graph/sc2003.good.yaml", false)
	if err != nil {
		t.Fatal(err)
	}
	tb, g = f.Testbed, f.Testbed.Graph()
	if tb.Routing != RoutingHops || tb.Reroute != RerouteNever {
		t.Errorf("routing %q reroute %v, want hops, never", tb.Routing, tb.Reroute)
	}
	for _, from := range []string{"slac", "caltech"} {
		_, dirs := pathOf(&g, g.Path(g.From(tb.GraphNode(from), routing.Hops, nil), tb.GraphNode("paix")))
		if len(dirs) != 3 || dirs[1] != 4 {
			t.Errorf("%s -> paix crosses %v, want 3 directions, scinet->la (4) second", from, dirs)
		}
	}
}

// bed is a test-bed for the tests of the graph: hosts at no site, and
// the YAML of its other keys.
func bed(hosts string, rest string) string {
	return "name: g\nhosts: {" + hosts + "}\n" + rest
}

// TestGraphAccepts checks test-beds with routers that are valid: addresses
// chosen around those given and the hops', multihoming that delays
// decide or routes settle, routers joined by sites only, and the keys'
// values.
func TestGraphAccepts(t *testing.T) {
	two := "links:\n  - {between: [a, r1]}\n  - {between: [r1, r2], hops: [10.251.0.2]}\n  - {between: [r2, b]}\n"
	multi := "routers: {r1: {}, r2: {}, r3: {}}\nlinks:\n  - {between: [h, r1], delay: 1ms}\n  - {between: [h, r2], delay: %s}\n" +
		"  - {between: [r1, r3], delay: 2ms}\n  - {between: [r2, r3], delay: 2ms}\n  - {between: [r3, b], delay: 1ms}\n"
	tests := []struct {
		name, yaml string
		check      func(*Testbed) string
	}{
		{"auto addresses skip given ones and hops", bed("a: {}, b: {}", "routers: {r1: {}, r2: {addr: 10.251.0.1}, r3: {}}\n"+two+"  - {between: [r3, b]}\n"),
			func(tb *Testbed) string {
				if got := fmt.Sprint(tb.Routers); got != "[{r1 10.251.0.3} {r2 10.251.0.1} {r3 10.251.0.4}]" {
					return "routers " + got
				}
				return ""
			}},
		{"multihomed, delays decide", bed("h: {}, b: {}", fmt.Sprintf(multi, "2ms")), nil},
		{"multihomed, a route settles it", bed("h: {}, b: {}", fmt.Sprintf(multi, "1ms")+"routes: [{from: h, to: b, via: [r1, r3]}]\n"), nil},
		{"a router joined by sites alone", bed("a: {site: x}, b: {site: y}", "routers: {hub: {}}\nsites: {x: {via: hub}, y: {via: hub}}\n"),
			func(tb *Testbed) string {
				if !tb.Reachable("a", "b") {
					return "a and b do not reach each other"
				}
				return ""
			}},
		{"routing default", bed("a: {}, b: {}", "routers: {r1: {}, r2: {}}\n"+two),
			func(tb *Testbed) string {
				if tb.Routing != "" || tb.Reroute != 0 {
					return fmt.Sprintf("routing %q reroute %v, want the defaults", tb.Routing, tb.Reroute)
				}
				return ""
			}},
		{"reroute", bed("a: {}, b: {}", "reroute: 1.5s\nrouters: {r1: {}, r2: {}}\n"+two),
			func(tb *Testbed) string {
				if tb.Reroute != 1500*time.Millisecond {
					return fmt.Sprintf("reroute %v", tb.Reroute)
				}
				return ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("g.yaml", []byte(tt.yaml), false)
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				if msg := tt.check(f.Testbed); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

// TestGraphRefuses checks problems that need a test-bed of their own.
func TestGraphRefuses(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"subnet over the routers'", "subnet: 10.0.0.0/8\n" + bed("a: {}", "routers: {r1: {}}\nlinks: [{between: [a, r1]}]\n"),
			"g.yaml:4: routers.r1: give router r1 an addr: the hosts' subnet 10.0.0.0/8 overlaps 10.251.0.0/16, where routers' addresses are chosen"},
		{"reroute out of range", bed("a: {}", "reroute: 2h\n"), "g.yaml:3: reroute: 2h: give a duration from 0s (at once, the default) to 1h, or never"},
		{"links past the bound", bed("a: {}", "links: ["+strings.Repeat("{}, ", MaxLinks)+"{}]\n"), "g.yaml:3: links: 8193 links: a test-bed holds at most 8192 (two directions each, in the one engine)"},
		{"same link twice", bed("a: {}", "routers: {r1: {}}\nlinks: [{between: [a, r1]}, {between: [r1, a]}]\n"), "g.yaml:4: links[1].between: r1 and a are already joined by links[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte(tt.yaml), false)
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestEventsSelectRouterLinks checks that events name the links between
// routers like any other: r1->r2, r1<->r2.
func TestEventsSelectRouterLinks(t *testing.T) {
	yaml := bed("a: {}, b: {}", "routers: {r1: {}, r2: {}}\nlinks:\n  - {between: [a, r1]}\n  - {between: [r1, r2], delay: 5ms}\n  - {between: [r2, b]}\n"+
		"events:\n  - {at: 1s, link: r1<->r2, set: {down: true}, for: 2s}\n  - {at: 5s, link: r2->r1, set: {delay: 20ms}}\n")
	f, err := Parse("g.yaml", []byte(yaml), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Testbed.LinkSelectors()["r1<->r2"]; !slices.Equal(got, []string{"r1->r2", "r2->r1"}) {
		t.Errorf("r1<->r2 selects %v", got)
	}
	if len(f.Events) != 2 {
		t.Errorf("%d events, want 2", len(f.Events))
	}
}

// randomBed is a test-bed of up to 6 routers, 7 hosts and 3 sites, each
// site joining a router or the core, with random links between nodes.
func randomBed(r *rand.Rand) *Testbed {
	tb := &Testbed{Name: "random"}
	for i := range r.IntN(7) {
		tb.Routers = append(tb.Routers, Router{Name: fmt.Sprintf("r%d", i)})
	}
	for i := range r.IntN(4) {
		s := Site{Name: fmt.Sprintf("s%d", i), Up: Direction{Delay: time.Millisecond}, Down: Direction{Delay: time.Millisecond}}
		if len(tb.Routers) > 0 && r.IntN(2) == 0 {
			s.Via = tb.Routers[r.IntN(len(tb.Routers))].Name
		}
		tb.Sites = append(tb.Sites, s)
	}
	for i := range 2 + r.IntN(6) {
		h := Host{Name: fmt.Sprintf("h%d", i)}
		if len(tb.Sites) > 0 && r.IntN(2) == 0 {
			h.Site = tb.Sites[r.IntN(len(tb.Sites))].Name
		}
		tb.Hosts = append(tb.Hosts, h)
	}
	var nodes []string
	for _, x := range tb.Routers {
		nodes = append(nodes, x.Name)
	}
	for _, h := range tb.Hosts {
		nodes = append(nodes, h.Name)
	}
	linked := map[[2]string]bool{}
	for range r.IntN(len(nodes) + 3) {
		a, b := nodes[r.IntN(len(nodes))], nodes[r.IntN(len(nodes))]
		if a == b || linked[pairKey(a, b)] {
			continue
		}
		linked[pairKey(a, b)] = true
		d := Direction{Delay: time.Duration(1+r.IntN(5)) * time.Millisecond}
		tb.Links = append(tb.Links, Link{A: a, B: b, Forward: d, Reverse: d})
	}
	return tb
}

// TestReachMatchesRouting checks, on 200 random test-beds, that Reachable
// holds exactly when the pair has a path by the rules the topology routes
// with: a link, a site's LAN, or a path routed on the graph; and that the
// paths validation finds by exit (each host's links to routers and its
// site) are those routing finds from the host. (With the topology,
// TestReachMatchesTopology will check it against its paths.)
func TestReachMatchesRouting(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 1))
	for n := range 200 {
		tb := randomBed(r)
		g := tb.Graph()
		if err := g.Check(); err != nil {
			t.Fatalf("bed %d: %v", n, err)
		}
		linked := map[[2]string]bool{}
		for _, l := range tb.Links {
			linked[pairKey(l.A, l.B)] = true
		}
		v, metric := &graphChecker{g: g}, []routing.Metric{routing.Delay, routing.Hops}[n%2]
		for i, a := range tb.Hosts {
			src := len(tb.Routers) + i
			pred := g.From(src, metric, nil)
			keys := v.keys(src, pred, metric)
			xs, from := exits(&g, src), map[int][]pathKey{}
			for _, x := range xs {
				from[x.node] = v.keys(x.node, g.From(x.node, metric, nil), metric)
			}
			for j, b := range tb.Hosts {
				dst := len(tb.Routers) + j
				routed := i == j || linked[pairKey(a.Name, b.Name)] || a.Site != "" && a.Site == b.Site ||
					g.Path(pred, dst) != nil
				if got := tb.Reachable(a.Name, b.Name); got != routed {
					t.Fatalf("bed %d (links %v, sites %v): Reachable(%s, %s) = %v, routed %v", n, tb.Links, tb.Sites, a.Name, b.Name, got, routed)
				}
				// Validation finds paths by exit (graphChecker.paths): the
				// same as routing from the host, for a peer by no link.
				lan := a.Site != "" && a.Site == b.Site
				if best, _ := bestExits(xs, from, dst, metric); i != j && !lan && !linked[pairKey(a.Name, b.Name)] && best != keys[dst] {
					t.Fatalf("bed %d: %s -> %s: by exits %+v, from the host %+v", n, a.Name, b.Name, best, keys[dst])
				}
			}
		}
	}
}

// largeGraph is the YAML of a test-bed of routers routers in a ring with
// chords (links links between them) and hosts hosts, each linked to one.
func largeGraph(routers, links, hosts int) string {
	var b strings.Builder
	b.WriteString("name: large\nrouters:\n")
	for i := range routers {
		fmt.Fprintf(&b, "  r%d: {}\n", i)
	}
	b.WriteString("hosts:\n")
	for i := range hosts {
		fmt.Fprintf(&b, "  h%d: {}\n", i)
	}
	b.WriteString("links:\n")
	seen := map[[2]int]bool{}
	for i := 0; len(seen) < links; i++ {
		a, c := i%routers, (i*7+1+i/routers)%routers
		if a == c || seen[[2]int{min(a, c), max(a, c)}] {
			continue
		}
		seen[[2]int{min(a, c), max(a, c)}] = true
		fmt.Fprintf(&b, "  - {between: [r%d, r%d], rate: 1Gbit, delay: %dus}\n", a, c, 100+(a*31+c*17)%900)
	}
	for i := range hosts {
		fmt.Fprintf(&b, "  - {between: [h%d, r%d], rate: 100Mbit, delay: 1ms}\n", i, (i*2)%routers)
	}
	b.WriteString("workloads:\n  - {name: all, mesh: {duration: 10s}}\n")
	return b.String()
}

// TestLargeGraphValidates checks the size of the target (200
// routers, 400 links, 100 hosts) validates; BenchmarkValidateLargeGraph
// times it (under 1 s).
func TestLargeGraphValidates(t *testing.T) {
	if _, err := Parse("large.yaml", []byte(largeGraph(200, 400, 100)), false); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkValidateLargeGraph(b *testing.B) {
	data := []byte(largeGraph(200, 400, 100))
	for b.Loop() {
		if _, err := Parse("large.yaml", data, false); err != nil {
			b.Fatal(err)
		}
	}
}
