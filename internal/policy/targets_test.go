package policy

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/farend"
	"github.com/wanlab/wanlab/internal/limits"
)

func TestAllowsTarget(t *testing.T) {
	p, err := Load("testdata/targets.yaml", limits.Default)
	if err != nil {
		t.Fatal(err)
	}
	var (
		ops = []string{"cn:ctl-cnaf"}
		mon = []string{"uri:spiffe://lab.example/monitor"}
		lab = []string{"cn:lab"}
	)
	tests := []struct {
		name   string
		ids    []string
		addr   string
		kind   string
		port   int    // 0: the kind's default port
		rule   string // the rule allowing it, or
		reason int    // why it is refused
		msg    string
	}{
		{"iperf3 in a network", ops, "192.0.2.9", TargetIperf3, 0, "cnaf-ops", 0, ""},
		{"stamp over IPv6", ops, "2001:db8:10::5", TargetSTAMP, 0, "cnaf-ops", 0, ""},
		{"one address", ops, "198.51.100.7", TargetPing, 0, "cnaf-ops", 0, ""},
		{"mapped address", ops, "::ffff:192.0.2.1", TargetPing, 0, "cnaf-ops", 0, ""},
		{"mapped network", mon, "203.0.113.77", TargetPing, 0, "monitor", 0, ""},
		{"zone of the entry", mon, "fe80::1%eth0", TargetPing, 0, "monitor", 0, ""},
		{"another zone", mon, "fe80::1%eth1", TargetPing, 0, "", NotListed, "does not list fe80::1%eth1 among its targets"},
		{"no zone", mon, "fe80::1", TargetPing, 0, "", NotListed, "fe80::1 is link-local, and a link-local target names its interface"},
		{"a zone where the entry has none", mon, "2001:db8:20::1%eth0", TargetPing, 0, "", NotListed, "does not list"},
		{"next address", ops, "198.51.100.8", TargetPing, 0, "", NotListed,
			`rule "cnaf-ops" (testdata/targets.yaml:5) does not list 198.51.100.8 among its targets (a ping test)`},
		{"a plain entry: stamp at another port", ops, "192.0.2.9", TargetSTAMP, 9000, "", NotListed,
			`rule "cnaf-ops" (testdata/targets.yaml:5) lists 192.0.2.9 among its targets, but not for a STAMP test at port 9000 (a plain entry allows STAMP at port 862`},
		{"a plain entry: iperf3 at stamp's port", ops, "198.51.100.7", TargetIperf3, 862, "", NotListed, "but not for an iperf3 test at port 862"},
		{"an entry's port range", ops, "203.0.113.9", TargetIperf3, 5209, "cnaf-ops", 0, ""},
		{"past the range", ops, "203.0.113.9", TargetIperf3, 5210, "", NotListed, "at port 5210"},
		{"a kind the entry leaves out", ops, "203.0.113.9", TargetPing, 0, "", NotListed, "does not list 203.0.113.9"},
		{"an entry's own port", ops, "2001:db8:30::7", TargetSTAMP, 8620, "cnaf-ops", 0, ""},
		{"not the default port then", ops, "2001:db8:30::7", TargetSTAMP, 862, "", NotListed, "at port 862"},
		{"a peer is not a target", ops, "10.1.2.3", TargetIperf3, 0, "", NotListed, "does not list 10.1.2.3 among its targets"},
		{"kind not allowed", mon, "2001:db8:20::1", TargetIperf3, 0, "", KindNotAllowed,
			`rule "monitor" (testdata/targets.yaml:16) does not allow throughput tests, which an iperf3 test toward [2001:db8:20::1]:5201 is (it allows probe)`},
		{"no targets", lab, "192.0.2.9", TargetPing, 0, "", NotListed, `rule "lab" (testdata/targets.yaml:20) names no targets`},
		{"no rule", []string{"cn:x"}, "192.0.2.9", TargetPing, 0, "", NoRule, "no rule of testdata/targets.yaml names cn:x"},
		{"unknown kind", ops, "192.0.2.9", "twamp", 0, "", UnknownTarget, `"twamp" toward 192.0.2.9: not a kind of far end`},
		{"broadcast", ops, "255.255.255.255", TargetPing, 0, "", NotUnicast, "255.255.255.255 is not a unicast address"},
		{"multicast", ops, "ff02::1", TargetPing, 0, "", NotUnicast, "ff02::1 is not a unicast address"},
		{"unspecified", ops, "::", TargetPing, 0, "", NotUnicast, "is not a unicast address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			port := tc.port
			if port == 0 {
				port = farend.DefaultPort(tc.kind)
			}
			r, err := p.AllowsTarget(tc.ids, tc.kind, netip.MustParseAddr(tc.addr), port)
			if tc.rule != "" {
				if err != nil || r == nil || r.Name != tc.rule {
					t.Fatalf("got rule %v, %v; want %q", r, err, tc.rule)
				}
				return
			}
			var refusal *TargetRefusal
			if !errors.As(err, &refusal) || r != nil {
				t.Fatalf("got rule %v, %v; want a refusal", r, err)
			}
			if refusal.Reason != tc.reason || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("reason %d, %q\nwant %d, %q", refusal.Reason, err, tc.reason, tc.msg)
			}
		})
	}
}

