package scenario

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// bedChecker reads the test-bed: its engine, machine, sites, hosts and
// links, with its directions' settings read as every direction's are.
type bedChecker struct {
	*dirChecker
	// pastBounds says the test-bed's graph passed a bound and was not
	// read: what names its links and hosts' paths would say nothing more.
	pastBounds bool
}

// testbed reads the test-bed of a scenario file.
func (v *bedChecker) testbed(raw *rawFile) *Testbed {
	tb := &Testbed{Name: raw.Name, Subnet: DefaultSubnet, Seed: 1, Engine: Engine{Realtime: true, Spin: DefaultSpin, KeepCPUsAwake: true, Offloads: true}}
	if e := raw.Engine; e != nil {
		if e.Realtime != nil {
			tb.Engine.Realtime = *e.Realtime
		}
		if e.KeepCPUsAwake != nil {
			tb.Engine.KeepCPUsAwake = *e.KeepCPUsAwake
		}
		if e.Offloads != nil {
			tb.Engine.Offloads = *e.Offloads
		}
		tb.Engine.Threads = v.count("engine.threads", e.Threads, 0, 1, MaxThreads)
		if e.Coalesce != "" && e.Coalesce != "auto" {
			d, err := units.ParseDuration(e.Coalesce)
			switch {
			case err != nil:
				v.fail("engine.coalesce", "%v (a duration such as 250us, or auto)", err)
			case d <= 0:
				v.fail("engine.coalesce", "%s: a window is at least 1us; auto (the default) gives each link its own", e.Coalesce)
			case d > time.Millisecond:
				v.fail("engine.coalesce", "%s would delay packets past the engine's lateness target: keep it at 1ms or less (default auto: 50-250us by link rate)", e.Coalesce)
			default:
				tb.Engine.Coalesce = d
			}
		}
		if e.Spin != "" {
			d, err := units.ParseDuration(e.Spin)
			switch {
			case err != nil:
				v.fail("engine.spin", "%v", err)
			case d > time.Millisecond:
				v.fail("engine.spin", "%s would burn a core: keep it at 1ms or less", e.Spin)
			default:
				tb.Engine.Spin = d
			}
		}
	}
	tb.Machine = v.machine(raw.Machine)
	if raw.Name == "" {
		v.fail("name", "missing: every test-bed needs a name")
	} else {
		v.name("name", "test-bed", raw.Name)
	}
	if raw.Seed != nil {
		tb.Seed = *raw.Seed
	}
	if raw.Subnet != "" {
		p, err := netip.ParsePrefix(raw.Subnet)
		switch {
		case err != nil:
			v.fail("subnet", "%q is not an IPv4 prefix such as 10.250.0.0/16", raw.Subnet)
		case !p.Addr().Is4():
			v.fail("subnet", "%q: only IPv4 is supported", raw.Subnet)
		case p.Bits() > 30:
			v.fail("subnet", "%q is too small: use /30 or larger", raw.Subnet)
		default:
			tb.Subnet = p.Masked()
		}
	}
	v.family(tb, raw)

	for _, s := range raw.Sites {
		field := "sites." + s.Key
		v.name(field, "site", s.Key)
		base := v.params(field, s.Value.rawParams, Direction{MTU: DefaultMTU}, false)
		site := Site{Name: s.Key, Via: s.Value.Via,
			Up:   v.override(field+".up", s.Value.Up, base),
			Down: v.override(field+".down", s.Value.Down, base),
			LAN:  Direction{MTU: DefaultMTU},
		}
		if s.Value.LAN != nil {
			site.LAN = v.params(field+".lan", *s.Value.LAN, Direction{MTU: DefaultMTU}, true)
		}
		tb.Sites = append(tb.Sites, site)
	}

	// Sites looked up by name, once per host.
	sites := map[string]bool{}
	for _, s := range raw.Sites {
		sites[s.Key] = true
	}
	if len(raw.Hosts) == 0 {
		v.fail("hosts", "missing: a test-bed needs at least one host")
	}
	if n := len(raw.Hosts); n > 0 && tb.Subnet.IsValid() && n > (1<<(32-tb.Subnet.Bits()))-2 {
		v.fail("hosts", "%d hosts do not fit in subnet %s", n, tb.Subnet)
	}
	for _, h := range raw.Hosts {
		field := "hosts." + h.Key
		v.name(field, "host", h.Key)
		host := Host{Name: h.Key, Site: h.Value.Site, Sysctl: h.Value.Sysctl, Agent: h.Value.Agent}
		if a := h.Value.Agent; a != "" {
			if err := CheckAgent(a); err != nil {
				v.fail(field+".agent", "%v", err)
			}
		}
		for _, key := range slices.Sorted(maps.Keys(h.Value.Sysctl)) {
			if !sysctlRE.MatchString(key) {
				v.fail(field+".sysctl", "%q is not a network sysctl: give a dotted name under net., e.g. net.ipv4.tcp_rmem", key)
			} else if machineWide[key] {
				v.fail(field+".sysctl", "%s is machine-wide, not per host: a network namespace cannot set it (it reads the machine's). Declare it once for the test-bed instead: machine: {sysctl: {%s: %s}}", key, key, h.Value.Sysctl[key])
			}
		}
		if c := h.Value.CPUs; c != nil {
			if !(*c > 0 && *c <= 1024) { // also NaN, which compares false
				v.fail(field+".cpus", "%v cores is impossible: give a quota above 0 (e.g. 0.5)", *c)
			}
			host.CPUs = *c
		}
		if d := h.Value.Disk; d != nil {
			host.Disk = &Disk{}
			for _, dir := range []struct {
				name, value string
				bps         *int64
			}{{"read", d.Read, &host.Disk.ReadBps}, {"write", d.Write, &host.Disk.WriteBps}} {
				if dir.value == "" {
					continue
				}
				bps, err := units.ParseByteRate(dir.value)
				switch {
				case err != nil:
					v.fail(field+".disk."+dir.name, "%v", err)
				case bps < 64<<10:
					v.fail(field+".disk."+dir.name, "%s is below the 64KB/s that disk throttling can hold", dir.value)
				}
				*dir.bps = bps
			}
			if d.Read == "" && d.Write == "" {
				v.fail(field+".disk", "give a read and/or write rate, e.g. {read: 3MB/s, write: 5MB/s}")
			}
		}
		if host.Site != "" {
			if !sites[host.Site] {
				v.fail(field+".site", "unknown site %q", host.Site)
			}
		}
		tb.Hosts = append(tb.Hosts, host)
	}
	v.agents(raw, tb)
	v.backend(raw, tb)

	if v.bounded(raw) {
		g := &graphChecker{dirChecker: v.dirChecker, tb: tb}
		g.read(raw)
	} else {
		v.pastBounds = true
	}
	v.routersOutside(tb)
	v.mtu6(tb)
	return tb
}

