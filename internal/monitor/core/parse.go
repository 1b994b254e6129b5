package core

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// rawConfig is the configuration as written; Parse checks it, section by
// section, into a Config.
type rawConfig struct {
	Testbed   string                     `yaml:"testbed"`
	Inventory string                     `yaml:"inventory"`
	Groups    yamlfile.Ordered[[]string] `yaml:"groups"`
	Targets   rawTargets                 `yaml:"targets"`
	Tests     []rawTest                  `yaml:"tests"`
	Alerts    struct {
		rawThresholds `yaml:",inline"`
		Overrides     []rawOverride `yaml:"overrides"`
	} `yaml:"alerts"`
	Baseline struct {
		Window    string `yaml:"window"`
		MinPoints *int   `yaml:"min_points"`
	} `yaml:"baseline"`
	Retention struct {
		Raw    string `yaml:"raw"`
		Hourly string `yaml:"hourly"`
		Audit  string `yaml:"audit"`
	} `yaml:"retention"`
	Buffer struct {
		Dir string `yaml:"dir"`
		Max string `yaml:"max"`
	} `yaml:"buffer"`
	Webhook    string    `yaml:"webhook"`
	SNMP       []rawSNMP `yaml:"snmp"`
	Interfaces struct {
		Every string `yaml:"every"`
	} `yaml:"interfaces"`
	Access struct {
		Read   string   `yaml:"read"`
		Tokens string   `yaml:"tokens"`
		Hosts  []string `yaml:"hosts"`
	} `yaml:"access"`
}

type rawTest struct {
	Name       string `yaml:"name"`
	Type       string `yaml:"type"`
	Group      string `yaml:"group"`
	Rate       string `yaml:"rate"`
	Summary    string `yaml:"summary"`
	Size       string `yaml:"size"`
	Every      string `yaml:"every"`
	Slip       string `yaml:"slip"`
	Duration   string `yaml:"duration"`
	Streams    int    `yaml:"streams"`
	Congestion string `yaml:"congestion"`
	Window     string `yaml:"window"`
	Bytes      string `yaml:"bytes"`
	MaxHops    int    `yaml:"max_hops"`
	Wait       string `yaml:"wait"`
	// Families (families: [ipv4, ipv6]) or Family (family: ipv6): the
	// address families each pair is tested over, a run each.
	Families []string `yaml:"families"`
	Family   string   `yaml:"family"`
}

type rawThresholds struct {
	ThroughputBelow string `yaml:"throughput_below"`
	LossAbove       string `yaml:"loss_above"`
	RTTStep         string `yaml:"rtt_step"`
	OWDStep         string `yaml:"owd_step"`
	For             *int   `yaml:"for"`
}

type rawOverride struct {
	Pairs         []string `yaml:"pairs"`
	Groups        []string `yaml:"groups"`
	rawThresholds `yaml:",inline"`
}

type rawSNMP struct {
	Name       string   `yaml:"name"`
	Address    string   `yaml:"address"`
	Version    string   `yaml:"version"`
	Community  string   `yaml:"community"`
	User       string   `yaml:"user"`
	AuthProto  string   `yaml:"auth_protocol"`
	AuthPass   string   `yaml:"auth_password"`
	PrivProto  string   `yaml:"priv_protocol"`
	PrivPass   string   `yaml:"priv_password"`
	Every      string   `yaml:"every"`
	Timeout    string   `yaml:"timeout"`
	Interfaces []string `yaml:"interfaces"`
}

// Parse validates a configuration; every problem is reported at its line.
// Host names are checked against the test-bed or inventory by CheckHosts.
func Parse(file string, data []byte) (*Config, error) { return ParseWith(file, data, Checks{}) }

// Checks are what Parse cannot see without I/O, given by its caller
// (monitor.Parse reads the tokens file); a nil check is skipped.
type Checks struct {
	// Tokens checks the tokens file of access: tokens:.
	Tokens func(path string) error
}

