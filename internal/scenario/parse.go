package scenario

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// rawFile is the YAML as written; quantities stay strings until validation so
// that every error can name its field.
type rawFile struct {
	Name    string                    `yaml:"name"`
	Subnet  string                    `yaml:"subnet"`
	Seed    *uint64                   `yaml:"seed"`
	Hosts   yamlfile.Ordered[rawHost] `yaml:"hosts"`
	Sites   yamlfile.Ordered[rawSite] `yaml:"sites"`
	Links   []rawLink                 `yaml:"links"`
	Engine  *rawEngine                `yaml:"engine"`
	Machine *rawMachine               `yaml:"machine"`
	TLS     *pki.Files                `yaml:"tls"`
	// Events are read by ParseFile, with the workloads.
	Events yaml.Node `yaml:"events"`
	// Workloads are read by ParseFile; the test-bed does not need them.
	Workloads yaml.Node `yaml:"workloads"`
}

type rawEngine struct {
	Realtime      *bool  `yaml:"realtime"`
	Spin          string `yaml:"spin"`
	KeepCPUsAwake *bool  `yaml:"keep_cpus_awake"`
	Offloads      *bool  `yaml:"offloads"`
	Coalesce      string `yaml:"coalesce"`
	Threads       *int   `yaml:"threads"`
}

type rawMachine struct {
	Sysctl  map[string]string `yaml:"sysctl"`
	Modules []string          `yaml:"modules"`
}

type rawHost struct {
	CPUs   *float64          `yaml:"cpus"`
	Site   string            `yaml:"site"`
	Sysctl map[string]string `yaml:"sysctl"`
	Disk   *rawDisk          `yaml:"disk"`
	Agent  string            `yaml:"agent"`
}

type rawDisk struct {
	Read  string `yaml:"read"`
	Write string `yaml:"write"`
}

type rawParams struct {
	Rate    string  `yaml:"rate"`
	Delay   string  `yaml:"delay"`
	Jitter  string  `yaml:"jitter"`
	Loss    rawLoss `yaml:"loss"`
	Queue   string  `yaml:"queue"`
	MTU     *int    `yaml:"mtu"`
	Reorder *bool   `yaml:"reorder"`
	// Down is only a setting (testbed set, events): in a site "down" is
	// its down direction.
	Down      *bool    `yaml:"-"`
	Blackhole *bool    `yaml:"blackhole"`
	Hops      []string `yaml:"hops"`
	hopsSet   bool
	Cross     *rawCross `yaml:"cross"`
	crossOff  bool
	Trace     *rawTrace `yaml:"trace"`
}

type rawCross struct {
	Rate      string   `yaml:"rate"`
	Pattern   string   `yaml:"pattern"`
	Size      string   `yaml:"size"`
	On        string   `yaml:"on"`
	Off       string   `yaml:"off"`
	FlowMean  string   `yaml:"flow_mean"`
	FlowShape *float64 `yaml:"flow_shape"`
	FlowRate  string   `yaml:"flow_rate"`
}

type rawLink struct {
	Between   []string `yaml:"between"`
	rawParams `yaml:",inline"`
	Forward   *rawParams `yaml:"forward"`
	Reverse   *rawParams `yaml:"reverse"`
}

type rawSite struct {
	rawParams `yaml:",inline"`
	Up        *rawParams `yaml:"up"`
	Down      *rawParams `yaml:"down"`
	LAN       *rawParams `yaml:"lan"`
}

// Error lists the problems found in a scenario file.
type Error = yamlfile.Error

// Problem is one thing wrong in a scenario, at a place in the file.
type Problem = yamlfile.Problem

// Load reads and validates the scenario file at path: its test-bed and,
// with the quick: settings applied when quick is set, every step of every
// workload. A returned error is an *Error listing every problem found, or
// says why the file could not be read.
func Load(path string, quick bool) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	return Parse(path, data, quick)
}

