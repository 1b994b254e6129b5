// Package topology resolves a scenario's test-bed into what every backend
// shares: the hosts with their addresses and routes, the routers, the
// link directions, and the end-to-end path between every ordered pair of
// hosts, computed once (and again when directions go down, by Reroute).
// It holds no operating-system code: the emulated test-bed builds it, real
// hosts are measured against it as the expected path, and the analysis of
// an old run reads it from the stored scenario.
package topology

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/wanlab/wanlab/internal/scenario"
)

// TCPIPHeader is what IPv4 and TCP headers with timestamps take of every
// full packet: the TCP payload of a packet is its size less this.
const TCPIPHeader = 52

// Topology is a test-bed resolved into hosts, routers, directions and
// paths. Its lookups (Host, Path, Direction) go through maps built on
// first use (WithLookups gives a Topology made as a literal its own), and
// built again when a slice changes length or an element is not where they
// say (an element renamed in place is not followed); a Topology made by New
// also holds the test-bed's graph, which Reroute, ResolvePaths and Joined
// route on.
type Topology struct {
	Name    string      `json:"name"`
	Hosts   []Host      `json:"hosts"`
	Routers []Router    `json:"routers,omitempty"`
	Dirs    []Direction `json:"directions"`
	// Paths are every reachable ordered pair of hosts, in host order.
	Paths []Path `json:"paths"`
	// Routing is how pairs of hosts that no link, site LAN or route joins
	// are routed (scenario.RoutingDelay or RoutingHops), when the test-bed
	// has routers.
	Routing string `json:"routing,omitempty"`
	// Unreachable are the ordered pairs of hosts with no path, in host order.
	Unreachable []Unreachable `json:"unreachable,omitempty"`

	// lk holds the lookups' maps. A Topology made by New has it; one made
	// as a literal has not until WithLookups, and its lookups scan.
	lk *lookups
	// routes is the graph and the routed pairs; nil unless made by New.
	// Copies of a Topology share both.
	routes *routes
}

// Host is one host: its address, CPU quota, site, disk caps, and its
// routes to the hosts it can reach, each with the path's MTU.
type Host struct {
	Name string `json:"name"`
	// Addr is the host's address: its IPv4 address, or on an IPv6-only
	// test-bed its IPv6 address.
	Addr string `json:"addr"`
	// Addr6 is its IPv6 address, "" on a test-bed of IPv4 alone.
	Addr6 string  `json:"addr6,omitempty"`
	CPUs  float64 `json:"cpus,omitempty"`
	Site  string  `json:"site,omitempty"`
	// MTU is the device MTU: the largest path MTU of the host's routes.
	MTU    int     `json:"mtu"`
	Routes []Route `json:"routes"`
	// Sysctl are network sysctls set in the host.
	Sysctl map[string]string `json:"sysctl,omitempty"`
	// DiskReadBps and DiskWriteBps cap the host's disk (0: no cap).
	DiskReadBps  int64 `json:"disk_read_bps,omitempty"`
	DiskWriteBps int64 `json:"disk_write_bps,omitempty"`
}

// DiskCapped says whether the host's disk has a read or write cap.
func (h Host) DiskCapped() bool { return h.DiskReadBps > 0 || h.DiskWriteBps > 0 }

// HasIPv6 says whether the hosts have IPv6 addresses.
func (t *Topology) HasIPv6() bool { return len(t.Hosts) > 0 && t.Hosts[0].Addr6 != "" }

// Hop6 is the IPv6 address of a hop (scenario hops:, which names IPv4
// addresses) on a test-bed whose hosts have IPv6: the IPv4 address in
// the last 32 bits of scenario.RouterSubnet6 (fd77:616e:6c61:ff::c000:201
// for 192.0.2.1), so that traceroute -6 lists the hops too, each at an
// address that tells which it is. Routers' own are small numbers there.
func Hop6(hop netip.Addr) netip.Addr {
	b := scenario.RouterSubnet6.Addr().As16()
	v4 := hop.Unmap().As4()
	copy(b[12:], v4[:])
	return netip.AddrFrom16(b)
}

// IP returns a host's address.
func (h Host) IP() netip.Addr { return netip.MustParseAddr(h.Addr) }

// Route is a host route to a peer.
type Route struct {
	Peer string `json:"peer"`
	Addr string `json:"addr"`
	// Addr6 is the peer's IPv6 address, "" on a test-bed of IPv4 alone.
	Addr6 string `json:"addr6,omitempty"`
	MTU   int    `json:"mtu"`
}