// ParseWith is Parse with checks that need I/O.
func ParseWith(file string, data []byte, checks Checks) (*Config, error) {
	var raw rawConfig
	c, _, err := yamlfile.Decode(file, data, &raw, "the configuration is empty: it needs testbed: or inventory:, groups: and tests: (README, monitoring)")
	if err != nil {
		return nil, err
	}
	v := checker{c}
	cfg := &Config{Source: file, Testbed: raw.Testbed, Inventory: raw.Inventory, Groups: raw.Groups, Webhook: raw.Webhook}
	if (raw.Testbed == "") == (raw.Inventory == "") {
		c.Fail("testbed", "give testbed: (a scenario file or built-in name, brought up by serve) or inventory: (real agents), not both")
	}
	if cfg.Inventory != "" && !filepath.IsAbs(cfg.Inventory) {
		cfg.Inventory = filepath.Join(filepath.Dir(file), cfg.Inventory)
	}
	if len(raw.Groups) == 0 {
		c.Fail("groups", "no groups: name the hosts to monitor, as sites: [cern, cnaf, taipei]")
	}
	for _, g := range raw.Groups {
		f := "groups." + g.Key
		if !scenario.ValidName(g.Key) {
			c.Fail(f, "group name %q must be 1-32 letters, digits, '-' or '_'", g.Key)
		}
		if len(g.Value) < 2 {
			c.Fail(f, "a group needs at least two hosts to test between")
		}
		if len(g.Value) > MaxGroup {
			c.Fail(f, "%d hosts: a group has at most %d (%d directed pairs); split the mesh into groups", len(g.Value), MaxGroup, MaxGroup*(MaxGroup-1))
		}
		for i, h := range g.Value {
			if slices.Index(g.Value, h) != i {
				c.Fail(fmt.Sprintf("%s[%d]", f, i), "host %q is listed twice", h)
			}
		}
	}
	cfg.Targets = v.targets(raw.Targets)
	names := map[string]bool{}
	for i, rt := range raw.Tests {
		t := v.test(fmt.Sprintf("tests[%d]", i), rt, raw.Groups)
		if names[t.Name] {
			c.Fail(fmt.Sprintf("tests[%d].name", i), "test %q is named twice", t.Name)
		}
		names[t.Name] = true
		cfg.Tests = append(cfg.Tests, t)
	}
	if len(raw.Tests) == 0 {
		c.Fail("tests", "no tests: give at least one, as {name: latency, type: probe, group: sites}")
	}
	v.checkGroupTargets(cfg)
	cfg.Alerts = v.thresholds("alerts", raw.Alerts.rawThresholds, defaultThresholds)
	for i, ro := range raw.Alerts.Overrides {
		f := fmt.Sprintf("alerts.overrides[%d]", i)
		o := Override{Pairs: ro.Pairs, Groups: ro.Groups, Thresholds: v.thresholds(f, ro.rawThresholds, cfg.Alerts)}
		if len(ro.Pairs)+len(ro.Groups) == 0 {
			c.Fail(f, "an override names pairs: (as cern->cnaf) or groups:")
		}
		for j, p := range ro.Pairs {
			if a, b, ok := strings.Cut(p, "->"); !ok || a == "" || b == "" {
				c.Fail(fmt.Sprintf("%s.pairs[%d]", f, j), "%q: write a pair as source->destination", p)
			}
		}
		for j, g := range ro.Groups {
			if !hasGroup(raw.Groups, g) {
				c.Fail(fmt.Sprintf("%s.groups[%d]", f, j), "no group %q", g)
			}
		}
		cfg.Overrides = append(cfg.Overrides, o)
	}
	cfg.Baseline = defaultBaseline
	if raw.Baseline.Window != "" {
		cfg.Baseline.Window = v.duration("baseline.window", raw.Baseline.Window, time.Minute, 90*24*time.Hour)
	}
	if n := raw.Baseline.MinPoints; n != nil {
		if *n < 1 || *n > 10000 {
			c.Fail("baseline.min_points", "%d: give 1 to 10000 results", *n)
		}
		cfg.Baseline.MinPoints = *n
	}
	cfg.Retention = defaultRetention
	if raw.Retention.Raw != "" {
		cfg.Retention.Raw = v.duration("retention.raw", raw.Retention.Raw, time.Hour, 10*365*24*time.Hour)
	}
	if raw.Retention.Hourly != "" {
		cfg.Retention.Hourly = v.duration("retention.hourly", raw.Retention.Hourly, time.Hour, 100*365*24*time.Hour)
	}
	if raw.Retention.Audit != "" {
		cfg.Retention.Audit = v.duration("retention.audit", raw.Retention.Audit, 24*time.Hour, 100*365*24*time.Hour)
	}
	if cfg.Retention.Hourly < cfg.Retention.Raw {
		c.Fail("retention.hourly", "hourly aggregates (%s) must be kept at least as long as raw results (%s)", Days(cfg.Retention.Hourly), Days(cfg.Retention.Raw))
	}
	cfg.Buffer = Buffer{Dir: raw.Buffer.Dir, Max: DefaultBufferMax}
	if cfg.Buffer.Dir != "" && !filepath.IsAbs(cfg.Buffer.Dir) {
		cfg.Buffer.Dir = filepath.Join(filepath.Dir(file), cfg.Buffer.Dir)
	}
	if raw.Buffer.Max != "" {
		z, err := units.ParseSize(raw.Buffer.Max)
		if err != nil || z < 1<<20 {
			c.Fail("buffer.max", "%q: give a size of at least 1MiB", raw.Buffer.Max)
		}
		cfg.Buffer.Max = int64(z)
	}
	if w := raw.Webhook; w != "" && !strings.HasPrefix(w, "http://") && !strings.HasPrefix(w, "https://") {
		c.Fail("webhook", "%q: give an http:// or https:// URL", w)
	}
	cfg.HostInterfaces = time.Minute
	if e := raw.Interfaces.Every; e != "" {
		if d, err := parseDuration(e); err == nil && d == 0 {
			cfg.HostInterfaces = 0
		} else {
			cfg.HostInterfaces = v.duration("interfaces.every", e, 5*time.Second, time.Hour)
		}
	}
	switch raw.Access.Read {
	case "", "open":
	case "token":
		cfg.Access.ReadNeedsToken = true
	default:
		c.Fail("access.read", "%q: give open (anyone who reaches the listener reads; the default) or token", raw.Access.Read)
	}
	if t := raw.Access.Tokens; t != "" {
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(file), t)
		}
		cfg.Access.Tokens = t
		if checks.Tokens != nil {
			if err := checks.Tokens(t); err != nil {
				c.Fail("access.tokens", "%v", err)
			}
		}
	} else if cfg.Access.ReadNeedsToken {
		c.Fail("access.tokens", "read: token needs a tokens file, as tokens: dashboard-tokens (wanlab token NAME --file FILE makes one)")
	}
	if len(raw.Access.Hosts) > 100 {
		c.Fail("access.hosts", "%d names: give at most 100", len(raw.Access.Hosts))
	}
	for i, h := range raw.Access.Hosts {
		if !ValidHost(h) {
			c.Fail(fmt.Sprintf("access.hosts[%d]", i), "%q: give a name or an address this service is reached by, without a port or scheme, as monitor.example.org", h)
		}
		cfg.Access.Hosts = append(cfg.Access.Hosts, h)
	}
	for i, rs := range raw.SNMP {
		cfg.SNMP = append(cfg.SNMP, v.snmp(fmt.Sprintf("snmp[%d]", i), rs))
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

type checker struct{ *yamlfile.Checker }

func hasGroup(groups yamlfile.Ordered[[]string], name string) bool {
	return slices.ContainsFunc(groups, func(g yamlfile.Keyed[[]string]) bool { return g.Key == name })
}

func (v checker) test(f string, rt rawTest, groups yamlfile.Ordered[[]string]) Test {
	t := Test{Name: rt.Name, Type: rt.Type, Group: rt.Group, Streams: rt.Streams, Congestion: rt.Congestion}
	if !scenario.ValidName(rt.Name) {
		v.Fail(f+".name", "test name %q must be 1-32 letters, digits, '-' or '_'", rt.Name)
	}
	if !hasGroup(groups, rt.Group) {
		v.Fail(f+".group", "no group %q", rt.Group)
	}
	only := func(field, value string, types ...string) {
		if value != "" && !slices.Contains(types, t.Type) {
			v.Fail(f+"."+field, "%s: tests of type %s have no %s", value, t.Type, field)
		}
	}
	only("rate", rt.Rate, Probe)
	only("summary", rt.Summary, Probe)
	only("size", rt.Size, Probe)
	only("every", rt.Every, Throughput, Transfer, Trace, Disk)
	only("slip", rt.Slip, Throughput, Transfer, Disk)
	only("duration", rt.Duration, Throughput)
	only("congestion", rt.Congestion, Throughput)
	only("window", rt.Window, Throughput, Transfer)
	only("bytes", rt.Bytes, Transfer, Disk)
	only("wait", rt.Wait, Trace)
	if rt.MaxHops != 0 {
		only("max_hops", strconv.Itoa(rt.MaxHops), Trace)
	}
	if rt.Streams != 0 {
		only("streams", strconv.Itoa(rt.Streams), Throughput, Transfer)
	}
	t.Families = v.families(f, rt)
	switch rt.Type {
	case Probe:
		t.Rate, t.Summary, t.Size = DefaultProbeRate, DefaultSummary, 64
		if rt.Rate != "" {
			r, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rt.Rate), "/s"), 64)
			if err != nil || !(r >= 0.1 && r <= 1000) {
				v.Fail(f+".rate", "%q: give packets per second from 0.1 to 1000, as 10/s", rt.Rate)
			}
			t.Rate = r
		}
		if rt.Summary != "" {
			t.Summary = v.duration(f+".summary", rt.Summary, time.Second, 24*time.Hour)
		}
		if rt.Size != "" {
			z, err := units.ParseSize(rt.Size)
			if err != nil || z < 36 || z > 9000 {
				v.Fail(f+".size", "%q: give a datagram of 36 to 9000 bytes", rt.Size)
			}
			t.Size = int(z)
		}
		if n := t.Rate * t.Summary.Seconds(); n < 2 && t.Summary > 0 {
			v.Fail(f+".summary", "%s at %g/s is %g probes: a summary needs at least 2", t.Summary, t.Rate, n)
		}
	case Throughput, Transfer:
		if rt.Every == "" {
			v.Fail(f+".every", "give how often each pair is tested, as every: 6h")
		} else {
			t.Every = v.duration(f+".every", rt.Every, 10*time.Second, 30*24*time.Hour)
		}
		t.Slip = t.Every / 10
		if rt.Slip != "" {
			t.Slip = v.duration(f+".slip", rt.Slip, 0, t.Every)
		}
		if t.Streams == 0 {
			t.Streams = 1
		}
		if t.Streams < 1 || t.Streams > 128 {
			v.Fail(f+".streams", "%d: give 1 to 128 streams", t.Streams)
		}
		if rt.Window != "" {
			z, err := units.ParseSize(rt.Window)
			if err != nil || z < 4096 || z > 1<<30 {
				v.Fail(f+".window", "%q: give a window of 4KiB to 1GiB", rt.Window)
			}
			t.Window = int(z)
		}
		if rt.Type == Throughput {
			t.Duration = 10 * time.Second
			if rt.Duration != "" {
				t.Duration = v.duration(f+".duration", rt.Duration, time.Second, 10*time.Minute)
			}
			if t.Congestion != "" && !slices.Contains([]string{"reno", "cubic", "bbr"}, t.Congestion) {
				v.Fail(f+".congestion", "%q: give reno, cubic or bbr", t.Congestion)
			}
		} else {
			if rt.Bytes == "" {
				v.Fail(f+".bytes", "give the size of the file to transfer, as bytes: 100MB")
			} else if z, err := units.ParseSize(rt.Bytes); err != nil || z < 1 || z > 100<<30 {
				v.Fail(f+".bytes", "%q: give a size from 1B to 100GiB", rt.Bytes)
			} else {
				t.Bytes = int64(z)
			}
		}
		if t.Every > 0 && t.Budget() > t.Every {
			v.Fail(f+".every", "every %s is shorter than one test (%s): the pair would never rest", t.Every, t.Budget())
		}
	case Trace:
		t.Every, t.MaxHops, t.Wait = 10*time.Minute, 30, time.Second
		if rt.Every != "" {
			t.Every = v.duration(f+".every", rt.Every, 10*time.Second, 24*time.Hour)
		}
		if rt.MaxHops != 0 {
			if rt.MaxHops < 1 || rt.MaxHops > 64 {
				v.Fail(f+".max_hops", "%d: give 1 to 64 hops", rt.MaxHops)
			}
			t.MaxHops = rt.MaxHops
		}
		if rt.Wait != "" {
			t.Wait = v.duration(f+".wait", rt.Wait, 100*time.Millisecond, 5*time.Second)
		}
		if t.Budget() > t.Every {
			v.Fail(f+".every", "every %s is shorter than a trace of %d hops at %s each", t.Every, t.MaxHops, t.Wait)
		}
	case Disk:
		t.Every, t.Bytes = 6*time.Hour, DefaultDiskBytes
		if rt.Every != "" {
			t.Every = v.duration(f+".every", rt.Every, 10*time.Second, 30*24*time.Hour)
		}
		t.Slip = t.Every / 10
		if rt.Slip != "" {
			t.Slip = v.duration(f+".slip", rt.Slip, 0, t.Every)
		}
		if rt.Bytes != "" {
			if z, err := units.ParseSize(rt.Bytes); err != nil || z < 1<<20 || z > 10<<30 {
				v.Fail(f+".bytes", "%q: give a test file of 1MiB to 10GiB", rt.Bytes)
			} else {
				t.Bytes = int64(z)
			}
		}
		if t.Budget() > t.Every {
			v.Fail(f+".every", "every %s is shorter than one test (%s): the host would never rest", t.Every, t.Budget())
		}
	default:
		v.Fail(f+".type", "%q: give probe, throughput, transfer, trace or disk", rt.Type)
	}
	return t
}

