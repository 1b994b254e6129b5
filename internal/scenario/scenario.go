// Package scenario reads wanlab scenario files: the test-bed (hosts, sites, links)
// parsed strictly from YAML, with units, validated with errors that name the file,
// line and field.
package scenario

import (
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/units"
)

// Testbed is a validated test-bed: hosts, the sites they belong to and the links
// between them, with every default filled in.
type Testbed struct {
	Name   string
	Subnet netip.Prefix
	// Subnet6 holds the hosts' IPv6 addresses (and RouterSubnet6 the
	// routers'); valid only when Family gives hosts IPv6.
	Subnet6 netip.Prefix `json:",omitzero"`
	// Family is the address families the hosts have: FamilyIPv4,
	// FamilyDual or FamilyIPv6.
	Family string
	Seed   uint64
	Hosts  []Host // in file order
	Sites  []Site // in file order
	Links  []Link // in file order
	Engine Engine
	// Machine are the machine-wide settings the test-bed needs for its life.
	Machine Machine
	// TLS are the controller's files for hosts that name agents (relative
	// to the scenario's folder); nil for the controller's default.
	TLS *pki.Files
	// Routers are the nodes that forward between links, in file order,
	// each with its address (given, or chosen in RouterSubnet).
	Routers []Router `json:",omitempty"`
	// Routing is how pairs of hosts without a link or a site LAN are
	// routed: RoutingDelay ("" too: the default) or RoutingHops.
	Routing string `json:",omitempty"`
	// Routes are the explicit routes of chosen ordered pairs of hosts, in
	// file order: each overrides Routing for its pair, one way.
	Routes []Route `json:",omitempty"`
	// Reroute is how long after a direction goes down (or comes back up)
	// the routed pairs that cross it move to their next best path; -1
	// (RerouteNever) keeps them where they are.
	Reroute time.Duration `json:",omitempty"`
	// Backend is where the scenario may run: BackendEmulated ("" too:
	// the default) or BackendSimulated, a scenario past what one machine
	// emulates, which only wanlab predict runs.
	Backend string `json:",omitempty"`
}

// Where a scenario may run (Testbed.Backend).
const (
	// BackendEmulated runs on the emulated test-bed (or real hosts), and
	// wanlab predict simulates it too.
	BackendEmulated = "emulated"
	// BackendSimulated is only simulated (wanlab predict): wanlab run
	// refuses it.
	BackendSimulated = "simulated"
)

// Simulated says whether the scenario is only simulated (backend: simulated).
func (t *Testbed) Simulated() bool { return t.Backend == BackendSimulated }

// Router is a node that forwards packets between the links it joins,
// decrementing their TTL and answering ICMP errors from Addr.
type Router struct {
	Name string
	Addr netip.Addr
}

// Route is an explicit route: From's packets to To cross the routers Via,
// in order.
type Route struct {
	From, To string
	Via      []string
}

// How a test-bed routes pairs of hosts (Testbed.Routing).
const (
	// RoutingDelay takes the path of least one-way propagation delay.
	RoutingDelay = "delay"
	// RoutingHops takes the path of fewest directions.
	RoutingHops = "hops"
)

// RerouteNever is the Reroute of a test-bed whose routed pairs keep
// their paths when a direction goes down.
const RerouteNever time.Duration = -1

// RouterSubnet holds the routers' addresses that the scenario does not give.
var RouterSubnet = netip.MustParsePrefix("10.251.0.0/16")

// RouterSubnet6 holds the routers' IPv6 addresses on a test-bed whose
// hosts have IPv6: a unique local prefix (RFC 4193) outside DefaultSubnet6.
var RouterSubnet6 = netip.MustParsePrefix("fd77:616e:6c61:ff::/64")

// The address families of a test-bed's hosts (Testbed.Family).
const (
	// FamilyIPv4 gives hosts an IPv4 address alone: the default without
	// subnet6.
	FamilyIPv4 = "ipv4"
	// FamilyDual gives hosts both: the default with subnet6.
	FamilyDual = "dual"
	// FamilyIPv6 gives hosts an IPv6 address alone.
	FamilyIPv6 = "ipv6"
)

// HasIPv4 says whether the hosts have IPv4 addresses.
func (t *Testbed) HasIPv4() bool { return t.Family != FamilyIPv6 }