func TestDefaultPolicyHasNoTargets(t *testing.T) {
	_, err := Default(limits.Default).AllowsTarget([]string{"cn:x"}, TargetPing, netip.MustParseAddr("192.0.2.1"), 0)
	var refusal *TargetRefusal
	if !errors.As(err, &refusal) || refusal.Reason != NotListed {
		t.Errorf("the default policy allows a target: %v", err)
	}
}

func TestTargetProblems(t *testing.T) {
	rule := "rules:\n  - name: ops\n    identities: ['*']\n    targets: [%s]\n"
	tests := []struct{ name, targets, want string }{
		{"bad CIDR", "10.0.0.0/33", `p.yaml:4: rules[0].targets[0]: "10.0.0.0/33" of rule "ops": give a far end's network`},
		{"second entry", "192.0.2.1, nonsense", `p.yaml:4: rules[0].targets[1]: "nonsense" of rule "ops"`},
		{"everything v4", "0.0.0.0/0", `rules[0].targets[0]: "0.0.0.0/0" of rule "ops": a network broader than /8`},
		{"everything v6", "'::/0'", `rules[0].targets[0]: "::/0" of rule "ops": a network broader than /16`},
		{"mapped everything", "'::ffff:0.0.0.0/96'", "a network broader than /8"},
		{"multicast", "224.1.2.0/24", "a multicast or unspecified address is no far end"},
		{"multicast v6", "'ff05::/16'", "a multicast or unspecified address is no far end"},
		{"this network", "0.0.0.0/8", "a multicast or unspecified address is no far end"},
		{"link-local without its zone", "'fe80::/64'", `"fe80::/64" of rule "ops": a link-local network names its interface, as fe80::/64%eth0`},
		{"a zone off link", "'2001:db8::/64%eth0'", "only a link-local network (in fe80::/10) takes a zone"},
		{"an empty zone", "'fe80::1%'", `zone "": give the interface's name`},
		{"an entry without its network", "{kinds: [stamp]}", "lacks its network"},
		{"an unknown field", "{network: 192.0.2.1, port: 862}", `unknown field "port"`},
		{"an unknown kind", "{network: 192.0.2.1, kinds: [twamp]}", `rules[0].targets[0].kinds[0]: unknown kind of far end "twamp"`},
		{"a bad port", "{network: 192.0.2.1, ports: [70000]}", `rules[0].targets[0].ports: port "70000": give a port from 1 to 65535`},
		{"a backward range", "{network: 192.0.2.1, ports: [5209-5201]}", `port "5209-5201"`},
		{"no ports", "{network: 192.0.2.1, ports: []}", "an empty list allows no port"},
		{"ping with ports", "{network: 192.0.2.1, kinds: [ping], ports: [7]}", "ping has no port"},
		{"a list", "[[192.0.2.1]]", "give a network, or a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(strings.Replace(rule, "%s", tc.targets, 1)), limits.Default)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}

// TestTargetEntries: how entries read, and MayTarget, the check before a
// far end's name is resolved.
func TestTargetEntries(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`rules:
  - name: ops
    identities: [cn:ops]
    kinds: [probe, throughput]
    targets: [192.0.2.1, {network: "fe80::%eth0/64", kinds: [stamp, stamp]}, {network: 198.51.100.0/24, ports: [8620, "9000-9001"]}]
  - name: quiet
    identities: [cn:quiet]
`), limits.Default)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tg := range p.Rules[0].Targets {
		got = append(got, tg.String())
	}
	want := []string{"192.0.2.1/32", "fe80::/64%eth0 kinds=stamp", "198.51.100.0/24 ports=8620,9000-9001"}
	if !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	tests := []struct {
		ids  string
		kind string
		port int
		ok   bool
	}{
		{"cn:ops", TargetSTAMP, 862, true},
		{"cn:ops", TargetIperf3, 9001, true},
		{"cn:ops", TargetIperf3, 9002, false},
		{"cn:ops", TargetPing, 0, true},
		{"cn:quiet", TargetPing, 0, false}, // no targets: no name is resolved for it
		{"cn:nobody", TargetPing, 0, false},
	}
	for _, tc := range tests {
		_, err := p.MayTarget([]string{tc.ids}, tc.kind, tc.port)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %s at %d: %v, want allowed %v", tc.ids, tc.kind, tc.port, err, tc.ok)
		}
	}
	if _, err := p.MayTarget([]string{"cn:ops"}, TargetIperf3, 9002); err == nil || !strings.Contains(err.Error(), "lists no target for an iperf3 test at port 9002") {
		t.Errorf("refusal: %v", err)
	}
}
