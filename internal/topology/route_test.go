package topology

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/scenario"
)

// garrYAML is the design's worked example 1 (issue 33): sites hanging off
// a GARR-like backbone of four routers, and one explicit route.
const garrYAML = `
name: garr-backbone
routing: delay
reroute: 2s
routers:
  mi: {}
  bo: {}
  rm: {addr: 193.206.0.1}
  na: {}
links:
  - {between: [mi, bo], rate: 155Mbit, delay: 2ms}
  - {between: [bo, rm], rate: 155Mbit, delay: 3ms}
  - {between: [rm, na], rate: 155Mbit, delay: 2ms}
  - {between: [mi, rm], rate: 622Mbit, delay: 6ms}
sites:
  cnaf:     {via: bo, rate: 1024Mbit, delay: 1ms}
  torino:   {via: mi, rate: 155Mbit, delay: 2ms}
  padova:   {via: mi, rate: 155Mbit, delay: 2ms}
  bari:     {via: na, rate: 28Mbit, delay: 3ms}
  catania:  {via: na, rate: 34Mbit, delay: 4ms}
  cagliari: {via: rm, delay: 4ms, up: {rate: 8Mbit}, down: {rate: 8Mbit}}
  bologna:  {via: bo, rate: 32Mbit, delay: 1ms}
  trieste:  {via: mi, rate: 16Mbit, delay: 3ms}
hosts: {cnaf: {site: cnaf}, torino: {site: torino}, bari: {site: bari}}
routes:
  - {from: bari, to: cnaf, via: [na, rm, mi, bo]}
`

// ringYAML is three routers in a ring, a short way round (r1, r2, r3)
// and a long one (r1, r3), with a host at each end.
const ringYAML = `
name: ring
routing: %s
routers: {r1: {}, r2: {}, r3: {}}
hosts: {a: {}, b: {}}
links:
  - {between: [a, r1], rate: 100Mbit, delay: 1ms}
  - {between: [r1, r2], rate: 50Mbit, delay: 1ms}
  - {between: [r2, r3], delay: 1ms}
  - {between: [r1, r3], rate: 1Gbit, delay: 5ms}
  - {between: [r3, b], rate: 100Mbit, delay: 1ms}
%s`