// Parse reads and validates a scenario: its test-bed and every step of
// every workload (with the quick: settings applied when quick is set), so
// that a run never starts with an impossible step in it. file names the
// source in errors. A returned error is an *Error listing every problem found.
func Parse(file string, data []byte, quick bool) (*File, error) {
	return parse(file, data, quick, false)
}

// ParseStored reads a scenario as a run stored it: as Parse, but the files
// it names (traces) are not read, since they may be gone or changed.
func ParseStored(file string, data []byte, quick bool) (*File, error) {
	return parse(file, data, quick, true)
}

func parse(file string, data []byte, quick, stored bool) (*File, error) {
	var raw rawFile
	c, root, err := yamlfile.Read(file, data, &raw, "the file is empty: a scenario needs at least name and hosts")
	if err != nil {
		return nil, err
	}
	v := &validator{Checker: c, dir: filepath.Dir(file), stored: stored}
	tb := v.testbed(&raw)
	f := &File{Testbed: tb, Quick: quick}
	// The timelines and workloads name the hosts and links: without hosts
	// every name would be unknown, which says nothing more.
	if len(tb.Hosts) > 0 {
		f.Events = v.events("events", &raw.Events, tb, 0, tb.Seed)
		v.workloads(f, root)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

type validator struct {
	*yamlfile.Checker
	// dir is the scenario's folder, which files it names are relative to.
	dir string
	// stored says the scenario is a run's copy from the archive: the
	// files it names are not read (they may have gone since).
	stored bool
	// tb is the test-bed, once read: events check their settings on it.
	tb *Testbed
	// selectors are the test-bed's link selectors, once made.
	selectors map[string][]string
	// eventCount and changeCount count the file's timelines: their
	// entries and the changes they expand to.
	eventCount, changeCount int
	// reach says which pairs of hosts can reach each other, once made.
	reach *reachability
	// all are the test-bed's hosts, a mesh's when it names none; allChecked
	// says they were checked to reach each other.
	all        []string
	allChecked bool
}

func (v *validator) fail(field, format string, args ...any) { v.Fail(field, format, args...) }

func (v *validator) name(field, kind, s string) {
	if !nameRE.MatchString(s) {
		v.fail(field, "%s name %q must be 1-32 letters, digits, '-' or '_', starting with a letter or digit", kind, s)
	}
}

func (v *validator) testbed(raw *rawFile) *Testbed {
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

	for _, s := range raw.Sites {
		field := "sites." + s.Key
		v.name(field, "site", s.Key)
		base := v.params(field, s.Value.rawParams, Direction{MTU: DefaultMTU}, false)
		site := Site{Name: s.Key,
			Up:   v.override(field+".up", s.Value.Up, base),
			Down: v.override(field+".down", s.Value.Down, base),
			LAN:  Direction{MTU: DefaultMTU},
		}
		if s.Value.LAN != nil {
			site.LAN = v.params(field+".lan", *s.Value.LAN, Direction{MTU: DefaultMTU}, true)
		}
		tb.Sites = append(tb.Sites, site)
	}

	// Names looked up by name, once per host and link end.
	sites, hosts := map[string]bool{}, map[string]bool{}
	for _, s := range raw.Sites {
		sites[s.Key] = true
	}
	for _, h := range raw.Hosts {
		hosts[h.Key] = true
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

	pairs := map[[2]string]int{}
	for i, l := range raw.Links {
		field := fmt.Sprintf("links[%d]", i)
		if len(l.Between) != 2 {
			v.fail(field+".between", "a link needs exactly two hosts, e.g. between: [a, b]")
			continue
		}
		link := Link{A: l.Between[0], B: l.Between[1]}
		for j, name := range l.Between {
			if !hosts[name] {
				v.fail(fmt.Sprintf("%s.between[%d]", field, j), "unknown host %q", name)
			}
		}
		if link.A == link.B {
			v.fail(field+".between", "a link joins two different hosts, not %q to itself", link.A)
		}
		key := [2]string{min(link.A, link.B), max(link.A, link.B)}
		if j, dup := pairs[key]; dup {
			v.fail(field+".between", "hosts %s and %s are already joined by links[%d]", link.A, link.B, j)
		}
		pairs[key] = i
		base := v.params(field, l.rawParams, Direction{MTU: DefaultMTU}, false)
		link.Forward = v.override(field+".forward", l.Forward, base)
		link.Reverse = v.override(field+".reverse", l.Reverse, base)
		tb.Links = append(tb.Links, link)
	}
	v.routersOutside(tb)
	return tb
}

// agents checks that hosts name agents all or none, and reads the TLS
// files a controller reaches them with.
func (v *validator) agents(raw *rawFile, tb *Testbed) {
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

// CheckAgent checks an agent's address as scenarios and inventories give
// it: host:port, the host a name or an address.
func CheckAgent(a string) error {
	host, port, err := net.SplitHostPort(a)
	if p, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: give the agent's host:port, as 10.1.0.1:7400 or dtn01.example.org:7400", a)
	}
	return nil
}

// ChangeKeys are the settings Change takes.
var ChangeKeys = []string{"rate", "delay", "jitter", "loss", "queue", "reorder", "mtu", "down", "blackhole", "hops", "cross", "cross_pattern"}

// isZero says whether a rate is written as zero ("0", "0Mbit").
func isZero(rate string) bool {
	r, err := units.ParseRate(rate)
	return err == nil && r == 0 || strings.Trim(rate, "0.") == ""
}

// Change applies settings written key=value (rate, delay, jitter, loss,
// queue, reorder, mtu, down, blackhole, hops=ADDR,ADDR|none: as in a
// scenario's link) over a direction's, with the
// same validation as a scenario file; a change of rate or delay without a
// queue keeps the queue in force.
func Change(d Direction, settings []string) (Direction, error) {
	var raw rawParams
	for _, s := range settings {
		key, value, ok := strings.Cut(s, "=")
		if !ok || value == "" {
			return d, fmt.Errorf("%q: write settings as key=value (rate=10Mbit delay=20ms jitter=1ms loss=0.5%% queue=100 mtu=1400 down=true)", s)
		}
		if key == "rate" && isZero(value) {
			return d, fmt.Errorf("rate=%s: a rate of zero carries nothing; to cut the link use down=true", value)
		}
		switch key {
		case "rate":
			raw.Rate = value
		case "delay":
			raw.Delay = value
		case "jitter":
			raw.Jitter = value
		case "loss":
			raw.Loss = rawLoss{Random: value, set: true}
		case "queue":
			raw.Queue = value
		case "reorder", "down", "blackhole":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return d, fmt.Errorf("%s=%s: give true or false", key, value)
			}
			switch key {
			case "reorder":
				raw.Reorder = &b
			case "down":
				raw.Down = &b
			default:
				raw.Blackhole = &b
			}
		case "mtu":
			m, err := strconv.Atoi(value)
			if err != nil {
				return d, fmt.Errorf("mtu=%s: give the MTU in bytes, as mtu=1400", value)
			}
			raw.MTU = &m
		case "cross":
			if value == "none" {
				raw.crossOff = true
				continue
			}
			if raw.Cross == nil {
				raw.Cross = &rawCross{}
			}
			raw.Cross.Rate = value
		case "cross_pattern":
			if raw.Cross == nil {
				raw.Cross = &rawCross{}
			}
			raw.Cross.Pattern = value
		case "hops":
			raw.hopsSet = true
			if value != "none" {
				raw.Hops = strings.Split(value, ",")
			}
		default:
			return d, fmt.Errorf("%q: no setting %q (%s)", s, key, strings.Join(ChangeKeys, ", "))
		}
	}
	v := &validator{Checker: &yamlfile.Checker{File: "settings"}}
	out := v.params("", raw, d, true)
	if err := v.Err(); err != nil {
		var msgs []string
		for _, p := range err.(*yamlfile.Error).Problems {
			msgs = append(msgs, strings.TrimPrefix(p.Field, ".")+": "+p.Msg)
		}
		return d, errors.New(strings.Join(msgs, "; "))
	}
	return out, nil
}
