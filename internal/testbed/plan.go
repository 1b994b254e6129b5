// Package testbed builds emulated test-beds on one Linux machine: a network
// namespace and CPU cgroup per host, a TUN device in each, and a background
// engine process that carries every packet between hosts through the link
// model. It also tears them down, including what a killed run left behind.
package testbed

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/scenario"
)

// Plan is a test-bed resolved into what the engine and the kernel need.
type Plan struct {
	Name  string
	Hosts []HostPlan
	Dirs  []DirPlan
	// Paths maps {src, dst} host indexes to the directions crossed in order.
	Paths map[[2]int][]int
}

// HostPlan is one host as it will be built.
type HostPlan struct {
	Name   string  `json:"name"`
	Addr   string  `json:"addr"`
	Netns  string  `json:"netns"`
	Cgroup string  `json:"cgroup"`
	CPUs   float64 `json:"cpus,omitempty"`
	Site   string  `json:"site,omitempty"`
	// MTU is the device MTU: the largest path MTU of the host's routes.
	MTU int `json:"mtu"`
	// Routes are the host's peers with the MTU of the path to each.
	Routes []Route `json:"routes"`
	// Sysctl are network sysctls set in the host's namespace.
	Sysctl map[string]string `json:"sysctl,omitempty"`
	// DataDir holds the host's files; it is the TMPDIR of its processes.
	DataDir string `json:"data_dir"`
	// DiskReadBps and DiskWriteBps cap the host's disk (0: no cap), on the
	// disk DiskDev ("major:minor") that holds DataDir.
	DiskReadBps  int64  `json:"disk_read_bps,omitempty"`
	DiskWriteBps int64  `json:"disk_write_bps,omitempty"`
	DiskDev      string `json:"disk_dev,omitempty"`
	DiskName     string `json:"disk_name,omitempty"`
}

// DiskCapped says whether the host's disk has a read or write cap.
func (h HostPlan) DiskCapped() bool { return h.DiskReadBps > 0 || h.DiskWriteBps > 0 }

// Route is a host route to a peer.
type Route struct {
	Peer string `json:"peer"`
	Addr string `json:"addr"`
	MTU  int    `json:"mtu"`
}

// DirPlan is one emulated link direction.
type DirPlan struct {
	Name   string             `json:"name"`
	Config scenario.Direction `json:"config"`
}

// PathPlan is the route a packet takes from one host to another.
type PathPlan struct {
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
}

// TCPCeiling is the most TCP payload the path can carry in bit/s: the
// bottleneck rate times the share of each full packet that is payload (IPv4
// and TCP headers with timestamps take 52 bytes). 0 means unlimited.
func (pp PathPlan) TCPCeiling() float64 {
	return pp.Bottleneck * float64(pp.MTU-52) / float64(pp.MTU)
}

// IdleRTT is the round trip of one packet of size bytes each way on an idle
// path: propagation there and back plus serialisation on every direction.
func IdleRTT(pp PathPlan, dirs []DirPlan, size int) time.Duration {
	rtt := time.Duration(pp.BaseRTTms * float64(time.Millisecond))
	for _, name := range append(slices.Clone(pp.Via), pp.Back...) {
		for _, d := range dirs {
			if d.Name == name && d.Config.Rate > 0 {
				rtt += time.Duration(float64(size*8) / float64(d.Config.Rate) * float64(time.Second))
			}
		}
	}
	return rtt
}

// PathList returns every reachable ordered pair of hosts with its route.
func (p *Plan) PathList() []PathPlan {
	var out []PathPlan
	for i, a := range p.Hosts {
		for j, b := range p.Hosts {
			there, ok := p.Paths[[2]int{i, j}]
			if !ok {
				continue
			}
			var rtt time.Duration
			pp := PathPlan{From: a.Name, To: b.Name, Via: []string{}, MTU: a.Routes[slices.IndexFunc(a.Routes, func(r Route) bool { return r.Peer == b.Name })].MTU}
			for _, d := range there {
				c := p.Dirs[d].Config
				pp.Via = append(pp.Via, p.Dirs[d].Name)
				rtt += c.Delay
				if c.Rate > 0 && (pp.Bottleneck == 0 || float64(c.Rate) < pp.Bottleneck) {
					pp.Bottleneck = float64(c.Rate)
				}
			}
			pp.Back = []string{}
			for _, d := range p.Paths[[2]int{j, i}] {
				rtt += p.Dirs[d].Config.Delay
				pp.Back = append(pp.Back, p.Dirs[d].Name)
			}
			pp.BaseRTTms = float64(rtt) / float64(time.Millisecond)
			out = append(out, pp)
		}
	}
	return out
}

// Device is the name of every host's interface to the engine.
const Device = "wl0"

// NetnsName is the name of a host's network namespace. Names cannot contain
// '.', so the prefix "wanlab.<testbed>." finds exactly one test-bed's hosts.
func NetnsName(testbed, host string) string { return "wanlab." + testbed + "." + host }