// Router is a node that forwards between the directions it joins: it
// decrements packets' TTL and answers ICMP errors from Addr.
type Router struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// Links are the names of the directions out of it, in direction order.
	Links []string `json:"links"`
	// Addr6 is its IPv6 address (in scenario.RouterSubnet6), "" on a
	// test-bed of IPv4 alone.
	Addr6 string `json:"addr6,omitempty"`
}

// Direction is one link direction.
type Direction struct {
	Name   string             `json:"name"`
	Config scenario.Direction `json:"config"`
	// From and To are the nodes it joins: a host, a router, "site x" or
	// "core" (where the sites without a router meet).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Entry is the address of the router that forwards packets into it,
	// "" if it leaves a host or a site.
	Entry string `json:"entry,omitempty"`
	// Entry6 is that router's IPv6 address on a test-bed whose hosts
	// have IPv6 (its hops' are Hop6 of theirs).
	Entry6 string `json:"entry6,omitempty"`
	// Paths are the paths that cross it ("a -> b"), in path order.
	Paths []string `json:"paths"`
}

// The ways a pair of hosts gets its path (Path.Route).
const (
	RouteLink     = "link"     // a link joins the two hosts
	RouteLAN      = "lan"      // the two hosts share a site
	RouteSites    = "sites"    // the sites' access links and the perfect core, through no router
	RouteExplicit = "explicit" // routes: lists the pair
	// The routed pairs take the Topology's Routing ("delay" or "hops").
)

// Path is the route a packet takes from one host to another.
type Path struct {
	From string   `json:"from"`
	To   string   `json:"to"`
	Via  []string `json:"via"` // direction names, in order; empty for a perfect switch
	// Bottleneck is the lowest rate on the way in bit/s (0: unlimited).
	Bottleneck float64 `json:"bottleneck_bps"`
	// BaseRTTms is the round trip of the propagation delays there and back, in ms.
	BaseRTTms float64 `json:"base_rtt_ms"`
	MTU       int     `json:"mtu"`
	// Back lists the directions of the way back, to time a round trip.
	Back []string `json:"back"`
	// Loss is the probability that a packet is lost on the way there: one
	// less the product of each direction's mean delivery.
	Loss float64 `json:"loss"`
	// Nodes are the nodes crossed, ends included: sites as "site x"; the
	// core is not listed.
	Nodes []string `json:"nodes"`
	// BottleneckDir is the first direction with the lowest rate; "" if no
	// direction has a rate.
	BottleneckDir string `json:"bottleneck_dir,omitempty"`
	// Route is how the path was chosen: RouteLink, RouteLAN, RouteSites,
	// RouteExplicit or the test-bed's routing ("delay", "hops").
	Route string `json:"route"`
}

// Name is how directions list the path: "a -> b".
func (p Path) Name() string { return p.From + " -> " + p.To }

// Unreachable is an ordered pair of hosts with no path.
type Unreachable struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// TCPCeiling is the most TCP payload the path can carry in bit/s: the
// bottleneck rate times the share of each full packet that is payload.
// 0 means unlimited.
func (p Path) TCPCeiling() float64 {
	return p.Bottleneck * float64(p.MTU-TCPIPHeader) / float64(p.MTU)
}

// IdleRTT is the round trip of one packet of size bytes each way on an
// idle path: propagation there and back plus serialisation on every direction.
func (t *Topology) IdleRTT(p Path, size int) time.Duration {
	rtt := time.Duration(p.BaseRTTms * float64(time.Millisecond))
	for _, names := range [][]string{p.Via, p.Back} {
		for _, name := range names {
			if d, ok := t.Direction(name); ok && d.Config.Rate > 0 {
				rtt += time.Duration(float64(size*8) / float64(d.Config.Rate) * float64(time.Second))
			}
		}
	}
	return rtt
}

// lookups holds the maps of a Topology's lookups, built on first use and
// again when they are stale; copies of a Topology share it.
type lookups struct{ p atomic.Pointer[index] }

// index is where each host, direction and path is.
type index struct {
	hosts, dirs, paths int // the lengths it was built for
	host               map[string]int
	dir                map[string]int
	path               map[[2]string]int
}

