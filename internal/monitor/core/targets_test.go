package core

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const targetsConfig = `testbed: sites
targets:
  refl: {stamp: "192.0.2.7:862"}
  refl6: {stamp: "[2001:db8::7]"}
  gw: {ping: router.example.org}
  gw6: {ping: "2001:db8::1"}
  iperf: {iperf3: iperf.example.org:5201}
groups:
  sites: [cern, cnaf]
  far: [cern, cnaf, refl, gw, refl6, gw6]
  servers: [cern, cnaf, iperf]
tests:
  - {name: latency, type: probe, group: far, rate: 10/s, summary: 30s}
  - {name: bulk, type: throughput, group: servers, every: 1h, duration: 10s}
  - {name: mesh, type: probe, group: sites}
`

func TestParseTargets(t *testing.T) {
	cfg, err := Parse("m.yaml", []byte(targetsConfig))
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{Name: "refl", Kind: TargetSTAMP, Address: "192.0.2.7:862"}, {Name: "refl6", Kind: TargetSTAMP, Address: "[2001:db8::7]"}, {Name: "gw", Kind: TargetPing, Address: "router.example.org"},
		{Name: "gw6", Kind: TargetPing, Address: "2001:db8::1"}, {Name: "iperf", Kind: TargetIperf3, Address: "iperf.example.org:5201"}}
	if !slices.Equal(cfg.Targets, want) {
		t.Errorf("targets %+v, want %+v", cfg.Targets, want)
	}
	if h := cfg.Hosts(); !slices.Equal(h, []string{"cern", "cnaf"}) {
		t.Errorf("hosts %q: targets are no hosts", h)
	}
	if n := cfg.Names(); len(n) != 7 {
		t.Errorf("names %q: hosts and targets", n)
	}
	// A target is a destination only, of the tests that reach its kind.
	pairs := cfg.Pairs(cfg.Tests[0])
	if len(pairs) != 2+2*4 || slices.ContainsFunc(pairs, func(p [2]string) bool { return cfg.IsTarget(p[0]) }) ||
		!slices.Contains(pairs, [2]string{"cern", "gw6"}) {
		t.Errorf("probe pairs %q", pairs)
	}
	if pairs := cfg.Pairs(cfg.Tests[1]); !slices.Equal(pairs, [][2]string{{"cern", "cnaf"}, {"cern", "iperf"}, {"cnaf", "cern"}, {"cnaf", "iperf"}}) {
		t.Errorf("throughput pairs %q", pairs)
	}
	if err := cfg.CheckHosts([]string{"cern", "cnaf"}); err != nil {
		t.Errorf("targets are not the test-bed's hosts: %v", err)
	}
	err = cfg.CheckHosts([]string{"cern", "cnaf", "gw"})
	if err == nil || !strings.Contains(err.Error(), "target gw (ping router.example.org) has the name of host gw") {
		t.Errorf("a target named as a host: %v", err)
	}
	// An iperf3 server runs one test at a time: it is held as a host.
	if d := Demand(cfg); d["iperf"] != 2*12.0/3600 || d["cern"] != 3*12.0/3600 {
		t.Errorf("demand %v", d)
	}
	plan := DryRun(cfg, time.Unix(0, 0), 4*time.Hour, nil, nil)
	i := slices.IndexFunc(plan.Hosts, func(h HostLoad) bool { return h.Host == "iperf" })
	if i < 0 || plan.Hosts[i].Runs != 8 {
		t.Errorf("plan of the iperf3 server: %+v", plan.Hosts)
	}
	for _, r := range plan.Runs {
		for _, o := range plan.Runs {
			if r != o && r.Dst == "iperf" && o.Dst == "iperf" && r.Start.Before(o.End) && o.Start.Before(r.End) {
				t.Fatalf("two tests toward the iperf3 server at once: %+v and %+v", r, o)
			}
		}
	}
}

