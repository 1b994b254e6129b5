package topology

import (
	"fmt"
	"net/netip"

	"github.com/wanlab/wanlab/internal/routing"
	"github.com/wanlab/wanlab/internal/scenario"
)

// What one topology may hold: each host becomes a namespace, a TUN device,
// a cgroup and an agent on the emulated backend, and each link direction a
// queue in its engine.
const (
	MaxHosts      = 512
	MaxDirections = 16384
)

// MaxSimulatedHosts bounds the hosts of a test-bed that is only simulated
// (backend: simulated): no host is a namespace, but every ordered pair of
// hosts gets a path, made and kept in memory: at 1,000 hosts (a million
// paths) wanlab predict took about 2.3 GB, so at this bound about 9 GB
// (the simulator itself holds up to sim.MaxHosts).
const MaxSimulatedHosts = 2000

// New assigns addresses to hosts and routers, creates the link directions
// and computes the path between every ordered pair of hosts: the link
// between them if there is one, else the site LAN for two hosts at one
// site, else the route routes: gives the pair, else the best path on the
// test-bed's graph (scenario.Testbed.Graph) by its routing, one search
// per source host. Hosts with none of these cannot reach each other.
func New(tb *scenario.Testbed) (*Topology, error) {
	if err := checkSize(tb); err != nil {
		return nil, err
	}
	t := (&Topology{Name: tb.Name}).WithLookups()
	if len(tb.Routers) > 0 {
		t.Routing = tb.Routing
		if t.Routing == "" {
			t.Routing = scenario.RoutingDelay
		}
	}
	if err := t.addHosts(tb); err != nil {
		return nil, err
	}
	t.addRouters(tb)
	t.addDirections(tb)
	r, err := newRoutes(tb)
	if err != nil {
		return nil, err
	}
	t.routes = r
	pairs, err := t.pairs(tb)
	if err != nil {
		return nil, err
	}
	t.hostRoutes(tb, pairs)
	t.Paths = t.paths(pairs)
	t.listPaths()
	return t, nil
}

// addHosts gives each host the next address of the subnet (and of
// subnet6, if the hosts have IPv6), in file order.
func (t *Topology) addHosts(tb *scenario.Testbed) error {
	addr, addr6 := tb.Subnet.Addr(), tb.Subnet6.Addr()
	for _, h := range tb.Hosts {
		host := Host{Name: h.Name, CPUs: h.CPUs, Site: h.Site, Sysctl: h.Sysctl}
		if tb.HasIPv6() {
			if addr6 = addr6.Next(); !tb.Subnet6.Contains(addr6) {
				return fmt.Errorf("subnet6 %s has no address for host %s", tb.Subnet6, h.Name)
			}
			host.Addr, host.Addr6 = addr6.String(), addr6.String()
		}
		if tb.HasIPv4() {
			if addr = addr.Next(); !tb.Subnet.Contains(addr) {
				return fmt.Errorf("subnet %s has no address for host %s", tb.Subnet, h.Name)
			}
			host.Addr = addr.String()
		}
		if h.Disk != nil {
			host.DiskReadBps, host.DiskWriteBps = h.Disk.ReadBps, h.Disk.WriteBps
		}
		t.Hosts = append(t.Hosts, host)
	}
	return nil
}

// addRouters lists the routers with their addresses: the one given, else
// (a test-bed validation did not fill in) the next free one of
// scenario.RouterSubnet, in file order.
func (t *Topology) addRouters(tb *scenario.Testbed) {
	used := map[netip.Addr]bool{}
	for _, r := range tb.Routers {
		used[r.Addr] = true
	}
	next, next6 := scenario.RouterSubnet.Addr(), scenario.RouterSubnet6.Addr()
	for _, r := range tb.Routers {
		addr := r.Addr
		if !addr.IsValid() {
			for next = next.Next(); used[next]; next = next.Next() {
			}
			addr, used[next] = next, true
		}
		rt := Router{Name: r.Name, Addr: addr.String(), Links: []string{}}
		if tb.HasIPv6() {
			next6 = next6.Next()
			rt.Addr6 = next6.String()
		}
		t.Routers = append(t.Routers, rt)
	}
}

// addDirections makes the directions of the links (links[i] gives 2i and
// 2i+1) and of the sites' access links (up, then down), numbered as the
// test-bed's graph numbers them; site LAN directions come later, per pair.
func (t *Topology) addDirections(tb *scenario.Testbed) {
	for _, l := range tb.Links {
		t.addDir(l.A+"->"+l.B, l.A, l.B, l.Forward)
		t.addDir(l.B+"->"+l.A, l.B, l.A, l.Reverse)
	}
	for _, s := range tb.Sites {
		site, at := "site "+s.Name, "core"
		if s.Via != "" {
			at = s.Via
		}
		t.addDir(site+" up", site, at, s.Up)
		t.addDir(site+" down", at, site, s.Down)
	}
}