func build(t *testing.T, name, text string) *Topology {
	t.Helper()
	f, err := scenario.Parse(name, []byte(text), false)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func mustPath(t *testing.T, topo *Topology, from, to string) Path {
	t.Helper()
	p, ok := topo.Path(from, to)
	if !ok {
		t.Fatalf("no path %s -> %s", from, to)
	}
	return p
}

// TestRoutedPaths checks the garr example: routers with their addresses
// and links, directions' ends and entries, and each path's directions,
// nodes, way back, base RTT, bottleneck direction and how it was chosen.
func TestRoutedPaths(t *testing.T) {
	topo := build(t, "garr.yaml", garrYAML)
	wantRouters := []Router{
		{Name: "mi", Addr: "10.251.0.1", Links: []string{"mi->bo", "mi->rm", "site torino down", "site padova down", "site trieste down"}},
		{Name: "bo", Addr: "10.251.0.2", Links: []string{"bo->mi", "bo->rm", "site cnaf down", "site bologna down"}},
		{Name: "rm", Addr: "193.206.0.1", Links: []string{"rm->bo", "rm->na", "rm->mi", "site cagliari down"}},
		{Name: "na", Addr: "10.251.0.3", Links: []string{"na->rm", "site bari down", "site catania down"}},
	}
	for i, w := range wantRouters {
		if g := topo.Routers[i]; g.Name != w.Name || g.Addr != w.Addr || !slices.Equal(g.Links, w.Links) {
			t.Errorf("router %d: %+v, want %+v", i, g, w)
		}
	}
	if topo.Routing != "delay" || len(topo.Unreachable) != 0 {
		t.Errorf("routing %q, unreachable %v", topo.Routing, topo.Unreachable)
	}
	dirs := []struct{ name, from, to, entry string }{
		{"mi->bo", "mi", "bo", "10.251.0.1"},
		{"site cnaf up", "site cnaf", "bo", ""},
		{"site cnaf down", "bo", "site cnaf", "10.251.0.2"},
		{"rm->na", "rm", "na", "193.206.0.1"},
	}
	for _, w := range dirs {
		if d, ok := topo.Direction(w.name); !ok || d.From != w.from || d.To != w.to || d.Entry != w.entry {
			t.Errorf("direction %s: %+v, want from %s to %s entry %q", w.name, d, w.from, w.to, w.entry)
		}
	}
	tests := []struct {
		from, to   string
		via, nodes []string
		route      string
		rttMs      float64
		bottleneck string
	}{
		{"bari", "cnaf", []string{"site bari up", "na->rm", "rm->mi", "mi->bo", "site cnaf down"},
			[]string{"bari", "site bari", "na", "rm", "mi", "bo", "site cnaf", "cnaf"}, "explicit", 23, "site bari up"},
		{"cnaf", "bari", []string{"site cnaf up", "bo->rm", "rm->na", "site bari down"},
			[]string{"cnaf", "site cnaf", "bo", "rm", "na", "site bari", "bari"}, "delay", 23, "site bari down"},
		{"torino", "cnaf", []string{"site torino up", "mi->bo", "site cnaf down"},
			[]string{"torino", "site torino", "mi", "bo", "site cnaf", "cnaf"}, "delay", 10, "site torino up"},
		// By delay the long way: mi, bo, rm, na (7 ms) beats mi, rm, na (8 ms).
		{"torino", "bari", []string{"site torino up", "mi->bo", "bo->rm", "rm->na", "site bari down"},
			[]string{"torino", "site torino", "mi", "bo", "rm", "na", "site bari", "bari"}, "delay", 24, "site bari down"},
	}
	for _, tt := range tests {
		p := mustPath(t, topo, tt.from, tt.to)
		back := mustPath(t, topo, tt.to, tt.from)
		if !slices.Equal(p.Via, tt.via) || !slices.Equal(p.Nodes, tt.nodes) || p.Route != tt.route {
			t.Errorf("%s -> %s: via %v nodes %v route %s, want %v %v %s", tt.from, tt.to, p.Via, p.Nodes, p.Route, tt.via, tt.nodes, tt.route)
		}
		if !slices.Equal(p.Back, back.Via) || p.BaseRTTms != tt.rttMs || p.BottleneckDir != tt.bottleneck || p.MTU != 1500 {
			t.Errorf("%s -> %s: back %v (want %v), rtt %v ms (want %v), bottleneck %q (want %q), mtu %d",
				tt.from, tt.to, p.Back, back.Via, p.BaseRTTms, tt.rttMs, p.BottleneckDir, tt.bottleneck, p.MTU)
		}
	}
	// The engine's table agrees with the paths.
	table := topo.PathTable()
	for _, p := range topo.Paths {
		var names []string
		for _, d := range table[[2]int{hostIndex(topo, p.From), hostIndex(topo, p.To)}] {
			names = append(names, topo.Dirs[d].Name)
		}
		if !slices.Equal(names, p.Via) {
			t.Errorf("%s: the engine's table says %v, the path %v", p.Name(), names, p.Via)
		}
	}
}

func hostIndex(topo *Topology, name string) int {
	return slices.IndexFunc(topo.Hosts, func(h Host) bool { return h.Name == name })
}

// TestExplicitAsymmetric checks routes: given one way only, and both ways
// differently, under either routing: there and back differ, and each
// path's base RTT is its way there plus the other's.
func TestExplicitAsymmetric(t *testing.T) {
	tests := []struct {
		name, routing, routes string
		ab, ba                []string // nodes
		abRoute, baRoute      string
	}{
		{"by delay", "delay", "", []string{"a", "r1", "r2", "r3", "b"}, []string{"b", "r3", "r2", "r1", "a"}, "delay", "delay"},
		{"by hops", "hops", "", []string{"a", "r1", "r3", "b"}, []string{"b", "r3", "r1", "a"}, "hops", "hops"},
		{"one way given", "delay", "routes: [{from: b, to: a, via: [r3, r1]}]",
			[]string{"a", "r1", "r2", "r3", "b"}, []string{"b", "r3", "r1", "a"}, "delay", "explicit"},
		{"both ways given", "hops", "routes: [{from: a, to: b, via: [r1, r2, r3]}, {from: b, to: a, via: [r3, r1]}]",
			[]string{"a", "r1", "r2", "r3", "b"}, []string{"b", "r3", "r1", "a"}, "explicit", "explicit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := build(t, "ring.yaml", fmt.Sprintf(ringYAML, tt.routing, tt.routes))
			ab, ba := mustPath(t, topo, "a", "b"), mustPath(t, topo, "b", "a")
			if !slices.Equal(ab.Nodes, tt.ab) || !slices.Equal(ba.Nodes, tt.ba) || ab.Route != tt.abRoute || ba.Route != tt.baRoute {
				t.Errorf("a -> b %v (%s), b -> a %v (%s); want %v (%s), %v (%s)", ab.Nodes, ab.Route, ba.Nodes, ba.Route, tt.ab, tt.abRoute, tt.ba, tt.baRoute)
			}
			if !slices.Equal(ab.Back, ba.Via) || !slices.Equal(ba.Back, ab.Via) || ab.BaseRTTms != ba.BaseRTTms {
				t.Errorf("a -> b %+v and b -> a %+v: each one's way back is the other's way there", ab, ba)
			}
			var rtt time.Duration
			for _, n := range append(slices.Clone(ab.Via), ba.Via...) {
				d, _ := topo.Direction(n)
				rtt += d.Config.Delay
			}
			if ab.BaseRTTms != float64(rtt)/float64(time.Millisecond) {
				t.Errorf("base RTT %v ms, want %v", ab.BaseRTTms, rtt)
			}
		})
	}
	// The bottleneck is the first direction of the lowest rate: r1->r2
	// (50 Mbit/s) by delay, a->r1 (100 Mbit/s, before r3->b) by hops.
	for routing, want := range map[string]string{"delay": "r1->r2", "hops": "a->r1"} {
		if p := mustPath(t, build(t, "ring.yaml", fmt.Sprintf(ringYAML, routing, "")), "a", "b"); p.BottleneckDir != want {
			t.Errorf("by %s: bottleneck %q, want %q", routing, p.BottleneckDir, want)
		}
	}
}