// HasIPv6 says whether the hosts have IPv6 addresses.
func (t *Testbed) HasIPv6() bool { return t.Family == FamilyDual || t.Family == FamilyIPv6 }

// Bounds of a test-bed's graph, counted before anything is expanded.
const (
	// MaxRouters bounds the routers.
	MaxRouters = 1024
	// MaxLinks bounds the links: two directions each, within what one
	// engine holds (16384 directions).
	MaxLinks = 8192
	// MaxRoutes bounds the explicit routes.
	MaxRoutes = 10000
	// MaxPathDirs bounds the directions of one path: a packet's TTL must
	// last it (and every router of it).
	MaxPathDirs = 64
)

// RealHosts says whether the hosts name agents: the scenario runs on real hosts.
func (tb *Testbed) RealHosts() bool { return len(tb.Hosts) > 0 && tb.Hosts[0].Agent != "" }

// Engine tunes the packet engine that emulates the links.
type Engine struct {
	// Realtime runs the engine thread under SCHED_FIFO so that hosts' processes
	// cannot delay packets (default true).
	Realtime bool
	// Spin is how long before a packet is due the engine stops sleeping and polls.
	Spin time.Duration
	// KeepCPUsAwake keeps CPUs out of deep idle states while the test-bed is
	// up, so that an idle machine does not delay packets (default true).
	KeepCPUsAwake bool
	// Offloads lets hosts hand the engine TCP (and UDP) super-packets of up
	// to 64 KB, modelled per wire segment (default true); false makes each
	// host segment and checksum every packet itself, as a host without TSO
	// and GRO of the seeds' era did.
	Offloads bool
	// Coalesce bounds how long a wire segment may wait for the rest of its
	// run to move in one write, or for a wake-up shared with later
	// releases, on every link; 0 (auto) gives each link direction its own
	// window by its rate (linkemu.AutoCoalesce).
	Coalesce time.Duration
	// Threads is how many engine threads may share the links: groups of
	// hosts that share no link run apart. 0 leaves it to the test-bed: one
	// per four of the machine's CPUs, at least one.
	Threads int
}

// MaxThreads bounds engine.threads.
const MaxThreads = 256

// Machine is what a test-bed needs of the machine it runs on, beyond its
// own namespaces: machine-wide sysctls (socket buffer limits for large
// windows, the congestion controls a host may choose) and kernel modules
// (congestion controls). The test-bed applies them for its life, never
// lowering a limit, and puts back what it changed when it goes.
type Machine struct {
	// Sysctl are machine-wide network sysctls: a number (or numbers) is a
	// floor, a list of congestion controls is added to.
	Sysctl map[string]string
	// Modules are kernel modules to load, e.g. tcp_htcp; one that does not
	// load is recorded, not an error.
	Modules []string
}

// DefaultSpin is the engine's default spin margin before a long sleep ends:
// it brings the median release lateness of an idle link from about 30 us to
// a few us. The engine never spins when packets are dense.
const DefaultSpin = 30 * time.Microsecond

// Host is one end host with its own network stack.
type Host struct {
	Name string
	// CPUs is the host's CPU quota in cores; 0 means no limit.
	CPUs float64
	// Site is the name of the host's site, or "" for a host that is only
	// reached through explicit links.
	Site string
	// Sysctl holds network-namespace sysctls to set in the host, e.g.
	// net.ipv4.tcp_congestion_control: cubic.
	Sysctl map[string]string
	// Disk caps the host's disk; nil leaves it as fast as the machine's.
	Disk *Disk
	// Agent is the host:port of the agent of a real host; wanlab run then
	// measures the real hosts, and the scenario's links are what their
	// paths are expected to be. testbed up ignores it.
	Agent string
}

// Disk is a host's disk speed in bytes per second, each direction 0 for
// unlimited: the read and write rates of the seeds' bonnie++ tables.
type Disk struct {
	ReadBps, WriteBps int64
}

// Link joins two nodes (hosts or routers) directly. Forward is A->B,
// Reverse is B->A.
type Link struct {
	A, B             string
	Forward, Reverse Direction
}