// MinMTU6 is IPv6's minimum link MTU (RFC 8200): a path of a test-bed
// whose hosts have IPv6 may be no narrower.
const MinMTU6 = 1280

// mtu6 refuses a direction narrower than IPv6 allows on a test-bed whose
// hosts have IPv6: a host would clamp the path MTU it is told up to 1280
// and its packets would keep being dropped.
func (v *bedChecker) mtu6(tb *Testbed) {
	if !tb.HasIPv6() {
		return
	}
	dirs := tb.namedDirections()
	for _, s := range tb.Sites {
		dirs["site "+s.Name+" lan"] = s.LAN
	}
	for _, name := range slices.Sorted(maps.Keys(dirs)) {
		if mtu := dirs[name].MTU; mtu < MinMTU6 {
			v.fail("family", "%s has an MTU of %d, below IPv6's minimum of %d: give the hosts IPv4 alone, or the direction mtu: %d or more", name, mtu, MinMTU6, MinMTU6)
		}
	}
}

// agents checks that hosts name agents all or none, and reads the TLS
// files a controller reaches them with.
func (v *bedChecker) agents(raw *rawFile, tb *Testbed) {
	var with, without []string
	for _, h := range tb.Hosts {
		if h.Agent != "" {
			with = append(with, h.Name)
		} else {
			without = append(without, h.Name)
		}
	}
	if len(with) > 0 && len(without) > 0 {
		v.fail("hosts."+without[0]+".agent", "hosts %s name agents and %s do not: on real hosts every host needs one (or leave agent: out and give wanlab run --inventory)", strings.Join(with, ", "), strings.Join(without, ", "))
	}
	if t := raw.TLS; t != nil {
		if len(with) == 0 {
			v.fail("tls", "tls: is for hosts that name agents (agent: host:port), and none does")
		}
		for _, m := range t.Missing() {
			v.fail("tls."+m, "give the controller's %s file", m)
		}
		tb.TLS = t
	}
}