// TestDirectionPaths checks that every direction lists the paths that
// cross it, in path order, and that the lookups work on a topology read
// back from JSON, as the test-bed's state gives it.
func TestDirectionPaths(t *testing.T) {
	for name, text := range map[string]string{"garr.yaml": garrYAML, "sites.yaml": sitesYAML} {
		topo := build(t, name, text)
		for _, d := range topo.Dirs {
			var want []string
			for _, p := range topo.Paths {
				if slices.Contains(p.Via, d.Name) {
					want = append(want, p.Name())
				}
			}
			if !slices.Equal(d.Paths, want) || d.Paths == nil {
				t.Errorf("%s: %s lists %v, want %v", name, d.Name, d.Paths, want)
			}
		}
	}
	topo := build(t, "garr.yaml", garrYAML)
	if d, _ := topo.Direction("bo->rm"); !slices.Equal(d.Paths, []string{"cnaf -> bari", "torino -> bari"}) {
		t.Errorf("bo->rm lists %v", d.Paths)
	}
	data, err := json.Marshal(topo)
	if err != nil {
		t.Fatal(err)
	}
	for _, maps := range []bool{false, true} {
		var back Topology
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if maps {
			back.WithLookups()
		}
		if p, ok := back.Path("bari", "cnaf"); !ok || p.Route != "explicit" || len(p.Nodes) != 8 {
			t.Errorf("decoded (maps %v): bari -> cnaf %+v %v", maps, p, ok)
		}
		if _, ok := back.Direction("na->rm"); !ok {
			t.Errorf("decoded (maps %v): no direction na->rm", maps)
		}
		if h, ok := back.Host("bari"); !ok || h.Addr != "10.250.0.3" {
			t.Errorf("decoded (maps %v): host bari %+v %v", maps, h, ok)
		}
		if _, ok := back.Path("bari", "nowhere"); ok {
			t.Errorf("decoded (maps %v): a path to no host", maps)
		}
		// The lookups follow changes to the slices.
		back.Dirs[0], back.Dirs[1] = back.Dirs[1], back.Dirs[0]
		if d, ok := back.Direction("mi->bo"); !ok || d.Name != "mi->bo" {
			t.Errorf("decoded (maps %v): after a swap: %+v %v", maps, d, ok)
		}
		back.Paths = back.Paths[:1]
		if _, ok := back.Path("bari", "cnaf"); ok {
			t.Errorf("decoded (maps %v): a path removed is still found", maps)
		}
		if back.Reroute([]bool{true}) != nil || back.Joined() != nil {
			t.Error("a decoded topology rerouted: it has no graph")
		}
	}
}