// CgroupName is a host's cgroup below the cgroup root.
func CgroupName(testbed, host string) string { return "wanlab/" + testbed + "/" + host }

// NewPlan assigns addresses, creates link directions and computes the path
// between every ordered pair of hosts: an explicit link if there is one, else
// the site access links (source site up, destination site down), or the site
// LAN for two hosts at one site. Hosts with neither cannot reach each other.
func NewPlan(tb *scenario.Testbed) (*Plan, error) {
	if err := checkSize(tb); err != nil {
		return nil, err
	}
	p := &Plan{Name: tb.Name, Paths: map[[2]int][]int{}}
	index := map[string]int{}
	addr := tb.Subnet.Addr()
	for i, h := range tb.Hosts {
		addr = addr.Next()
		if !tb.Subnet.Contains(addr) {
			return nil, fmt.Errorf("subnet %s has no address for host %s", tb.Subnet, h.Name)
		}
		index[h.Name] = i
		hp := HostPlan{
			Name: h.Name, Addr: addr.String(), CPUs: h.CPUs, Site: h.Site, Sysctl: h.Sysctl,
			Netns: NetnsName(tb.Name, h.Name), Cgroup: CgroupName(tb.Name, h.Name), DataDir: DataDir(tb.Name, h.Name),
		}
		if h.Disk != nil {
			hp.DiskReadBps, hp.DiskWriteBps = h.Disk.ReadBps, h.Disk.WriteBps
		}
		p.Hosts = append(p.Hosts, hp)
	}
	addDir := func(name string, d scenario.Direction) int {
		p.Dirs = append(p.Dirs, DirPlan{Name: name, Config: d})
		return len(p.Dirs) - 1
	}
	for _, l := range tb.Links {
		a, b := index[l.A], index[l.B]
		p.Paths[[2]int{a, b}] = []int{addDir(l.A+"->"+l.B, l.Forward)}
		p.Paths[[2]int{b, a}] = []int{addDir(l.B+"->"+l.A, l.Reverse)}
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
			if _, explicit := p.Paths[pair]; explicit {
				continue
			}
			switch {
			case a.Site != b.Site:
				p.Paths[pair] = []int{up[a.Site], down[b.Site]}
			case isTransparent(lans[a.Site]):
				p.Paths[pair] = nil // a perfect switch: forwarded at once
			default:
				p.Paths[pair] = []int{addDir(fmt.Sprintf("site %s lan %s->%s", a.Site, a.Name, b.Name), lans[a.Site])}
			}
		}
	}
	for i := range p.Hosts {
		h := &p.Hosts[i]
		for j, peer := range p.Hosts {
			path, ok := p.Paths[[2]int{i, j}]
			if !ok {
				continue
			}
			mtu := lans[h.Site].MTU
			if len(path) > 0 {
				mtu = scenario.MaxMTU
				for _, d := range path {
					mtu = min(mtu, p.Dirs[d].Config.MTU)
				}
			}
			h.Routes = append(h.Routes, Route{Peer: peer.Name, Addr: peer.Addr, MTU: mtu})
			h.MTU = max(h.MTU, mtu)
		}
		if h.MTU == 0 {
			h.MTU = scenario.DefaultMTU
		}
	}
	return p, nil
}

// What one machine's test-bed can hold: each host is a namespace, a TUN
// device, a cgroup and an agent; each link direction a queue in the engine.
const (
	MaxHosts      = 512
	MaxDirections = 16384
)

// checkSize refuses a test-bed this machine cannot hold before any of it is
// built, counting the link directions (a site LAN has one per ordered pair
// of its hosts) without making them.
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

// EngineConfig returns the engine configuration for the plan, given each
// host's open TUN fd in host order.
func (p *Plan) EngineConfig(fds []int, seed uint64) linkemu.Config {
	cfg := linkemu.Config{Paths: p.Paths, Seed: seed}
	for i, h := range p.Hosts {
		cfg.Ports = append(cfg.Ports, linkemu.Port{Name: h.Name, FD: fds[i], Addr: netip.MustParseAddr(h.Addr)})
		cfg.MaxPacket = max(cfg.MaxPacket, h.MTU)
	}
	for _, d := range p.Dirs {
		c := d.Config
		dc := linkemu.DirConfig{
			Name: d.Name, Rate: float64(c.Rate), Delay: c.Delay, Jitter: c.Jitter, Reorder: c.Reorder,
			QueuePackets: c.Queue.Packets, QueueBytes: c.Queue.Bytes,
			Loss: linkemu.LossConfig{Random: c.Loss.Random},
		}
		if g := c.Loss.Gilbert; g != nil {
			dc.Loss.GE = &linkemu.GilbertElliott{P: g.P, R: g.R, BadLoss: g.BadLoss, GoodLoss: g.GoodLoss}
		}
		cfg.Dirs = append(cfg.Dirs, dc)
	}
	return cfg
}