func TestParseTargetErrors(t *testing.T) {
	head := "testbed: a\ngroups: {g: [a, b, x]}\ntests: [{name: p, type: probe, group: g}]\n"
	tests := []struct {
		name, text, want string
	}{
		{"unknown kind", head + "targets:\n  x: {twamp: 192.0.2.1}\n", `5: targets.x.twamp: "twamp": a target is {iperf3: HOST:PORT}`},
		{"two kinds", head + "targets:\n  x: {stamp: 192.0.2.1, ping: 192.0.2.1}\n", "5: targets.x: target \"x\" gives 2 kinds (ping, stamp): give one"},
		{"no kind", head + "targets:\n  x: {}\n", "targets.x: target \"x\" gives 0 kinds"},
		{"bad name", head + "targets:\n  'a b': {ping: 192.0.2.1}\n", `target name "a b" must be`},
		{"ping port", head + "targets:\n  x: {ping: '192.0.2.1:7'}\n", "5: targets.x.ping: \"192.0.2.1:7\": a ping target has no port"},
		{"port", head + "targets:\n  x: {stamp: 'refl.example:0'}\n", `port "0": give 1 to 65535`},
		{"port name", head + "targets:\n  x: {iperf3: 'iperf.example:http'}\n", `port "http": give 1 to 65535`},
		{"port too big", head + "targets:\n  x: {iperf3: '[2001:db8::1]:70000'}\n", `port "70000"`},
		{"bracketed IPv4", head + "targets:\n  x: {stamp: '[192.0.2.1]:862'}\n", "brackets hold an IPv6 address"},
		{"bad host", head + "targets:\n  x: {ping: 'a/b'}\n", "give a host without a port"},
		{"no address", head + "targets:\n  x: {ping: ''}\n", "no address"},
		{"multicast", head + "targets:\n  x: {ping: 224.0.0.1}\n", "not a unicast address"},
		{"list", head + "targets:\n  x: [ping, 192.0.2.1]\n", "targets.x"},
		{"targets only", "testbed: a\ngroups: {g: [a, b], t: [x, y]}\ntests: [{name: p, type: probe, group: g}]\ntargets: {x: {ping: 192.0.2.1}, y: {ping: 192.0.2.2}}\n",
			"groups.t: group t holds targets only"},
		{"probe toward iperf3", head + "targets:\n  x: {iperf3: 192.0.2.1}\n",
			"3: tests[0].group: test p (probe) cannot test toward target x of group g, an iperf3 server"},
		{"throughput toward stamp", "testbed: a\ngroups: {g: [a, b, x]}\ntests: [{name: t, type: throughput, group: g, every: 1h}]\ntargets: {x: {stamp: 192.0.2.1}}\n",
			"test t (throughput) cannot test toward target x of group g, a STAMP reflector"},
		{"trace toward a target", "testbed: a\ngroups: {g: [a, b, x]}\ntests: [{name: t, type: trace, group: g}]\ntargets: {x: {ping: 192.0.2.1}}\n",
			"test t (trace) cannot test toward target x"},
		{"ping too fast", "testbed: a\ngroups: {g: [a, x]}\ntests: [{name: p, type: probe, group: g, rate: 200/s}]\ntargets: {x: {ping: 192.0.2.1}}\n",
			"tests[0].rate: 200/s toward ping target x: echoes go at most 100 a second"},
		{"ping too many", "testbed: a\ngroups: {g: [a, x]}\ntests: [{name: p, type: probe, group: g, rate: 10/s, summary: 1h}]\ntargets: {x: {ping: 192.0.2.1}}\n",
			"36000 echoes toward ping target x: a summary holds at most 10000"},
		{"stamp too small", "testbed: a\ngroups: {g: [a, x]}\ntests: [{name: p, type: probe, group: g, size: 40}]\ntargets: {x: {stamp: 192.0.2.1}}\n",
			"tests[0].size: 40 bytes toward STAMP target x: a STAMP test packet has at least 44"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("m.yaml", []byte(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTargetAddresses(t *testing.T) {
	for _, c := range []struct {
		kind, addr string
		ok         bool
	}{
		{TargetPing, "192.0.2.1", true},
		{TargetPing, "2001:db8::1", true},
		{TargetPing, "[2001:db8::1]", true},
		{TargetPing, "router.example.org", true},
		{TargetPing, "fe80::1%eth0", false},
		{TargetPing, "::", false},
		{TargetSTAMP, "192.0.2.1:862", true},
		{TargetSTAMP, "[2001:db8::1]:8620", true},
		{TargetSTAMP, "refl.example.org", true},
		{TargetSTAMP, "[2001:db8::1", false},
		{TargetSTAMP, "2001:db8::1:862", true}, // an IPv6 address: a port needs brackets
		{TargetIperf3, "iperf.example.org:5201", true},
		{TargetIperf3, "iperf.example.org:", false},
		{TargetIperf3, "-bad-.example", false},
	} {
		if why := badTargetAddress(c.kind, c.addr); (why == "") != c.ok {
			t.Errorf("%s %q: %q, want ok %v", c.kind, c.addr, why, c.ok)
		}
	}
}

// A run whose far end was busy is tried again when Retry says, its hosts
// freed meanwhile; the pair's next run then comes a period after it.
func TestSchedulerRetry(t *testing.T) {
	cfg, err := Parse("m.yaml", []byte(targetsConfig))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1e9, 0)
	s := NewScheduler(cfg, start, nil, 1)
	var j Job
	for now := start; ; now = now.Add(time.Second) {
		got, ok, _ := s.Next(now, nil)
		if ok && got.Dst == "iperf" {
			j = got
			break
		}
		if ok {
			s.Done(got, now)
		}
	}
	at := j.Due.Add(2 * time.Minute)
	s.Retry(j, j.Due.Add(time.Second), at)
	for now := j.Due.Add(time.Second); now.Before(at.Add(time.Hour)); now = now.Add(time.Second) {
		got, ok, _ := s.Next(now, nil)
		if !ok {
			continue
		}
		if got.Src == j.Src && got.Dst == j.Dst {
			if now.Before(at) || now.After(at.Add(time.Minute)) {
				t.Errorf("retried at %s, want at %s", now, at)
			}
			s.Done(got, now)
			break
		}
		s.Done(got, now)
	}
	for _, q := range s.queue {
		if q.Src == j.Src && q.Dst == j.Dst && q.Due.Before(at.Add(j.Test.Every)) {
			t.Errorf("the pair's next run is due %s, before a period after the retry", q.Due)
		}
	}
}