// names lists the directions of a change.
func names(topo *Topology, c PathChange) string {
	var out []string
	for _, d := range c.Dirs {
		out = append(out, topo.Dirs[d].Name)
	}
	return topo.Hosts[c.From].Name + " -> " + topo.Hosts[c.To].Name + ": " + strings.Join(out, ", ")
}

// TestReroute checks that a direction down moves the routed pairs that
// cross it to their next best path, and back when it comes up, while
// explicit routes and pairs with no other way keep theirs.
func TestReroute(t *testing.T) {
	topo := build(t, "garr.yaml", garrYAML)
	dir := func(name string) int {
		return slices.IndexFunc(topo.Dirs, func(d Direction) bool { return d.Name == name })
	}
	down := make([]bool, len(topo.Dirs))
	down[dir("mi->bo")] = true
	var got []string
	for _, c := range topo.Reroute(down) {
		got = append(got, names(topo, c))
	}
	want := []string{
		"torino -> cnaf: site torino up, mi->rm, rm->bo, site cnaf down",
		"torino -> bari: site torino up, mi->rm, rm->na, site bari down",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mi->bo down: %q, want %q", got, want)
	}
	p, back := mustPath(t, topo, "torino", "cnaf"), mustPath(t, topo, "cnaf", "torino")
	if !slices.Equal(p.Nodes, []string{"torino", "site torino", "mi", "rm", "bo", "site cnaf", "cnaf"}) || p.BaseRTTms != 17 || back.BaseRTTms != 17 ||
		!slices.Equal(back.Back, p.Via) || p.Route != "delay" {
		t.Errorf("torino -> cnaf after the reroute: %+v, back %+v", p, back)
	}
	if d, _ := topo.Direction("mi->bo"); !slices.Equal(d.Paths, []string{"bari -> cnaf"}) {
		t.Errorf("mi->bo lists %v: only the explicit route keeps crossing it", d.Paths)
	}
	if c := topo.Reroute(down); c != nil {
		t.Errorf("the same directions down again: %v", c)
	}
	// The cnaf access down: nothing else reaches cnaf, so nothing moves.
	down[dir("site cnaf down")] = true
	if c := topo.Reroute(down); c != nil {
		t.Errorf("site cnaf down: %v, want no change", c)
	}
	got = nil
	for _, c := range topo.Reroute(nil) {
		got = append(got, names(topo, c))
	}
	want = []string{
		"torino -> cnaf: site torino up, mi->bo, site cnaf down",
		"torino -> bari: site torino up, mi->bo, bo->rm, rm->na, site bari down",
	}
	if !slices.Equal(got, want) {
		t.Errorf("all up again: %q, want %q", got, want)
	}
	if fresh := build(t, "garr.yaml", garrYAML); !equalJSON(t, fresh, topo) {
		t.Error("all up again, the topology is not what New made")
	}
	// ApplyPaths moves a pair as Reroute would.
	c := PathChange{From: hostIndex(topo, "torino"), To: hostIndex(topo, "cnaf"), Dirs: []int{dir("site torino up"), dir("mi->rm"), dir("rm->bo"), dir("site cnaf down")}}
	if err := topo.ApplyPaths([]PathChange{c}); err != nil {
		t.Fatal(err)
	}
	if p := mustPath(t, topo, "torino", "cnaf"); p.BaseRTTms != 17 {
		t.Errorf("applied: %+v", p)
	}
	if got := topo.Reroute(nil); len(got) != 1 || names(topo, got[0]) != "torino -> cnaf: site torino up, mi->bo, site cnaf down" {
		t.Errorf("rerouted from the applied path: %v", got)
	}
	if err := topo.ApplyPaths([]PathChange{{From: 0, To: 9}}); err == nil {
		t.Error("a change of no pair was applied")
	}
}