// WithLookups gives t maps for its lookups, if it has none (it was made
// as a literal), and returns it: call it before t is shared, as New does.
func (t *Topology) WithLookups() *Topology {
	if t.lk == nil {
		t.lk = new(lookups)
	}
	return t
}

// newIndex maps the names of t's hosts, directions and paths.
func newIndex(t *Topology) *index {
	x := &index{hosts: len(t.Hosts), dirs: len(t.Dirs), paths: len(t.Paths),
		host: make(map[string]int, len(t.Hosts)), dir: make(map[string]int, len(t.Dirs)), path: make(map[[2]string]int, len(t.Paths))}
	for i, h := range t.Hosts {
		x.host[h.Name] = i
	}
	for i, d := range t.Dirs {
		x.dir[d.Name] = i
	}
	for i, p := range t.Paths {
		x.path[[2]string{p.From, p.To}] = i
	}
	return x
}

// lookup returns t's maps, built anew if there are none yet, the slices
// have changed length, or fresh is set (a name was not where they said).
func (t *Topology) lookup(fresh bool) *index {
	if x := t.lk.p.Load(); x != nil && !fresh && x.hosts == len(t.Hosts) && x.dirs == len(t.Dirs) && x.paths == len(t.Paths) {
		return x
	}
	x := newIndex(t)
	t.lk.p.Store(x)
	return x
}

// find is the index of the element of key (among n) in the map get picks
// from t's lookups, which ok checks; the maps are rebuilt once if that
// element is not the one (the slices changed behind them). Without maps
// it scans with ok. It is -1 if there is none.
func find[K comparable](t *Topology, get func(*index) map[K]int, key K, n int, ok func(int) bool) int {
	if t.lk == nil {
		for i := range n {
			if ok(i) {
				return i
			}
		}
		return -1
	}
	i, found := get(t.lookup(false))[key]
	if found && !ok(i) {
		i, found = get(t.lookup(true))[key]
	}
	if !found || !ok(i) {
		return -1
	}
	return i
}

// Host returns the host of that name.
func (t *Topology) Host(name string) (Host, bool) {
	i := find(t, func(x *index) map[string]int { return x.host }, name, len(t.Hosts),
		func(i int) bool { return i < len(t.Hosts) && t.Hosts[i].Name == name })
	if i < 0 {
		return Host{}, false
	}
	return t.Hosts[i], true
}

// Path returns the path from one host to another, if there is one.
func (t *Topology) Path(from, to string) (Path, bool) {
	i := find(t, func(x *index) map[[2]string]int { return x.path }, [2]string{from, to}, len(t.Paths),
		func(i int) bool { return i < len(t.Paths) && t.Paths[i].From == from && t.Paths[i].To == to })
	if i < 0 {
		return Path{}, false
	}
	return t.Paths[i], true
}

// Direction returns the link direction of that name.
func (t *Topology) Direction(name string) (Direction, bool) {
	i := find(t, func(x *index) map[string]int { return x.dir }, name, len(t.Dirs),
		func(i int) bool { return i < len(t.Dirs) && t.Dirs[i].Name == name })
	if i < 0 {
		return Direction{}, false
	}
	return t.Dirs[i], true
}

// AccessBPS is the rate of a host's site access link in bit/s, which
// every path into or out of the site shares: the lower of its two
// directions' rates; 0 when the host has no site or neither direction is
// limited.
func (t *Topology) AccessBPS(host string) float64 {
	h, ok := t.Host(host)
	if !ok || h.Site == "" {
		return 0
	}
	up, _ := t.Direction("site " + h.Site + " up")
	down, _ := t.Direction("site " + h.Site + " down")
	a, b := float64(up.Config.Rate), float64(down.Config.Rate)
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// PathTable maps {source, destination} host indexes to the indexes of the
// directions crossed, as the packet engine takes it.
func (t *Topology) PathTable() map[[2]int][]int {
	x := newIndex(t)
	out := make(map[[2]int][]int, len(t.Paths))
	for _, p := range t.Paths {
		var hops []int
		for _, name := range p.Via {
			hops = append(hops, x.dir[name])
		}
		out[[2]int{x.host[p.From], x.host[p.To]}] = hops
	}
	return out
}

// isTransparent reports whether a direction changes nothing about a packet.
func isTransparent(d scenario.Direction) bool {
	return d.Rate == 0 && d.Delay == 0 && d.Jitter == 0 && d.Loss.Mean() == 0 && d.Loss.Gilbert == nil
}