// Site is a group of hosts that share one access link to the wide area.
// Traffic between hosts at different sites crosses the source site's Up
// direction and then the destination site's Down direction (and, for
// sites that join routers, the directions between them).
type Site struct {
	Name     string
	Up, Down Direction
	// LAN is the path between two hosts of this site that have no explicit
	// link; each pair of hosts gets its own (a non-blocking switch).
	LAN Direction
	// Via is the router the access link joins; "" for the perfect core
	// where every site without one meets.
	Via string `json:",omitempty"`
}

// Direction is the model of one direction of a link.
type Direction struct {
	// Rate is the serialisation rate in bit/s; 0 means unlimited.
	Rate   units.Rate
	Delay  time.Duration // one-way propagation delay
	Jitter time.Duration // uniform in [-Jitter, +Jitter] around Delay
	Loss   Loss
	Queue  Queue
	MTU    int
	// Reorder lets jitter reorder packets; by default a packet never
	// overtakes the one sent before it, as on a real serial link.
	Reorder bool
	// Down drops every packet: the link is cut.
	Down bool `json:",omitempty"`
	// Blackhole drops packets larger than the MTU silently instead of
	// answering with ICMP "fragmentation needed": path-MTU discovery fails.
	Blackhole bool `json:",omitempty"`
	// Hops are the routers along the direction, in order: each decrements
	// packets' TTL and answers one that expires with ICMP time exceeded.
	Hops []Hop `json:",omitempty"`
	// Cross is background traffic the engine makes on the direction.
	Cross *Cross `json:",omitempty"`
	// Trace makes the rate (or delivery) and delay follow recorded ones.
	Trace *Trace `json:",omitempty"`
}

// Cross is a direction's cross traffic: virtual packets that take their
// share of its rate and queue (docs/scenario.md).
type Cross struct {
	Rate    units.Rate // the mean offered load; for onoff, the rate while on
	Pattern string     // poisson, constant, onoff or flows
	Size    int        // bytes per packet
	// On and Off are the mean lengths of onoff's periods.
	On, Off time.Duration `json:",omitempty"`
	// Flows: the mean size in bytes, the Pareto shape, each flow's rate.
	FlowMean  int64      `json:",omitempty"`
	FlowShape float64    `json:",omitempty"`
	FlowRate  units.Rate `json:",omitempty"`
}

// CrossPatterns are the ways cross traffic can arrive.
var CrossPatterns = []string{"poisson", "constant", "onoff", "flows"}

// Hop is a router along a link direction: what traceroute shows.
type Hop struct {
	Name string     `json:"name,omitempty"`
	Addr netip.Addr `json:"addr"`
}

// String is the hop as a scenario writes it: NAME@ADDR, or ADDR alone.
func (h Hop) String() string {
	if h.Name == "" {
		return h.Addr.String()
	}
	return h.Name + "@" + h.Addr.String()
}

// ParseHop reads a hop written ADDR or NAME@ADDR, with an IPv4 address.
func ParseHop(s string) (Hop, error) {
	name, a, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok {
		name, a = "", name
	}
	addr, err := netip.ParseAddr(a)
	switch {
	case err != nil || !addr.Is4():
		return Hop{}, fmt.Errorf("hop %q: give an IPv4 address, or NAME@ADDRESS (as gw.geant@192.0.2.1)", s)
	case addr.IsUnspecified() || addr.IsMulticast() || addr.IsLoopback() || addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return Hop{}, fmt.Errorf("hop %q: %v cannot be a router's address", s, addr)
	case name != "" && !hopNameRE.MatchString(name):
		return Hop{}, fmt.Errorf("hop %q: a router's name is 1-63 letters, digits, '.', '-' or '_'", s)
	}
	return Hop{Name: name, Addr: addr}, nil
}

var hopNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// MaxHops bounds the routers of one direction.
const MaxHops = 30

// Loss is a packet loss model: Bernoulli with probability Random, or, when
// Gilbert is set, a two-state Gilbert-Elliott burst model.
type Loss struct {
	Random  float64
	Gilbert *GilbertElliott
}

// GilbertElliott is the two-state burst loss model (as in netem's gemodel).
type GilbertElliott struct {
	P        float64 // probability of going from the good to the bad state
	R        float64 // probability of going from the bad to the good state
	BadLoss  float64 // loss probability in the bad state (netem's 1-h)
	GoodLoss float64 // loss probability in the good state (netem's 1-k)
}