func equalJSON(t *testing.T, a, b *Topology) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}

// TestResolvePaths checks that a timeline's direction going down and up
// again reroutes the routed pairs the reroute delay later each time, and
// leaves the topology's paths as they were.
func TestResolvePaths(t *testing.T) {
	topo := build(t, "garr.yaml", garrYAML)
	s := time.Second
	changes := scenario.Expand([]scenario.Event{{Link: "mi<->bo", At: s, Set: []string{"down=true"}, For: 10 * s}})
	got, err := topo.ResolvePaths(changes)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range got {
		if c.Path != nil {
			lines = append(lines, fmt.Sprintf("%v reroute %s", c.At, names(topo, *c.Path)))
		} else {
			lines = append(lines, fmt.Sprintf("%v %s down=%v", c.At, topo.Dirs[c.Dir].Name, c.Config.Down))
		}
	}
	want := []string{
		"1s mi->bo down=true",
		"1s bo->mi down=true",
		"3s reroute cnaf -> torino: site cnaf up, bo->rm, rm->mi, site torino down",
		"3s reroute torino -> cnaf: site torino up, mi->rm, rm->bo, site cnaf down",
		"3s reroute torino -> bari: site torino up, mi->rm, rm->na, site bari down",
		"3s reroute bari -> torino: site bari up, na->rm, rm->mi, site torino down",
		"11s mi->bo down=false",
		"11s bo->mi down=false",
		"13s reroute cnaf -> torino: site cnaf up, bo->mi, site torino down",
		"13s reroute torino -> cnaf: site torino up, mi->bo, site cnaf down",
		"13s reroute torino -> bari: site torino up, mi->bo, bo->rm, rm->na, site bari down",
		"13s reroute bari -> torino: site bari up, na->rm, rm->bo, bo->mi, site torino down",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if !equalJSON(t, topo, build(t, "garr.yaml", garrYAML)) {
		t.Error("ResolvePaths changed the topology")
	}
	// A test-bed that never reroutes gets the direction changes alone.
	never := build(t, "garr.yaml", strings.Replace(garrYAML, "reroute: 2s", "reroute: never", 1))
	if got, err := never.ResolvePaths(changes); err != nil || len(got) != 4 {
		t.Errorf("reroute never: %+v %v", got, err)
	}
}

// TestJoined checks the groups of directions reroutes may use: a
// component of routers with every direction into and out of it, and none
// for a test-bed without routers.
func TestJoined(t *testing.T) {
	topo := build(t, "garr.yaml", garrYAML)
	want := make([]int, 2*4+2*8)
	for i := range want {
		want[i] = i
	}
	if got := topo.Joined(); len(got) != 1 || !slices.Equal(got[0], want) {
		t.Errorf("garr: %v, want one group of %v", got, want)
	}
	if got := build(t, "sites.yaml", sitesYAML).Joined(); got != nil {
		t.Errorf("a test-bed without routers: %v", got)
	}
	two := `
name: two
routers: {r1: {}, r2: {}}
hosts: {a: {}, b: {}, c: {}, d: {}}
links:
  - {between: [a, r1]}
  - {between: [b, r1]}
  - {between: [c, r2]}
  - {between: [d, r2]}
  - {between: [a, d]}
`
	if got := build(t, "two.yaml", two).Joined(); !slices.EqualFunc(got, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}, slices.Equal) {
		t.Errorf("two components: %v", got)
	}
}

