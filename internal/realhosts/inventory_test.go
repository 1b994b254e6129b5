package realhosts

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/farend"
)

func TestParseInventory(t *testing.T) {
	inv, err := Parse("/etc/wanlab/sites.yaml", []byte(`tls: {ca: pki/ca.crt, cert: /abs/ctl.crt, key: pki/ctl.key}
wait: 10s
hosts:
  cnaf: {agent: 10.1.0.1:7400}
  cern: {agent: "dtn01.example.org:7400", address: 10.2.0.9}
`))
	if err != nil {
		t.Fatal(err)
	}
	if inv.Name != "sites" || inv.Wait != 10*time.Second || inv.TLS.CA != filepath.FromSlash("/etc/wanlab/pki/ca.crt") || inv.TLS.Cert != "/abs/ctl.crt" {
		t.Errorf("inventory %+v", inv)
	}
	if len(inv.Hosts) != 2 || inv.Hosts[0].Name != "cnaf" || inv.Hosts[1].Address != "10.2.0.9" {
		t.Errorf("hosts %+v (in the file's order)", inv.Hosts)
	}
}

func TestInventoryProblems(t *testing.T) {
	const tls = "tls: {ca: a, cert: b, key: c}\n"
	tests := []struct{ name, yaml, want string }{
		{"empty", "", "inv.yaml:1: the inventory is empty"},
		{"no tls", "hosts:\n  a: {agent: 10.0.0.1:7400}\n", "inv.yaml:1: tls.ca: give the controller's ca file"},
		{"no hosts", tls, "inv.yaml:1: hosts: no hosts"},
		{"no port", tls + "hosts:\n  a: {agent: 10.0.0.1}\n", `inv.yaml:3: hosts.a.agent: "10.0.0.1": give the agent's host:port`},
		{"bad port", tls + "hosts:\n  a: {agent: \"h:99999\"}\n", `hosts.a.agent: "h:99999"`},
		{"bad name", tls + "hosts:\n  -a: {agent: h:1}\n", `host name "-a"`},
		{"twice", tls + "hosts:\n  a: {agent: h:1}\n  a: {agent: h:2}\n", `duplicate name "a"`},
		{"bad address", tls + "hosts:\n  a: {agent: h:1, address: dtn}\n", `hosts.a.address: "dtn": give the host's test address as an IP address`},
		{"unknown", tls + "hosts:\n  a: {agent: h:1, port: 3}\n", `unknown field "port"`},
		{"wait", tls + "wait: forever\nhosts:\n  a: {agent: h:1}\n", `wait: "forever"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("inv.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}

func FuzzParseInventory(f *testing.F) {
	f.Add([]byte("tls: {ca: a, cert: b, key: c}\nhosts:\n  a: {agent: 10.0.0.1:7400}\n"))
	f.Add([]byte("tls: {ca: a, cert: b, key: c}\nwait: 3s\nhosts:\n  b: {agent: \"[::1]:7400\", address: 10.0.0.2}\n"))
	f.Add([]byte("tls: {ca: a, cert: b, key: c}\nfamily: ipv6\nhosts:\n  c: {agent: \"[2001:db8::1]:7400\", address: 2001:db8::9}\n"))
	f.Add([]byte("tls: {ca: a, cert: b, key: c}\nhosts:\n  d: {agent: 10.0.0.1:7400, address: 10.0.0.1, address6: \"[2001:db8::2]\", family: dual}\n"))
	f.Add([]byte("tls: {ca: a, cert: b, key: c}\nhosts:\n  e: {agent: \"2001:db8::1\", address: \"::ffff:10.0.0.3\", family: ipv4}\n"))
	f.Add([]byte("tls: {ca: a, cert: b, key: c}\nhosts:\n  a: {agent: h:1}\ntargets:\n  r: {stamp: \"[2001:db8::7]:862\"}\n  p: {ping: 192.0.2.1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		inv, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, tg := range inv.Targets {
			if why := farend.CheckAddress(tg.Kind, tg.Address); why != "" || !farend.Known(tg.Kind) {
				t.Fatalf("a target passed that is none: %+v (%s)", tg, why)
			}
		}
		for _, h := range inv.Hosts {
			if h.Name == "" || h.Agent == "" {
				t.Fatalf("a host without a name or an agent passed: %+v", h)
			}
			// The addresses are canonical, Address6 IPv6, Address IPv4
			// unless it is Address6.
			a6, err6 := netip.ParseAddr(h.Address6)
			a, err := netip.ParseAddr(h.Address)
			if h.Address6 != "" && (err6 != nil || !a6.Is6() || a6.Is4In6() || a6.String() != h.Address6) ||
				h.Address != "" && (err != nil || a.String() != h.Address || a.Is6() && h.Address != h.Address6) {
				t.Fatalf("a host's test addresses are not canonical, of their families: %+v", h)
			}
		}
	})
}