// families checks a test's families: or family:, each ipv4 or ipv6,
// once; a disk test, a host's own, has none.
func (v checker) families(f string, rt rawTest) []string {
	out := rt.Families
	field := f + ".families"
	switch {
	case rt.Family != "" && len(rt.Families) > 0:
		v.Fail(f+".family", "give family: (one) or families: (a list), not both")
		return nil
	case rt.Family != "":
		out, field = []string{rt.Family}, f+".family"
	case rt.Families != nil && len(rt.Families) == 0:
		v.Fail(field, "an empty list: give [ipv4], [ipv6] or [ipv4, ipv6], or leave families: out (one run over the hosts' preference)")
		return nil
	}
	if len(out) > 0 && rt.Type == Disk {
		v.Fail(field, "a disk test measures a host's own disk: it has no address family")
		return nil
	}
	for i, fam := range out {
		if fam != IPv4 && fam != IPv6 {
			v.Fail(field, "%q: give ipv4 or ipv6", fam)
			return nil
		}
		if slices.Index(out, fam) != i {
			v.Fail(field, "%s is listed twice", fam)
			return nil
		}
	}
	return out
}

func (v checker) thresholds(f string, r rawThresholds, base Thresholds) Thresholds {
	t := base
	if r.ThroughputBelow != "" {
		p, err := units.ParsePercent(r.ThroughputBelow)
		if err != nil || p <= 0 || p >= 1 {
			v.Fail(f+".throughput_below", "%q: give a fraction of the baseline between 0%% and 100%%, as 70%%", r.ThroughputBelow)
		}
		t.ThroughputBelow = p
	}
	if r.LossAbove != "" {
		p, err := units.ParsePercent(r.LossAbove)
		if err != nil || p <= 0 || p >= 1 {
			v.Fail(f+".loss_above", "%q: give a loss between 0%% and 100%%, as 1%%", r.LossAbove)
		}
		t.LossAbove = p
	}
	if r.RTTStep != "" {
		t.RTTStep = v.duration(f+".rtt_step", r.RTTStep, 100*time.Microsecond, time.Minute)
	}
	if r.OWDStep != "" {
		t.OWDStep = v.duration(f+".owd_step", r.OWDStep, 100*time.Microsecond, time.Minute)
	}
	if r.For != nil {
		if *r.For < 1 || *r.For > 100 {
			v.Fail(f+".for", "%d: give 1 to 100 results in a row", *r.For)
		}
		t.For = *r.For
	}
	return t
}