// TestSizeBounds checks what New refuses before building anything, and a
// routed path longer than a TTL lasts.
func TestSizeBounds(t *testing.T) {
	chain := func(routers int) *scenario.Testbed {
		tb := &scenario.Testbed{Name: "chain", Subnet: netip.MustParsePrefix("10.250.0.0/16")}
		tb.Hosts = []scenario.Host{{Name: "a"}, {Name: "b"}}
		for i := range routers {
			tb.Routers = append(tb.Routers, scenario.Router{Name: fmt.Sprintf("r%d", i)})
			prev := "a"
			if i > 0 {
				prev = fmt.Sprintf("r%d", i-1)
			}
			tb.Links = append(tb.Links, scenario.Link{A: prev, B: fmt.Sprintf("r%d", i)})
		}
		tb.Links = append(tb.Links, scenario.Link{A: fmt.Sprintf("r%d", routers-1), B: "b"})
		return tb
	}
	if topo, err := New(chain(scenario.MaxPathDirs - 1)); err != nil || len(mustPath(t, topo, "a", "b").Via) != scenario.MaxPathDirs {
		t.Errorf("a path of %d directions: %v", scenario.MaxPathDirs, err)
	}
	long := chain(scenario.MaxPathDirs)
	if _, err := New(long); err == nil || !strings.Contains(err.Error(), "crosses 65 directions") {
		t.Errorf("a path of 65 directions: %v", err)
	}
	long.Routes = []scenario.Route{{From: "a", To: "b", Via: make([]string, scenario.MaxPathDirs)}}
	if _, err := New(long); err == nil || !strings.Contains(err.Error(), "the route from a to b crosses 65 directions") {
		t.Errorf("a route of 65 directions: %v", err)
	}
	many := chain(1)
	many.Routers = make([]scenario.Router, scenario.MaxRouters+1)
	if _, err := New(many); err == nil || !strings.Contains(err.Error(), "1025 routers") {
		t.Errorf("too many routers: %v", err)
	}
}

// TestReachMatchesTopology checks, on 200 random test-beds of routers,
// sites (joining a router or the core) and links between any nodes, that
// the scenario's Reachable holds exactly when the topology has a path.
func TestReachMatchesTopology(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 4))
	for n := range 200 {
		tb := randomBed(r)
		topo, err := New(tb)
		if err != nil {
			t.Fatalf("bed %d: %v", n, err)
		}
		unreachable := 0
		for _, a := range tb.Hosts {
			for _, b := range tb.Hosts {
				if a.Name == b.Name {
					continue
				}
				_, routed := topo.Path(a.Name, b.Name)
				if got := tb.Reachable(a.Name, b.Name); got != routed {
					t.Fatalf("bed %d (%+v): Reachable(%s, %s) = %v, the topology has a path: %v", n, tb, a.Name, b.Name, got, routed)
				}
				if !routed {
					unreachable++
				}
			}
		}
		if unreachable != len(topo.Unreachable) {
			t.Errorf("bed %d: %d pairs unreachable, the topology lists %v", n, unreachable, topo.Unreachable)
		}
	}
}

// randomBed is a test-bed of up to 6 routers, 7 hosts and 3 sites, each
// site joining a router or the core, with random links between nodes.
func randomBed(r *rand.Rand) *scenario.Testbed {
	tb := &scenario.Testbed{Name: "random", Subnet: netip.MustParsePrefix("10.250.0.0/16")}
	for i := range r.IntN(7) {
		tb.Routers = append(tb.Routers, scenario.Router{Name: fmt.Sprintf("r%d", i)})
	}
	for i := range r.IntN(4) {
		s := scenario.Site{Name: fmt.Sprintf("s%d", i), Up: scenario.Direction{Delay: time.Millisecond}, Down: scenario.Direction{Delay: time.Millisecond}}
		if len(tb.Routers) > 0 && r.IntN(2) == 0 {
			s.Via = tb.Routers[r.IntN(len(tb.Routers))].Name
		}
		tb.Sites = append(tb.Sites, s)
	}
	for i := range 2 + r.IntN(6) {
		h := scenario.Host{Name: fmt.Sprintf("h%d", i)}
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
		if a == b || linked[[2]string{min(a, b), max(a, b)}] {
			continue
		}
		linked[[2]string{min(a, b), max(a, b)}] = true
		d := scenario.Direction{Delay: time.Duration(1+r.IntN(5)) * time.Millisecond}
		tb.Links = append(tb.Links, scenario.Link{A: a, B: b, Forward: d, Reverse: d})
	}
	return tb
}

