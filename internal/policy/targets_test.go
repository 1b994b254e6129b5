package policy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

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
		rule   string // the rule allowing it, or
		reason int    // why it is refused
		msg    string
	}{
		{"iperf3 in a network", ops, "192.0.2.9", TargetIperf3, "cnaf-ops", 0, ""},
		{"stamp over IPv6", ops, "2001:db8:10::5", TargetSTAMP, "cnaf-ops", 0, ""},
		{"one address", ops, "198.51.100.7", TargetPing, "cnaf-ops", 0, ""},
		{"mapped address", ops, "::ffff:192.0.2.1", TargetPing, "cnaf-ops", 0, ""},
		{"mapped network", mon, "203.0.113.77", TargetPing, "monitor", 0, ""},
		{"zone ignored", mon, "fe80::1%eth0", TargetPing, "monitor", 0, ""},
		{"next address", ops, "198.51.100.8", TargetPing, "", NotListed,
			`rule "cnaf-ops" (testdata/targets.yaml:5) does not list 198.51.100.8 among its targets (a ping test)`},
		{"a peer is not a target", ops, "10.1.2.3", TargetIperf3, "", NotListed, "does not list 10.1.2.3 among its targets"},
		{"kind not allowed", mon, "2001:db8:20::1", TargetIperf3, "", KindNotAllowed,
			`rule "monitor" (testdata/targets.yaml:11) does not allow throughput tests, which an iperf3 test toward 2001:db8:20::1 is (it allows probe)`},
		{"no targets", lab, "192.0.2.9", TargetPing, "", NotListed, `rule "lab" (testdata/targets.yaml:15) names no targets`},
		{"no rule", []string{"cn:x"}, "192.0.2.9", TargetPing, "", NoRule, "no rule of testdata/targets.yaml names cn:x"},
		{"unknown kind", ops, "192.0.2.9", "twamp", "", UnknownTarget, `"twamp" toward 192.0.2.9: not a kind of far end`},
		{"broadcast", ops, "255.255.255.255", TargetPing, "", NotUnicast, "255.255.255.255 is not a unicast address"},
		{"multicast", ops, "ff02::1", TargetPing, "", NotUnicast, "ff02::1 is not a unicast address"},
		{"unspecified", ops, "::", TargetPing, "", NotUnicast, "is not a unicast address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := p.AllowsTarget(tc.ids, netip.MustParseAddr(tc.addr), tc.kind)
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
	_, err := Default(limits.Default).AllowsTarget([]string{"cn:x"}, netip.MustParseAddr("192.0.2.1"), TargetPing)
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