// backend reads backend:, which hosts that name agents cannot have: real
// hosts are not simulated.
func (v *bedChecker) backend(raw *rawFile, tb *Testbed) {
	switch raw.Backend {
	case "", BackendEmulated:
	case BackendSimulated:
		tb.Backend = BackendSimulated
		if tb.RealHosts() {
			v.fail("backend", "simulated: the hosts name agents, so the scenario runs on real hosts; leave backend: out")
		}
	default:
		v.fail("backend", "%q: give emulated (wanlab run emulates it, the default) or simulated (too large to emulate: only wanlab predict runs it)", raw.Backend)
	}
}

// CheckAgent checks an agent's address as scenarios and inventories give
// it: host:port, the host a name or an address.
func CheckAgent(a string) error {
	host, port, err := net.SplitHostPort(a)
	if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: give the agent's host:port, as 10.1.0.1:7400 or dtn01.example.org:7400", a)
	}
	return nil
}

// routersOutside refuses routers with addresses in the hosts' subnet:
// an ICMP error from one would seem to come from a host.
func (v *bedChecker) routersOutside(tb *Testbed) {
	check := func(field string, dirs ...Direction) {
		for _, d := range dirs {
			for _, h := range d.Hops {
				if tb.Subnet.Contains(h.Addr) {
					v.fail(field+".hops", "router %s is in the hosts' subnet %s: give routers addresses outside it (as 192.0.2.0/24)", h, tb.Subnet)
					return
				}
			}
		}
	}
	for _, s := range tb.Sites {
		check("sites."+s.Name, s.Up, s.Down, s.LAN)
	}
	for i, l := range tb.Links {
		check(fmt.Sprintf("links[%d]", i), l.Forward, l.Reverse)
	}
}

// family reads subnet6 and family: the hosts' IPv6 prefix, and which
// families they have (dual by default with subnet6, else IPv4 alone).
func (v *bedChecker) family(tb *Testbed, raw *rawFile) {
	tb.Family = FamilyIPv4
	if raw.Subnet6 != "" {
		tb.Family = FamilyDual
	}
	switch raw.Family {
	case "":
	case FamilyIPv4, FamilyDual, FamilyIPv6:
		tb.Family = raw.Family
	default:
		v.fail("family", "%q: say dual, ipv4 or ipv6", raw.Family)
	}
	if raw.Family == FamilyIPv4 && raw.Subnet6 != "" {
		v.fail("subnet6", "%q is given but family is ipv4: drop one", raw.Subnet6)
	}
	if raw.Family == FamilyIPv6 && raw.Subnet != "" {
		v.fail("subnet", "%q is given but family is ipv6: drop one", raw.Subnet)
	}
	if !tb.HasIPv6() {
		return
	}
	tb.Subnet6 = DefaultSubnet6
	if raw.Subnet6 == "" {
		return
	}
	p, err := netip.ParsePrefix(raw.Subnet6)
	switch {
	case err != nil:
		v.fail("subnet6", "%q is not an IPv6 prefix such as fd00:1::/64", raw.Subnet6)
	case !p.Addr().Is6() || p.Addr().Is4In6():
		v.fail("subnet6", "%q is not an IPv6 prefix: IPv4 goes in subnet", raw.Subnet6)
	case p.Bits() > 120:
		v.fail("subnet6", "%q is too small: use /120 or larger", raw.Subnet6)
	case p.Overlaps(RouterSubnet6):
		v.fail("subnet6", "%q overlaps %s, where routers' IPv6 addresses are chosen", raw.Subnet6, RouterSubnet6)
	case p.Addr().IsMulticast() || p.Addr().IsLinkLocalUnicast() || p.Addr().IsLoopback():
		v.fail("subnet6", "%q is a multicast, link-local or loopback prefix: use a unique local (fd00::/8) or global one", raw.Subnet6)
	default:
		tb.Subnet6 = p.Masked()
	}
}