// TestLegacyRoutes checks how the paths of a test-bed without routers are
// chosen and which nodes they list, and the pairs it lists unreachable.
func TestLegacyRoutes(t *testing.T) {
	topo := build(t, "sites.yaml", sitesYAML)
	tests := []struct {
		from, to, route string
		nodes           []string
	}{
		{"pd2", "server", "sites", []string{"pd2", "site padova", "site cnaf", "server"}},
		{"pd1", "server", "link", []string{"pd1", "server"}},
		{"pd1", "pd2", "lan", []string{"pd1", "site padova", "pd2"}},
		{"mi1", "mi2", "lan", []string{"mi1", "site milano", "mi2"}},
	}
	for _, tt := range tests {
		if p := mustPath(t, topo, tt.from, tt.to); p.Route != tt.route || !slices.Equal(p.Nodes, tt.nodes) {
			t.Errorf("%s -> %s: route %s nodes %v, want %s %v", tt.from, tt.to, p.Route, p.Nodes, tt.route, tt.nodes)
		}
	}
	if d, _ := topo.Direction("site cnaf up"); d.From != "site cnaf" || d.To != "core" || d.Entry != "" {
		t.Errorf("site cnaf up: %+v", d)
	}
	if topo.Routing != "" || len(topo.Routers) != 0 || !slices.Contains(topo.Unreachable, Unreachable{"solo", "pd1"}) || len(topo.Unreachable) != 8 {
		t.Errorf("routing %q, routers %v, unreachable %v", topo.Routing, topo.Routers, topo.Unreachable)
	}
	if c := topo.Reroute(make([]bool, len(topo.Dirs))); c != nil {
		t.Errorf("a reroute without routers: %v", c)
	}
}

// BenchmarkNewLargeGraph times the topology of the target: 200
// routers, 400 links and 100 hosts, 9,900 routed pairs (under 100 ms).
func BenchmarkNewLargeGraph(b *testing.B) {
	tb := largeBed(200, 400, 100)
	for b.Loop() {
		if _, err := New(tb); err != nil {
			b.Fatal(err)
		}
	}
}

// largeBed is routers routers in a ring with chords (links links between
// them) and hosts hosts, each linked to one.
func largeBed(routers, links, hosts int) *scenario.Testbed {
	tb := &scenario.Testbed{Name: "large", Subnet: netip.MustParsePrefix("10.250.0.0/16")}
	for i := range routers {
		tb.Routers = append(tb.Routers, scenario.Router{Name: fmt.Sprintf("r%d", i)})
	}
	for i := range hosts {
		tb.Hosts = append(tb.Hosts, scenario.Host{Name: fmt.Sprintf("h%d", i)})
	}
	seen := map[[2]int]bool{}
	for i := 0; len(seen) < links; i++ {
		a, c := i%routers, (i*7+1+i/routers)%routers
		if a == c || seen[[2]int{min(a, c), max(a, c)}] {
			continue
		}
		seen[[2]int{min(a, c), max(a, c)}] = true
		d := scenario.Direction{Rate: 1e9, Delay: time.Duration(100+(a*31+c*17)%900) * time.Microsecond, MTU: 1500}
		tb.Links = append(tb.Links, scenario.Link{A: fmt.Sprintf("r%d", a), B: fmt.Sprintf("r%d", c), Forward: d, Reverse: d})
	}
	for i := range hosts {
		d := scenario.Direction{Rate: 1e8, Delay: time.Millisecond, MTU: 1500}
		tb.Links = append(tb.Links, scenario.Link{A: fmt.Sprintf("h%d", i), B: fmt.Sprintf("r%d", (i*2)%routers), Forward: d, Reverse: d})
	}
	return tb
}

// TestAccessBPS: a host's site access rate is the lower of its directions,
// an unlimited direction counting for nothing; 0 without a site or a limit.
func TestAccessBPS(t *testing.T) {
	topo := build(t, "access", `name: access
sites:
  s: {rate: 100Mbit, delay: 1ms, up: {rate: 20Mbit}}
  half: {delay: 1ms, down: {rate: 5Mbit}}
  free: {delay: 1ms}
hosts:
  a: {site: s}
  b: {site: half}
  c: {site: free}
  d: {}
links:
  - {between: [d, a], rate: 30Mbit}
`)
	for host, want := range map[string]float64{"a": 20e6, "b": 5e6, "c": 0, "d": 0, "nowhere": 0} {
		if got := topo.AccessBPS(host); got != want {
			t.Errorf("AccessBPS(%s) = %v, want %v", host, got, want)
		}
	}
}