// addDir appends a direction from node from to node to and returns its
// index; a direction out of a router takes the router's address as its
// entry and is listed among the router's links.
func (t *Topology) addDir(name, from, to string, c scenario.Direction) int {
	d := Direction{Name: name, Config: c, From: from, To: to, Paths: []string{}}
	for i := range t.Routers {
		if r := &t.Routers[i]; r.Name == from {
			d.Entry, d.Entry6 = r.Addr, r.Addr6
			r.Links = append(r.Links, name)
			break
		}
	}
	t.Dirs = append(t.Dirs, d)
	return len(t.Dirs) - 1
}

// hostRoutes gives each host a route to every peer it reaches, with the
// path's MTU (the site LAN's for a direct path), and its device MTU.
func (t *Topology) hostRoutes(tb *scenario.Testbed, pairs map[[2]int]pairPath) {
	lans := map[string]scenario.Direction{}
	for _, s := range tb.Sites {
		lans[s.Name] = s.LAN
	}
	for i := range t.Hosts {
		h := &t.Hosts[i]
		for j, peer := range t.Hosts {
			path, ok := pairs[[2]int{i, j}]
			if !ok {
				continue
			}
			mtu := lans[h.Site].MTU
			if len(path.dirs) > 0 {
				mtu = pathMTU(t.Dirs, path.dirs)
			}
			h.Routes = append(h.Routes, Route{Peer: peer.Name, Addr: peer.Addr, Addr6: peer.Addr6, MTU: mtu})
			h.MTU = max(h.MTU, mtu)
		}
		if h.MTU == 0 {
			h.MTU = scenario.DefaultMTU
		}
	}
}

// pathMTU is the smallest MTU of the directions ids of dirs.
func pathMTU(dirs []Direction, ids []int) int {
	mtu := scenario.MaxMTU
	for _, d := range ids {
		mtu = min(mtu, dirs[d].Config.MTU)
	}
	return mtu
}

// checkSize refuses a topology beyond what one machine can hold before any
// of it is built: the hosts, the routers, the explicit routes and their
// lengths, the graph (with routers), and the link directions (a site LAN has one per
// ordered pair of its hosts), counted without making them. The pairs of
// hosts, and so the paths, are bounded by MaxHosts (MaxSimulatedHosts for a
// test-bed that is only simulated); a routed path's
// length (scenario.MaxPathDirs) is known once it is found, and New
// refuses it then.
func checkSize(tb *scenario.Testbed) error {
	if n := len(tb.Hosts); tb.Simulated() && n > MaxSimulatedHosts {
		return fmt.Errorf("test-bed %q has %d hosts: a simulated test-bed holds at most %d (every ordered pair of hosts has a path)", tb.Name, n, MaxSimulatedHosts)
	} else if !tb.Simulated() && n > MaxHosts {
		return fmt.Errorf("test-bed %q has %d hosts: one machine holds at most %d (each is a namespace, a TUN device, a cgroup and an agent); to predict a larger one, give it backend: simulated and run wanlab predict", tb.Name, n, MaxHosts)
	}
	if n := len(tb.Routers); n > scenario.MaxRouters {
		return fmt.Errorf("test-bed %q has %d routers: at most %d", tb.Name, n, scenario.MaxRouters)
	}
	if n := len(tb.Routes); n > scenario.MaxRoutes {
		return fmt.Errorf("test-bed %q has %d routes: at most %d", tb.Name, n, scenario.MaxRoutes)
	}
	for _, r := range tb.Routes {
		// A route through n routers crosses n+1 directions: from the
		// source (its link or its site's access) to the first router,
		// between routers, and from the last to the destination.
		if n := len(r.Via) + 1; n > scenario.MaxPathDirs {
			return fmt.Errorf("test-bed %q: the route from %s to %s crosses %d directions: at most %d (a packet's TTL must last it)", tb.Name, r.From, r.To, n, scenario.MaxPathDirs)
		}
	}
	dirs := 2*len(tb.Links) + 2*len(tb.Sites)
	perSite := map[string]int{}
	atSites := 0
	for _, h := range tb.Hosts {
		if h.Site != "" {
			perSite[h.Site]++
			atSites++
		}
	}
	if len(tb.Routers) > 0 { // (a test-bed of sites alone is bounded by its directions, as before routers)
		if err := routing.CheckSize(len(tb.Routers)+len(tb.Hosts)+len(tb.Sites)+1, dirs+2*atSites); err != nil {
			return fmt.Errorf("test-bed %q: %w", tb.Name, err)
		}
	}
	for _, s := range tb.Sites {
		if n := perSite[s.Name]; !isTransparent(s.LAN) {
			dirs += n * (n - 1)
		}
	}
	if dirs > MaxDirections {
		return fmt.Errorf("test-bed %q needs %d link directions (a site LAN has one per ordered pair of its hosts): one engine holds at most %d; use fewer hosts per site, or a LAN that changes nothing (a perfect switch)", tb.Name, dirs, MaxDirections)
	}
	return nil
}
