package predict

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/topology"
)

// UnlimitedBPS is the rate of a link direction the scenario leaves
// unlimited, and of a path that crosses no link (a site's perfect
// switch): far above what one machine emulates.
const UnlimitedBPS = 100e9

// platform is a test-bed as the simulator holds it: the topology the
// test-bed would build (topology.New), each host with its CPUs and disk,
// each link direction with what cross traffic leaves of its rate, and
// what of each direction the platform cannot represent.
type platform struct {
	topo  *topology.Topology
	hosts map[string]sim.Host
	links map[string]sim.Link
	// cross is each direction's mean cross traffic in bit/s.
	cross map[string]float64
	// leftOut is what of each direction the simulation leaves out, and
	// refused why a direction cannot be simulated at all; both only for
	// the steps whose routes cross it.
	leftOut map[string][]string
	refused map[string]string
	// unlimitedCores is how many cores a host without a quota has.
	unlimitedCores int
}

// newPlatform maps a test-bed's topology onto the simulator's platform. A
// host without a cpus quota gets cores whole cores of its own (0: this
// machine's count).
func newPlatform(topo *topology.Topology, cores int) *platform {
	if cores <= 0 {
		cores = runtime.NumCPU()
	}
	p := &platform{topo: topo, hosts: map[string]sim.Host{}, links: map[string]sim.Link{}, cross: map[string]float64{},
		leftOut: map[string][]string{}, refused: map[string]string{}, unlimitedCores: cores}
	for _, h := range topo.Hosts {
		p.hosts[h.Name] = simHost(h, cores)
	}
	for _, d := range topo.Dirs {
		p.addLink(d)
	}
	return p
}

// simHost is a host with its CPU quota: a quota of Q cores is ceil(Q)
// whole cores, throttled as the test-bed's cgroup throttles them (CFS
// bandwidth control, Q x 100 ms of core time per 100 ms) when Q is
// fractional; whole cores need no throttling.
func simHost(h topology.Host, unlimited int) sim.Host {
	s := sim.Host{Name: h.Name, Cores: unlimited, Speed: 1, DiskReadBPS: float64(h.DiskReadBps), DiskWriteBPS: float64(h.DiskWriteBps)}
	if h.CPUs > 0 {
		s.Cores = int(math.Ceil(h.CPUs))
		if float64(s.Cores) != h.CPUs {
			s.Quota = h.CPUs
		}
	}
	return s
}

// addLink adds a direction: its rate less its cross traffic's mean, its
// one-way delay, and what of it is left out or cannot be simulated.
func (p *platform) addLink(d topology.Direction) {
	c := d.Config
	rate := float64(c.Rate)
	if rate == 0 {
		rate = UnlimitedBPS
	}
	cross := crossMean(c.Cross)
	p.cross[d.Name] = cross
	p.links[d.Name] = sim.Link{Name: d.Name, BPS: rate - cross, Latency: c.Delay.Seconds()}
	var out []string
	switch {
	case c.Trace != nil:
		p.refused[d.Name] = fmt.Sprintf("%s follows a trace (its rate and delay change over time), which the simulated platform cannot represent: it holds one rate and one delay per direction", d.Name)
	case c.Down:
		p.refused[d.Name] = fmt.Sprintf("%s is down, and the simulated platform has no down directions", d.Name)
	case cross >= rate:
		p.refused[d.Name] = fmt.Sprintf("the cross traffic on %s (a mean of %.3g Mbit/s) takes all of its %.3g Mbit/s", d.Name, cross/1e6, rate/1e6)
	}
	if c.Jitter > 0 {
		out = append(out, fmt.Sprintf("the jitter of %s (±%v) is left out: its packets take its mean delay", d.Name, c.Jitter))
	}
	if c.Loss.Gilbert != nil {
		out = append(out, fmt.Sprintf("the bursts of %s's Gilbert-Elliott loss are left out: flows see its mean loss, %.3g%%", d.Name, 100*c.Loss.Mean()))
	}
	if c.Blackhole {
		out = append(out, fmt.Sprintf("the MTU blackhole of %s is left out: path-MTU discovery does not fail in the simulation", d.Name))
	}
	if c.Cross != nil && c.Cross.Pattern != "constant" {
		out = append(out, fmt.Sprintf("the %s pattern of %s's cross traffic is left out: it takes a constant %.3g Mbit/s, its mean", c.Cross.Pattern, d.Name, cross/1e6))
	}
	if c.Rate == 0 {
		out = append(out, fmt.Sprintf("%s has no rate: it is %g Gbit/s in the simulation", d.Name, UnlimitedBPS/1e9))
	}
	p.leftOut[d.Name] = out
}

// crossMean is the mean rate of cross traffic in bit/s: its rate, times
// the share of time it is on for onoff.
func crossMean(c *scenario.Cross) float64 {
	if c == nil {
		return 0
	}
	r := float64(c.Rate)
	if c.Pattern == "onoff" && c.On+c.Off > 0 {
		r *= float64(c.On) / float64(c.On+c.Off)
	}
	return r
}