// Mean is the long-run loss probability of the model.
func (l Loss) Mean() float64 {
	g := l.Gilbert
	if g == nil {
		return l.Random
	}
	if g.P+g.R == 0 {
		return g.GoodLoss
	}
	bad := g.P / (g.P + g.R)
	return bad*g.BadLoss + (1-bad)*g.GoodLoss
}

// Queue is the drop-tail bottleneck buffer, in packets or in bytes (one is set).
type Queue struct {
	Packets int
	Bytes   int64
}

// String prints the queue as it would be written in a scenario file.
func (q Queue) String() string {
	if q.Packets > 0 {
		return fmt.Sprintf("%d", q.Packets)
	}
	return units.Size(q.Bytes).String()
}

// Defaults that apply where a scenario is silent.
const (
	DefaultMTU = 1500
	// DefaultMinQueuePackets and DefaultMinQueueTime are the floors of the
	// default queue: the default is one bandwidth-delay product of the
	// direction's round trip (2 x delay), and never less than this many
	// full-size packets nor than this long at the direction's rate, so that
	// the bursts a host sends at memory speed do not overflow a short path's
	// tiny BDP, as a switch's buffer would not.
	DefaultMinQueuePackets = 100
	DefaultMinQueueTime    = 10 * time.Millisecond
	MinMTU                 = 576
	MaxMTU                 = 9000
	MinRate                = 1 * units.Kbit
	MaxRate                = 1000 * units.Gbit
	// MaxDelay bounds a direction's one-way delay and its jitter: a minute
	// is far beyond any path on Earth or to a geostationary satellite.
	MaxDelay = time.Minute
)

// DefaultSubnet holds the hosts' addresses unless the scenario sets subnet.
// It never leaves the test-bed: hosts have no interface but their link to the emulator.
var DefaultSubnet = netip.MustParsePrefix("10.250.0.0/16")

// DefaultSubnet6 holds the hosts' IPv6 addresses unless the scenario sets
// subnet6: a unique local prefix (RFC 4193), which never leaves the
// test-bed either.
var DefaultSubnet6 = netip.MustParsePrefix("fd77:616e:6c61::/64")

var sysctlRE = regexp.MustCompile(`^net(\.[a-z0-9_]+)+$`)

// machineWide are network sysctls that a network namespace reads from the
// machine (read-only) or does not have: a host cannot set them.
var machineWide = map[string]bool{
	"net.core.rmem_max": true, "net.core.wmem_max": true, "net.core.rmem_default": true, "net.core.wmem_default": true,
	"net.core.optmem_max": true, "net.core.netdev_max_backlog": true, "net.core.default_qdisc": true,
	"net.core.busy_poll": true, "net.core.busy_read": true, "net.core.netdev_budget": true, "net.core.dev_weight": true,
	"net.ipv4.tcp_mem": true, "net.ipv4.udp_mem": true, "net.ipv4.tcp_max_orphans": true, "net.ipv4.tcp_low_latency": true,
	"net.ipv4.tcp_allowed_congestion_control": true, "net.ipv4.tcp_available_congestion_control": true,
}

// MachineWide says whether key is a machine-wide network sysctl.
func MachineWide(key string) bool { return machineWide[key] }

// ValidName says whether s is a valid name of a host, site, link or workload.
func ValidName(s string) bool { return nameRE.MatchString(s) }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// DefaultQueue returns the queue used when a direction does not set one.
func DefaultQueue(rate units.Rate, delay time.Duration, mtu int) Queue {
	bytesIn := func(d time.Duration) int64 { return int64(math.Ceil(float64(rate) / 8 * d.Seconds())) }
	return Queue{Bytes: max(int64(DefaultMinQueuePackets*mtu), bytesIn(2*delay), bytesIn(DefaultMinQueueTime))}
}

// Host returns the host with the given name.
func (t *Testbed) Host(name string) (Host, bool) {
	for _, h := range t.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}

// Router returns the router with the given name.
func (t *Testbed) Router(name string) (Router, bool) {
	for _, r := range t.Routers {
		if r.Name == name {
			return r, true
		}
	}
	return Router{}, false
}

// Site returns the site with the given name.
func (t *Testbed) Site(name string) (Site, bool) {
	for _, s := range t.Sites {
		if s.Name == name {
			return s, true
		}
	}
	return Site{}, false
}
