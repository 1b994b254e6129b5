package core

import (
	"net"
	"strings"
	"testing"
	"time"
)

const goodConfig = `testbed: monitor-sites
groups:
  sites: [cern, cnaf, slac]
  pair: [cern, taipei]
tests:
  - {name: latency, type: probe, group: sites, rate: 10/s, summary: 1m, size: 100}
  - {name: bulk, type: throughput, group: sites, every: 6h, duration: 20s, streams: 4, congestion: bbr, window: 4MiB}
  - {name: disk, type: transfer, group: pair, every: 1d, bytes: 1GB, slip: 1h}
alerts:
  throughput_below: 70%
  loss_above: 0.5%
  rtt_step: 10ms
  owd_step: 2ms
  for: 3
  overrides:
    - {pairs: [cern->taipei], rtt_step: 50ms}
    - {groups: [sites], for: 1}
baseline: {window: 7d, min_points: 10}
retention: {raw: 14d, hourly: 2y, audit: 90d}
access: {hosts: [Monitor.Example.org., "2001:db8::1"]}
buffer: {dir: buf, max: 64MiB}
webhook: https://alerts.example.org/hook
snmp:
  - {name: border, address: "192.0.2.1:161", version: 2c, community: public, every: 30s}
  - {name: core, address: "192.0.2.2:161", version: "3", user: wanlab, auth_protocol: sha, auth_password: secretsecret, priv_protocol: aes, priv_password: secretsecret, interfaces: [eth0]}
`

