package topology

import (
	"testing"

	"github.com/wanlab/wanlab/internal/scenario"
)

// TestFamilyAddresses checks the hosts' and routers' addresses of each
// family: IPv4 alone, dual stack, and IPv6 alone (addr is the IPv6 one).
func TestFamilyAddresses(t *testing.T) {
	tests := []struct {
		top, addr, addr6, rt6 string
	}{
		{"", "10.250.0.2", "", ""},
		{"subnet6: 2001:db8:7::/64\n", "10.250.0.2", "2001:db8:7::2", "fd77:616e:6c61:ff::1"},
		{"family: ipv6\n", "fd77:616e:6c61::2", "fd77:616e:6c61::2", "fd77:616e:6c61:ff::1"},
	}
	for _, tt := range tests {
		t.Run(tt.top, func(t *testing.T) {
			f, err := scenario.Parse("f.yaml", []byte(tt.top+"name: f\nhosts: {a: {}, b: {}}\nrouters: {r: {}}\nlinks: [{between: [a, r]}, {between: [r, b]}]\n"), false)
			if err != nil {
				t.Fatal(err)
			}
			top, err := New(f.Testbed)
			if err != nil {
				t.Fatal(err)
			}
			b := top.Hosts[1]
			if b.Addr != tt.addr || b.Addr6 != tt.addr6 {
				t.Errorf("host b: addr %q addr6 %q, want %q %q", b.Addr, b.Addr6, tt.addr, tt.addr6)
			}
			if r := top.Routers[0]; r.Addr6 != tt.rt6 || r.Addr == "" {
				t.Errorf("router: addr %q addr6 %q, want addr6 %q", r.Addr, r.Addr6, tt.rt6)
			}
		})
	}
}
