package realhosts

import (
	"fmt"
	"strings"
	"testing"
)

// An inventory's targets: far ends by name, in the file's order, each of
// one kind at an address that kind takes.
func TestInventoryTargets(t *testing.T) {
	inv, err := Parse("sites.yaml", []byte(`tls: {ca: a, cert: b, key: c}
hosts:
  cern: {agent: "[2001:db8::1]:7400"}
targets:
  iperf: {iperf3: "[2001:db8::9]:5201"}
  refl: {stamp: refl.example.org}
  gw: {ping: 192.0.2.1}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{{Name: "iperf", Kind: "iperf3", Address: "[2001:db8::9]:5201"}, {Name: "refl", Kind: "stamp", Address: "refl.example.org"}, {Name: "gw", Kind: "ping", Address: "192.0.2.1"}}
	if fmt.Sprint(inv.Targets) != fmt.Sprint(want) {
		t.Errorf("targets %v, want %v", inv.Targets, want)
	}
	if tg, ok := inv.Target("refl"); !ok || tg.Kind != "stamp" {
		t.Errorf("Target(refl) = %+v, %v", tg, ok)
	}
	if _, ok := inv.Target("cern"); ok {
		t.Error("a host is a target")
	}
}

func TestInventoryTargetProblems(t *testing.T) {
	const head = "tls: {ca: a, cert: b, key: c}\nhosts:\n  a: {agent: h:1}\ntargets:\n"
	many := head
	for i := range MaxTargets + 1 {
		many += fmt.Sprintf("  t%d: {ping: 192.0.2.1}\n", i)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"two kinds", head + "  r: {stamp: 192.0.2.7, ping: 192.0.2.7}\n", "inv.yaml:5: targets.r: target r gives 2 kinds (ping, stamp): give one"},
		{"unknown kind", head + "  r: {twamp: 192.0.2.7}\n", `targets.r.twamp: "twamp": a target is {iperf3: HOST:PORT}`},
		{"ping with a port", head + "  r: {ping: \"192.0.2.7:7\"}\n", `targets.r.ping: "192.0.2.7:7": a ping target has no port`},
		{"v6 without brackets", head + "  r: {iperf3: \"[2001:db8::9:5201\"}\n", `targets.r.iperf3: "[2001:db8::9:5201": give a host, or HOST:PORT`},
		{"bad port", head + "  r: {stamp: \"192.0.2.7:99999\"}\n", `port "99999": give 1 to 65535`},
		{"multicast", head + "  r: {ping: ff02::1}\n", "not a unicast address"},
		{"a host's name", head + "  a: {ping: 192.0.2.1}\n", "targets.a: a is a host of the inventory"},
		{"bad name", head + "  -r: {ping: 192.0.2.1}\n", `target name "-r"`},
		{"twice", head + "  r: {ping: 192.0.2.1}\n  r: {ping: 192.0.2.2}\n", `duplicate name "r"`},
		{"too many", many, fmt.Sprintf("targets: %d targets: an inventory names at most %d", MaxTargets+1, MaxTargets)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("inv.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}