func (v checker) snmp(f string, r rawSNMP) SNMPTarget {
	s := SNMPTarget{Name: r.Name, Address: r.Address, Version: r.Version, Community: r.Community, User: r.User,
		AuthProto: strings.ToUpper(r.AuthProto), AuthPass: r.AuthPass, PrivProto: strings.ToUpper(r.PrivProto), PrivPass: r.PrivPass,
		Every: time.Minute, Timeout: 5 * time.Second, Interfaces: r.Interfaces}
	if !scenario.ValidName(r.Name) {
		v.Fail(f+".name", "%q: name the device with 1-32 letters, digits, '-' or '_'", r.Name)
	}
	if _, port, ok := SplitHostPort(r.Address); !ok || port == "" || port == "0" {
		v.Fail(f+".address", "%q: give the agent's host:port, as 192.0.2.1:161", r.Address)
	}
	if r.Every != "" {
		s.Every = v.duration(f+".every", r.Every, time.Second, time.Hour)
	}
	if r.Timeout != "" {
		s.Timeout = v.duration(f+".timeout", r.Timeout, 100*time.Millisecond, time.Minute)
	}
	switch r.Version {
	case "2c":
		if r.Community == "" {
			v.Fail(f+".community", "SNMP v2c needs a community")
		}
	case "3":
		if r.User == "" {
			v.Fail(f+".user", "SNMP v3 needs a user")
		}
		if s.AuthProto != "" && s.AuthProto != "SHA" && s.AuthProto != "MD5" {
			v.Fail(f+".auth_protocol", "%q: give SHA or MD5", r.AuthProto)
		}
		if s.PrivProto != "" && s.PrivProto != "AES" && s.PrivProto != "DES" {
			v.Fail(f+".priv_protocol", "%q: give AES or DES", r.PrivProto)
		}
		if (s.AuthProto == "") != (s.AuthPass == "") || (s.PrivProto == "") != (s.PrivPass == "") {
			v.Fail(f, "give each of auth_protocol/auth_password and priv_protocol/priv_password with its pair")
		}
		if s.PrivProto != "" && s.AuthProto == "" {
			v.Fail(f+".priv_protocol", "privacy needs authentication (auth_protocol)")
		}
		if (s.AuthPass != "" && len(s.AuthPass) < 8) || (s.PrivPass != "" && len(s.PrivPass) < 8) {
			v.Fail(f, "SNMP v3 passwords have at least 8 characters")
		}
	default:
		v.Fail(f+".version", "%q: give 2c or 3", r.Version)
	}
	return s
}

// duration parses a duration from lo to hi; "d" counts days.
func (v checker) duration(f, s string, lo, hi time.Duration) time.Duration {
	d, err := parseDuration(s)
	if err != nil {
		v.Fail(f, "%v", err)
		return lo
	}
	if d < lo || d > hi {
		v.Fail(f, "%s: give %s to %s", s, Days(lo), Days(hi))
		return lo
	}
	return d
}

// parseDuration reads a duration as units.ParseDuration does, or in days ("30d").
func parseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		if x, err := strconv.ParseFloat(n, 64); err == nil && x >= 0 && x < 1e5 {
			return time.Duration(x * float64(24*time.Hour)), nil
		}
	}
	return units.ParseDuration(s)
}

// Days prints a duration, in days when it is whole days.
func Days(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	// Zero seconds and zero minutes go, and nothing else: 1h30m0s is 1h30m.
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
