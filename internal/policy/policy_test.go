package policy

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
)

func TestSitePolicy(t *testing.T) {
	p, err := Load("testdata/site.yaml", limits.Default)
	if err != nil {
		t.Fatal(err)
	}
	if p.Queue != 4 || len(p.Rules) != 2 {
		t.Fatalf("queue %d, %d rules", p.Queue, len(p.Rules))
	}
	ops := p.Match([]string{"cn:someone", "dns:ctl.cnaf.example"})
	if ops == nil || ops.Name != "cnaf-ops" || ops.Line != 5 {
		t.Fatalf("match by DNS name: %+v", ops)
	}
	if ops.Limits.MaxRate != 1e9 || ops.Limits.MaxDuration != 5*time.Minute || ops.Limits.MaxStreams != 16 ||
		ops.Limits.MaxBytes != 10e9 || ops.BytesPerDay != 1e12 || ops.Limits.MaxTests != 2 || ops.Wait != 30*time.Second {
		t.Errorf("cnaf-ops limits: %+v, per day %d, wait %v", ops.Limits, ops.BytesPerDay, ops.Wait)
	}
	if ops.Requests != DefaultRequests {
		t.Errorf("requests %v, want the default %v", ops.Requests, DefaultRequests)
	}
	if ops.Limits.MaxConnections != limits.Default.MaxConnections {
		t.Errorf("an unset limit is not the agent's own: %d", ops.Limits.MaxConnections)
	}
	for addr, want := range map[string]bool{"10.1.3.4": true, "192.0.2.7": true, "192.0.2.8": false, "::ffff:10.1.0.1": true, "8.8.8.8": false} {
		if got := ops.Reaches(netip.MustParseAddr(addr)); got != want {
			t.Errorf("cnaf-ops reaches %s: %v, want %v", addr, got, want)
		}
	}
	mon := p.Match([]string{"uri:spiffe://lab.example/monitor"})
	if mon == nil || mon.Name != "monitor" || !mon.Allows(Probe) || mon.Allows(Throughput) || !mon.Share {
		t.Errorf("monitor rule: %+v", mon)
	}
	if !mon.Reaches(netip.MustParseAddr("203.0.113.1")) {
		t.Error("a rule without peers does not reach a listener")
	}
	if p.Match([]string{"cn:stranger"}) != nil {
		t.Error("an identity no rule names matched")
	}
	if d := Default(limits.Default); d.Match([]string{"cn:x"}) == nil || d.Rules[0].Allows(Mesh) {
		t.Error("the default policy: any signed controller, measurements only")
	}
}

func TestProblems(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"empty", "", "p.yaml:1: the policy is empty"},
		{"no rules", "queue: 2\n", "p.yaml:1: rules: no rules"},
		{"unknown field", "rules:\n  - name: a\n    identities: ['*']\n    color: red\n", `p.yaml:4: unknown field "color"`},
		{"bad identity", "rules:\n  - name: a\n    identities: [ctl]\n", `p.yaml:3: rules[0].identities[0]: "ctl": write cn:NAME`},
		{"bad kind", "rules:\n  - name: a\n    identities: ['*']\n    kinds: [ping]\n", `p.yaml:4: rules[0].kinds[0]: unknown test kind "ping"`},
		{"bad peer", "rules:\n  - name: a\n    identities: ['*']\n    peers: [10.0.0.0/33]\n", `p.yaml:4: rules[0].peers[0]: "10.0.0.0/33"`},
		{"over the agent", "rules:\n  - name: a\n    identities: ['*']\n    limits: {streams: 100000}\n", "p.yaml:4: rules[0].limits.streams: 100000 is over the agent's own limit"},
		{"bad rate", "rules:\n  - name: a\n    identities: ['*']\n    limits:\n      rate: fast\n", "p.yaml:5: rules[0].limits.rate:"},
		{"twice", "rules:\n  - {name: a, identities: ['*']}\n  - {name: a, identities: ['*']}\n", `p.yaml:3: rules[1].name: rule "a" is named twice`},
		{"no name", "rules:\n  - identities: ['*']\n", "p.yaml:2: rules[0].name: give the rule a name"},
		{"long wait", "rules:\n  - {name: a, identities: ['*'], wait: 2h}\n", `rules[0].wait: "2h": give a duration from 0s to 1h`},
		{"requests", "rules:\n  - {name: a, identities: ['*'], limits: {requests: 0}}\n", `rules[0].limits.requests: 0: give 0.01 to 10000 calls per second`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tc.yaml), limits.Default)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("rules:\n  - {name: a, identities: ['*'], peers: [10.0.0.0/8], limits: {rate: 1Gbit}}\n"))
	f.Add([]byte("queue: 3\nrules: [{name: b, identities: [cn:x], kinds: [probe]}]\n"))
	f.Add([]byte("rules:\n  - {name: t, identities: ['*'], targets: [192.0.2.0/24, '2001:db8::/48', 198.51.100.7]}\n"))
	f.Add([]byte("rules:\n  - {name: t, identities: ['*'], targets: ['::ffff:203.0.113.0/120', 'fe80::1%eth0', '::/0', 224.0.0.1]}\n"))
	f.Add([]byte("rules:\n  - {name: t, identities: ['*'], targets: [{network: '2001:db8::/64', kinds: [stamp], ports: [862, 8620-8629]}, 'fe80::/64%eth0']}\n"))
	f.Add([]byte("rules:\n  - {name: t, identities: ['*'], targets: [{network: 'fe80::%eth0/64', kinds: [ping]}, {network: 192.0.2.1, ports: []}, {ports: [1]}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data, limits.Default)
		if err != nil {
			return
		}
		for _, r := range p.Rules {
			for _, tg := range r.Targets {
				pf := tg.Network
				if linkLocal6.Overlaps(pf) != (tg.Zone != "") || tg.Ports != nil && len(tg.Ports) == 0 {
					t.Fatalf("rule %q names a target it may not: %v", r.Name, tg)
				}
				for _, pr := range tg.Ports {
					if pr.First == 0 || pr.Last < pr.First {
						t.Fatalf("rule %q names ports it may not: %v", r.Name, tg)
					}
				}
				least := MinTargetBits4
				if pf.Addr().Is6() {
					least = MinTargetBits6
				}
				if pf.Bits() < least || pf.Addr().IsMulticast() || pf != pf.Masked() {
					t.Fatalf("rule %q names a target it may not: %v", r.Name, pf)
				}
			}
			if r.Limits.MaxStreams > limits.Default.MaxStreams || r.Limits.MaxRate > limits.Default.MaxRate || r.Limits.MaxBytes > limits.Default.MaxBytes {
				t.Fatalf("rule %q grants more than the agent: %+v", r.Name, r.Limits)
			}
		}
	})
}
