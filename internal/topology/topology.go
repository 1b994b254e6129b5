// Package topology resolves a scenario's test-bed into what every backend
// shares: the hosts with their addresses and routes, the link directions,
// and the end-to-end path between every ordered pair of hosts, computed
// once. It holds no operating-system code: the emulated test-bed builds
// it, real hosts are measured against it as the expected path, and the
// analysis of an old run reads it from the stored scenario.
package topology

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/scenario"
)

// TCPIPHeader is what IPv4 and TCP headers with timestamps take of every
// full packet: the TCP payload of a packet is its size less this.
const TCPIPHeader = 52

// Topology is a test-bed resolved into hosts, directions and paths.
type Topology struct {
	Name  string      `json:"name"`
	Hosts []Host      `json:"hosts"`
	Dirs  []Direction `json:"directions"`
	// Paths are every reachable ordered pair of hosts, in host order.
	Paths []Path `json:"paths"`
}

// Host is one host: its address, CPU quota, site, disk caps, and its
// routes to the hosts it can reach, each with the path's MTU.
type Host struct {
	Name string  `json:"name"`
	Addr string  `json:"addr"`
	CPUs float64 `json:"cpus,omitempty"`
	Site string  `json:"site,omitempty"`
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

// Route is a host route to a peer.
type Route struct {
	Peer string `json:"peer"`
	Addr string `json:"addr"`
	MTU  int    `json:"mtu"`
}

// Direction is one link direction.
type Direction struct {
	Name   string             `json:"name"`
	Config scenario.Direction `json:"config"`
}

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

// Host returns the host of that name.
func (t *Topology) Host(name string) (Host, bool) {
	if i := slices.IndexFunc(t.Hosts, func(h Host) bool { return h.Name == name }); i >= 0 {
		return t.Hosts[i], true
	}
	return Host{}, false
}

// Path returns the path from one host to another, if there is one.
func (t *Topology) Path(from, to string) (Path, bool) {
	for _, p := range t.Paths {
		if p.From == from && p.To == to {
			return p, true
		}
	}
	return Path{}, false
}

// Direction returns the link direction of that name.
func (t *Topology) Direction(name string) (Direction, bool) {
	if i := slices.IndexFunc(t.Dirs, func(d Direction) bool { return d.Name == name }); i >= 0 {
		return t.Dirs[i], true
	}
	return Direction{}, false
}

// PathTable maps {source, destination} host indexes to the indexes of the
// directions crossed, as the packet engine takes it.
func (t *Topology) PathTable() map[[2]int][]int {
	host, dir := map[string]int{}, map[string]int{}
	for i, h := range t.Hosts {
		host[h.Name] = i
	}
	for i, d := range t.Dirs {
		dir[d.Name] = i
	}
	out := make(map[[2]int][]int, len(t.Paths))
	for _, p := range t.Paths {
		var hops []int
		for _, name := range p.Via {
			hops = append(hops, dir[name])
		}
		out[[2]int{host[p.From], host[p.To]}] = hops
	}
	return out
}

// What one topology may hold: each host becomes a namespace, a TUN device,
// a cgroup and an agent on the emulated backend, and each link direction a
// queue in its engine.
const (
	MaxHosts      = 512
	MaxDirections = 16384
)

// New assigns addresses, creates link directions and computes the path
// between every ordered pair of hosts: an explicit link if there is one, else
// the site access links (source site up, destination site down), or the site
// LAN for two hosts at one site. Hosts with neither cannot reach each other.
func New(tb *scenario.Testbed) (*Topology, error) {
	if err := checkSize(tb); err != nil {
		return nil, err
	}
	t := &Topology{Name: tb.Name}
	index := map[string]int{}
	addr := tb.Subnet.Addr()
	for i, h := range tb.Hosts {
		addr = addr.Next()
		if !tb.Subnet.Contains(addr) {
			return nil, fmt.Errorf("subnet %s has no address for host %s", tb.Subnet, h.Name)
		}
		index[h.Name] = i
		host := Host{Name: h.Name, Addr: addr.String(), CPUs: h.CPUs, Site: h.Site, Sysctl: h.Sysctl}
		if h.Disk != nil {
			host.DiskReadBps, host.DiskWriteBps = h.Disk.ReadBps, h.Disk.WriteBps
		}
		t.Hosts = append(t.Hosts, host)
	}
	hops := t.hops(tb, index)
	lans := map[string]scenario.Direction{}
	for _, s := range tb.Sites {
		lans[s.Name] = s.LAN
	}
	for i := range t.Hosts {
		h := &t.Hosts[i]
		for j, peer := range t.Hosts {
			path, ok := hops[[2]int{i, j}]
			if !ok {
				continue
			}
			mtu := lans[h.Site].MTU
			if len(path) > 0 {
				mtu = scenario.MaxMTU
				for _, d := range path {
					mtu = min(mtu, t.Dirs[d].Config.MTU)
				}
			}
			h.Routes = append(h.Routes, Route{Peer: peer.Name, Addr: peer.Addr, MTU: mtu})
			h.MTU = max(h.MTU, mtu)
		}
		if h.MTU == 0 {
			h.MTU = scenario.DefaultMTU
		}
	}
	t.Paths = t.paths(hops)
	return t, nil
}

// hops makes the link directions and returns the directions each
// reachable ordered pair of hosts crosses.
func (t *Topology) hops(tb *scenario.Testbed, index map[string]int) map[[2]int][]int {
	out := map[[2]int][]int{}
	addDir := func(name string, d scenario.Direction) int {
		t.Dirs = append(t.Dirs, Direction{Name: name, Config: d})
		return len(t.Dirs) - 1
	}
	for _, l := range tb.Links {
		a, b := index[l.A], index[l.B]
		out[[2]int{a, b}] = []int{addDir(l.A+"->"+l.B, l.Forward)}
		out[[2]int{b, a}] = []int{addDir(l.B+"->"+l.A, l.Reverse)}
	}
	up, down := map[string]int{}, map[string]int{}
	lans := map[string]scenario.Direction{}
	for _, s := range tb.Sites {
		up[s.Name] = addDir("site "+s.Name+" up", s.Up)
		down[s.Name] = addDir("site "+s.Name+" down", s.Down)
		lans[s.Name] = s.LAN
	}
	for i, a := range tb.Hosts {
		for j, b := range tb.Hosts {
			pair := [2]int{i, j}
			if i == j || a.Site == "" || b.Site == "" {
				continue
			}
			if _, explicit := out[pair]; explicit {
				continue
			}
			switch {
			case a.Site != b.Site:
				out[pair] = []int{up[a.Site], down[b.Site]}
			case isTransparent(lans[a.Site]):
				out[pair] = nil // a perfect switch: forwarded at once
			default:
				out[pair] = []int{addDir(fmt.Sprintf("site %s lan %s->%s", a.Site, a.Name, b.Name), lans[a.Site])}
			}
		}
	}
	return out
}

// paths resolves every reachable ordered pair into a Path.
func (t *Topology) paths(hops map[[2]int][]int) []Path {
	var out []Path
	for i, a := range t.Hosts {
		for j, b := range t.Hosts {
			there, ok := hops[[2]int{i, j}]
			if !ok {
				continue
			}
			p := Path{From: a.Name, To: b.Name, Via: []string{}, Back: []string{}}
			for _, r := range a.Routes {
				if r.Peer == b.Name {
					p.MTU = r.MTU
				}
			}
			var rtt time.Duration
			keep := 1.0
			for _, d := range there {
				c := t.Dirs[d].Config
				p.Via = append(p.Via, t.Dirs[d].Name)
				rtt += c.Delay
				keep *= 1 - c.Loss.Mean()
				if c.Rate > 0 && (p.Bottleneck == 0 || float64(c.Rate) < p.Bottleneck) {
					p.Bottleneck = float64(c.Rate)
				}
			}
			for _, d := range hops[[2]int{j, i}] {
				rtt += t.Dirs[d].Config.Delay
				p.Back = append(p.Back, t.Dirs[d].Name)
			}
			p.BaseRTTms = float64(rtt) / float64(time.Millisecond)
			p.Loss = 1 - keep
			out = append(out, p)
		}
	}
	return out
}

// checkSize refuses a topology beyond what one machine can hold before any
// of it is built, counting the link directions (a site LAN has one per
// ordered pair of its hosts) without making them.
func checkSize(tb *scenario.Testbed) error {
	if n := len(tb.Hosts); n > MaxHosts {
		return fmt.Errorf("test-bed %q has %d hosts: one machine holds at most %d (each is a namespace, a TUN device, a cgroup and an agent)", tb.Name, n, MaxHosts)
	}
	dirs := 2*len(tb.Links) + 2*len(tb.Sites)
	perSite := map[string]int{}
	for _, h := range tb.Hosts {
		if h.Site != "" {
			perSite[h.Site]++
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

// isTransparent reports whether a direction changes nothing about a packet.
func isTransparent(d scenario.Direction) bool {
	return d.Rate == 0 && d.Delay == 0 && d.Jitter == 0 && d.Loss.Mean() == 0 && d.Loss.Gilbert == nil
}

// IP returns a host's address.
func (h Host) IP() netip.Addr { return netip.MustParseAddr(h.Addr) }