// program is the platform a step's actors need: the hosts they run on
// and talk to, the route of each ordered pair of hosts they make talk
// (a Call's reply goes back), and the links of those routes; with what of
// those links the simulation leaves out. A route across a direction that
// cannot be simulated refuses the step.
func (p *platform) program(actors []sim.Actor) (sim.Platform, []string, error) {
	host := map[string]string{}
	for _, a := range actors {
		if _, dup := host[a.Name]; dup {
			return sim.Platform{}, nil, fmt.Errorf("the model has two actors named %q", a.Name)
		}
		if _, ok := p.hosts[a.Host]; !ok {
			return sim.Platform{}, nil, fmt.Errorf("actor %s runs on host %q, which the test-bed does not have", a.Name, a.Host)
		}
		host[a.Name] = a.Host
	}
	pairs := map[[2]string]bool{}
	var walk func(a sim.Actor, ops []sim.Op) error
	walk = func(a sim.Actor, ops []sim.Op) error {
		for _, op := range ops {
			switch op.Do {
			case sim.Send, sim.Call:
				to, ok := host[op.To]
				if !ok {
					return fmt.Errorf("actor %s sends to %q, which no actor of the step is", a.Name, op.To)
				}
				pairs[[2]string{a.Host, to}] = true
				if op.Do == sim.Call {
					pairs[[2]string{to, a.Host}] = true
				}
			case sim.Repeat:
				if err := walk(a, op.Body); err != nil {
					return err
				}
			case sim.Par:
				for _, b := range op.Branches {
					if err := walk(a, b); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	used := map[string]bool{}
	for _, a := range actors {
		used[a.Host] = true
		if err := walk(a, a.Ops); err != nil {
			return sim.Platform{}, nil, err
		}
	}
	var plat sim.Platform
	crossed := map[string]bool{}
	var leftOut, switches []string
	for _, from := range p.topo.Hosts {
		for _, to := range p.topo.Hosts {
			if !pairs[[2]string{from.Name, to.Name}] || from.Name == to.Name {
				continue // a host's own traffic takes its loopback
			}
			path, ok := p.topo.Path(from.Name, to.Name)
			if !ok {
				return sim.Platform{}, nil, fmt.Errorf("host %s cannot reach host %s on this test-bed", from.Name, to.Name)
			}
			for _, d := range path.Via {
				if why, ok := p.refused[d]; ok {
					return sim.Platform{}, nil, fmt.Errorf("the path from %s to %s crosses %s", from.Name, to.Name, why)
				}
				if !crossed[d] {
					crossed[d] = true
					leftOut = append(leftOut, p.leftOut[d]...)
				}
			}
			links := slices.Clone(path.Via)
			if len(links) == 0 {
				// A site's perfect switch: a link of the pair's own that
				// changes nothing, as the simulator routes through links.
				links = []string{switchLink(from, to)}
				switches = append(switches, links[0])
			}
			plat.Routes = append(plat.Routes, sim.Route{From: from.Name, To: to.Name, Links: links})
		}
	}
	for _, h := range p.topo.Hosts {
		if used[h.Name] {
			plat.Hosts = append(plat.Hosts, p.hosts[h.Name])
		}
	}
	for _, d := range p.topo.Dirs {
		if crossed[d.Name] {
			plat.Links = append(plat.Links, p.links[d.Name])
		}
	}
	for _, name := range switches {
		plat.Links = append(plat.Links, sim.Link{Name: name, BPS: UnlimitedBPS})
	}
	return plat, leftOut, nil
}

// switchLink names the link of a pair of hosts that a site's perfect
// switch joins, as the test-bed names the direction of a site's LAN that
// is not perfect.
func switchLink(from, to topology.Host) string {
	return fmt.Sprintf("site %s lan %s->%s", from.Site, from.Name, to.Name)
}

// path is what the platform says of the path from one host to another:
// the propagation delays there and back, the lowest rate cross traffic
// leaves along it, its loss and its MTU.
func (p *platform) path(from, to string) (pathFacts, error) {
	if from == to {
		h, ok := p.topo.Host(from)
		if !ok {
			return pathFacts{}, fmt.Errorf("no host %q in the test-bed", from)
		}
		return pathFacts{BottleneckBPS: LoopbackBPS, MTU: h.MTU}, nil
	}
	path, ok := p.topo.Path(from, to)
	if !ok {
		return pathFacts{}, fmt.Errorf("host %s cannot reach host %s on this test-bed", from, to)
	}
	f := pathFacts{RTT: time.Duration(path.BaseRTTms * float64(time.Millisecond)), BottleneckBPS: UnlimitedBPS, Loss: path.Loss, MTU: path.MTU,
		AccessBPS: p.topo.AccessBPS(to)}
	if h, ok := p.topo.Host(from); ok {
		f.Congestion = h.Sysctl["net.ipv4.tcp_congestion_control"]
	}
	if f.Congestion == "" {
		f.Congestion = MachineCongestion()
	}
	for _, d := range path.Via {
		f.BottleneckBPS = min(f.BottleneckBPS, p.links[d].BPS)
	}
	return f, nil
}

// MachineCongestion is the TCP congestion control this machine defaults
// to (/proc/sys/net/ipv4/tcp_congestion_control, read once; "" where it
// cannot be read), which a test-bed's host inherits unless its scenario
// sets net.ipv4.tcp_congestion_control: each network namespace starts
// with the machine's. A variable for tests.
var MachineCongestion = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// LoopbackBPS is the rate between two actors of one host, as the
// simulator's loopback gives it.
const LoopbackBPS = 10e9