func TestParseGood(t *testing.T) {
	cfg, err := Parse("/etc/wanlab/monitor.yaml", []byte(strings.Replace(goodConfig, "2y", "730d", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Tests) != 3 || cfg.Tests[0].Rate != 10 || cfg.Tests[0].Summary != time.Minute || cfg.Tests[0].Size != 100 {
		t.Errorf("probe test %+v", cfg.Tests[0])
	}
	if b := cfg.Tests[1]; b.Every != 6*time.Hour || b.Slip != 36*time.Minute || b.Duration != 20*time.Second || b.Streams != 4 || b.Window != 4<<20 || !b.Exclusive() {
		t.Errorf("throughput test %+v", b)
	}
	if d := cfg.Tests[2]; d.Every != 24*time.Hour || d.Bytes != 1e9 || d.Slip != time.Hour || d.Streams != 1 {
		t.Errorf("transfer test %+v", d)
	}
	if got := len(cfg.Pairs(cfg.Tests[0])); got != 6 {
		t.Errorf("%d pairs in a group of 3, want 6", got)
	}
	if cfg.Buffer.Dir != "/etc/wanlab/buf" || cfg.Buffer.Max != 64<<20 || cfg.Retention.Raw != 14*24*time.Hour || cfg.Retention.Audit != 90*24*time.Hour || cfg.Baseline.Window != 7*24*time.Hour {
		t.Errorf("buffer %+v, retention %+v, baseline %+v", cfg.Buffer, cfg.Retention, cfg.Baseline)
	}
	// Thresholds: the last override that names a pair or its group.
	if th := cfg.For("cern", "taipei"); th.RTTStep != 50*time.Millisecond || th.For != 3 || th.ThroughputBelow != 0.7 {
		t.Errorf("cern->taipei thresholds %+v", th)
	}
	if th := cfg.For("cern", "cnaf"); th.For != 1 || th.RTTStep != 10*time.Millisecond {
		t.Errorf("cern->cnaf thresholds %+v", th)
	}
	if th := cfg.For("taipei", "cern"); th.For != 3 || th.LossAbove != 0.005 || th.OWDStep != 2*time.Millisecond {
		t.Errorf("taipei->cern thresholds %+v", th)
	}
	if h := cfg.Access.Hosts; len(h) != 2 || h[0] != "Monitor.Example.org." || h[1] != "2001:db8::1" {
		t.Errorf("access hosts %q", h)
	}
	if s := cfg.SNMP[1]; s.AuthProto != "SHA" || s.PrivProto != "AES" || s.Every != time.Minute {
		t.Errorf("snmp %+v", s)
	}
	if err := cfg.CheckHosts([]string{"cern", "cnaf", "slac", "taipei"}); err != nil {
		t.Error(err)
	}
	if err := cfg.CheckHosts([]string{"cern", "cnaf", "taipei"}); err == nil || !strings.Contains(err.Error(), `group sites names host "slac"`) {
		t.Errorf("unknown host: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "the configuration is empty"},
		{"both", "testbed: a\ninventory: b\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\n", "1: testbed: give testbed:"},
		{"unknown field", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g, speed: 1}]\n", "speed"},
		{"small group", "testbed: a\ngroups:\n  g: [a]\ntests: [{name: p, type: probe, group: g}]\n", "3: groups.g: a group needs at least two hosts"},
		{"twice", "testbed: a\ngroups:\n  g: [a, b, a]\ntests: [{name: p, type: probe, group: g}]\n", `host "a" is listed twice`},
		{"no group", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: p, type: probe, group: h}\n", `4: tests[0].group: no group "h"`},
		{"type", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: p, type: ping, group: g}\n", `"ping": give probe, throughput, transfer, trace or disk`},
		{"field of another type", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: p, type: probe, group: g, every: 1h}\n", "tests of type probe have no every"},
		{"rate", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: p, type: probe, group: g, rate: 5000/s}\n", "packets per second from 0.1 to 1000"},
		{"few probes", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: p, type: probe, group: g, rate: 1/s, summary: 1s}\n", "a summary needs at least 2"},
		{"every missing", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: t, type: throughput, group: g}\n", "give how often each pair is tested"},
		{"every too short", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: t, type: throughput, group: g, every: 20s, duration: 1m}\n", "shorter than one test"},
		{"congestion", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: t, type: throughput, group: g, every: 1h, congestion: vegas}\n", "give reno, cubic or bbr"},
		{"transfer bytes", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: t, type: transfer, group: g, every: 1h}\n", "give the size of the file"},
		{"duplicate test", "testbed: a\ngroups: {g: [a, b]}\ntests:\n  - {name: p, type: probe, group: g}\n  - {name: p, type: probe, group: g}\n", `5: tests[1].name: test "p" is named twice`},
		{"threshold", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nalerts: {loss_above: 150%}\n", "give a loss between"},
		{"override", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nalerts:\n  overrides:\n    - {pairs: [a-b]}\n", "write a pair as source->destination"},
		{"owd_step not a duration", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nalerts: {owd_step: 5}\n", `4: alerts.owd_step: duration "5"`},
		{"owd_step too small", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nalerts:\n  owd_step: 10us\n", "5: alerts.owd_step: 10us: give 100µs to 1m"},
		{"owd_step too large", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nalerts: {owd_step: 2m}\n", "alerts.owd_step: 2m: give 100µs to 1m"},
		{"owd_step of an override", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nalerts:\n  overrides:\n    - {pairs: [a->b], owd_step: -1ms}\n", "alerts.overrides[0].owd_step"},
		{"retention", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nretention: {raw: 30d, hourly: 7d}\n", "must be kept at least as long"},
		{"audit retention", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nretention: {audit: 1h}\n", "retention.audit"},
		{"access host with a port", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\naccess: {hosts: [ok.example, 'monitor.example.org:9474']}\n", `access.hosts[1]: "monitor.example.org:9474": give a name`},
		{"access host wildcard", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\naccess: {hosts: ['*.example.org']}\n", "without a port or scheme"},
		{"webhook", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nwebhook: ftp://x\n", "http:// or https://"},
		{"snmp version", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nsnmp:\n  - {name: r, address: 'x:161', version: 1}\n", `"1": give 2c or 3`},
		{"snmp address", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nsnmp:\n  - {name: r, address: x, version: 2c, community: c}\n", "give the agent's host:port"},
		{"snmp v3 password", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\nsnmp:\n  - {name: r, address: 'x:161', version: '3', user: u, auth_protocol: sha, auth_password: short}\n", "at least 8 characters"},
		{"duration", "testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g, summary: 5}]\n", "duration \"5\""},
	}
	for _, tt := range tests {
		_, err := Parse("m.yaml", []byte(tt.text))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte("testbed: a\ngroups: {g: [a, b]}\ntests: [{name: p, type: probe, group: g}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		// What parses can be planned, and never needs more than it says.
		if Impossible(cfg) == nil {
			for _, tt := range cfg.Tests {
				if tt.Exclusive() && tt.Budget() > tt.Every {
					t.Fatalf("test %s: budget %s over every %s", tt.Name, tt.Budget(), tt.Every)
				}
			}
		}
	})
}

func TestDays(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "1d", 30 * 24 * time.Hour: "30d", 90 * time.Minute: "1h30m", 10 * time.Minute: "10m",
		time.Hour: "1h", 25 * time.Hour: "25h", 90 * time.Second: "1m30s", 10 * time.Second: "10s",
	} {
		if got := Days(d); got != want {
			t.Errorf("Days(%v) = %q, want %q", d, got, want)
		}
	}
}

// SplitHostPort accepts what net.SplitHostPort accepts, without net.
func TestSplitHostPort(t *testing.T) {
	for _, s := range []string{"192.0.2.1:161", "switch.example.org:161", "[2001:db8::1]:161", "[fe80::1%eth0]:161", ":161", "a:", "a", "a:b:c", "[a:b]c:1", "[a]:1]", "a]:1", "[::1]", "", "[]:1", "x:[1]"} {
		h, p, ok := SplitHostPort(s)
		nh, np, err := net.SplitHostPort(s)
		if ok != (err == nil) || ok && (h != nh || p != np) {
			t.Errorf("SplitHostPort(%q) = %q, %q, %v; net says %q, %q, %v", s, h, p, ok, nh, np, err)
		}
	}
}

// owd_step: sets the smallest one-way delay step; absent, rtt_step does
// (existing configurations keep their behaviour), and an override that
// does not give it inherits the global one.
func TestOWDStep(t *testing.T) {
	const head = "testbed: a\ngroups: {g: [a, b, c]}\ntests: [{name: p, type: probe, group: g}]\n"
	for _, c := range []struct {
		name, alerts string
		// want are the smallest steps of a->b, b->a and a->c.
		want [3]time.Duration
	}{
		{"defaults: rtt_step's 5ms", "", [3]time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}},
		{"rtt_step alone", "alerts: {rtt_step: 10ms}\n", [3]time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}},
		{"owd_step", "alerts: {rtt_step: 10ms, owd_step: 1.5ms}\n", [3]time.Duration{1500 * time.Microsecond, 1500 * time.Microsecond, 1500 * time.Microsecond}},
		{"smallest", "alerts: {owd_step: 100us}\n", [3]time.Duration{100 * time.Microsecond, 100 * time.Microsecond, 100 * time.Microsecond}},
		{"overrides", "alerts:\n  owd_step: 2ms\n  overrides:\n    - {pairs: [a->b], owd_step: 20ms}\n    - {pairs: [b->a], rtt_step: 30ms}\n",
			[3]time.Duration{20 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond}},
		{"an override's rtt_step, no owd_step anywhere", "alerts:\n  overrides:\n    - {pairs: [b->a], rtt_step: 30ms}\n",
			[3]time.Duration{5 * time.Millisecond, 30 * time.Millisecond, 5 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("m.yaml", []byte(head+c.alerts))
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range [][2]string{{"a", "b"}, {"b", "a"}, {"a", "c"}} {
				if got := cfg.For(p[0], p[1]).OneWayStep(); got != c.want[i] {
					t.Errorf("%s->%s: %s, want %s", p[0], p[1], got, c.want[i])
				}
			}
		})
	}
	if got := (Thresholds{}).OneWayStep(); got != DefaultOWDStep {
		t.Errorf("no thresholds: %s, want %s", got, DefaultOWDStep)
	}
}
