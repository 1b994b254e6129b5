package testbed

import (
	"net/netip"
	"slices"

	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/topology"
)

// Host is a host of an emulated test-bed: its place in the topology and
// what the emulation made for it.
type Host struct {
	topology.Host
	Netns  string `json:"netns"`
	Cgroup string `json:"cgroup"`
	// DataDir holds the host's files; it is its agent's data folder and
	// the TMPDIR of its processes.
	DataDir string `json:"data_dir"`
	// DiskDev ("major:minor") and DiskName are the disk that holds DataDir,
	// which the host's disk caps apply to.
	DiskDev  string `json:"disk_dev,omitempty"`
	DiskName string `json:"disk_name,omitempty"`
}

// Device is the name of every host's interface to the engine.
const Device = "wl0"

// NetnsName is the name of a host's network namespace. Names cannot contain
// '.', so the prefix "wanlab.<testbed>." finds exactly one test-bed's hosts.
func NetnsName(testbed, host string) string { return "wanlab." + testbed + "." + host }

// CgroupName is a host's cgroup below the cgroup root.
func CgroupName(testbed, host string) string { return "wanlab/" + testbed + "/" + host }

// Hosts are the hosts of a topology as this backend builds them.
func Hosts(t *topology.Topology) []Host {
	out := make([]Host, len(t.Hosts))
	for i, h := range t.Hosts {
		out[i] = Host{Host: h, Netns: NetnsName(t.Name, h.Name), Cgroup: CgroupName(t.Name, h.Name), DataDir: DataDir(t.Name, h.Name)}
	}
	return out
}

// engineConfig is the packet engine's configuration for a topology, given
// each host's open TUN fd in host order. The engine's ports are the hosts
// and its directions the topology's, in the same order, so that a host or
// direction index means the same to both (enginePaths relies on it).
func engineConfig(t *topology.Topology, fds []int, seed uint64) linkemu.Config {
	cfg := linkemu.Config{Paths: t.PathTable(), Joined: t.Joined(), Seed: seed}
	for i, h := range t.Hosts {
		p := linkemu.PortConfig{Name: h.Name, FD: fds[i], Addr: netip.MustParseAddr(h.Addr)}
		if h.Addr6 != "" && h.Addr6 != h.Addr {
			p.Addr6 = netip.MustParseAddr(h.Addr6) // dual stack; an IPv6-only host's Addr is its IPv6 one
		}
		cfg.Ports = append(cfg.Ports, p)
		cfg.MaxPacket = max(cfg.MaxPacket, h.MTU)
	}
	for _, d := range t.Dirs {
		cfg.Dirs = append(cfg.Dirs, dirConfig(d, t.HasIPv6()))
	}
	return cfg
}

// dirConfig is the engine's configuration of a link direction; v6 says
// the hosts have IPv6, so that its routers and hops answer ICMPv6 too.
func dirConfig(d topology.Direction, v6 bool) linkemu.DirConfig {
	c := d.Config
	dc := linkemu.DirConfig{
		Name: d.Name, Rate: float64(c.Rate), Delay: c.Delay, Jitter: c.Jitter, Reorder: c.Reorder,
		QueuePackets: c.Queue.Packets, QueueBytes: c.Queue.Bytes,
		Loss: linkemu.LossConfig{Random: c.Loss.Random},
		Down: c.Down, MTU: c.MTU, Blackhole: c.Blackhole,
	}
	// topology.New wrote Entry from a router's checked address; one that
	// does not parse leaves the direction without an entry router.
	if a, err := netip.ParseAddr(d.Entry); err == nil {
		dc.Entry = a
	}
	if a, err := netip.ParseAddr(d.Entry6); err == nil {
		dc.Entry6 = a
	}
	for _, h := range c.Hops {
		dc.Hops = append(dc.Hops, h.Addr)
		if v6 {
			dc.Hops6 = append(dc.Hops6, topology.Hop6(h.Addr))
		}
	}
	if tr := c.Trace; tr != nil {
		lt := &linkemu.Trace{Loop: tr.Loop, Period: int64(tr.Period)}
		for _, s := range tr.Rate {
			lt.RateAt, lt.Rates = append(lt.RateAt, int64(s.At)), append(lt.Rates, float64(s.Value))
		}
		for _, s := range tr.Delay {
			lt.DelayAt, lt.Delays = append(lt.DelayAt, int64(s.At)), append(lt.Delays, int64(s.Value))
		}
		for _, at := range tr.Deliveries {
			lt.Deliveries = append(lt.Deliveries, int64(at))
		}
		dc.Trace = lt
	}
	if x := c.Cross; x != nil {
		dc.Cross = &linkemu.CrossConfig{Rate: float64(x.Rate), Pattern: linkemu.CrossPatterns[x.Pattern], Size: x.Size,
			On: x.On, Off: x.Off, FlowMean: float64(x.FlowMean), FlowShape: x.FlowShape, FlowRate: float64(x.FlowRate)}
	}
	if g := c.Loss.Gilbert; g != nil {
		dc.Loss.GE = &linkemu.GilbertElliott{P: g.P, R: g.R, BadLoss: g.BadLoss, GoodLoss: g.GoodLoss}
	}
	return dc
}

// enginePaths are the topology's path changes in the engine's numbering,
// which is the topology's (engineConfig).
func enginePaths(changes []topology.PathChange) []*linkemu.PathChange {
	out := make([]*linkemu.PathChange, len(changes))
	for i, c := range changes {
		out[i] = &linkemu.PathChange{From: c.From, To: c.To, Dirs: slices.Clone(c.Dirs)}
	}
	return out
}

// topologyPath is the engine's path change a in the topology's numbering.
func topologyPath(a *linkemu.PathChange) topology.PathChange {
	return topology.PathChange{From: a.From, To: a.To, Dirs: slices.Clone(a.Dirs)}
}
