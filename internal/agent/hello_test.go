package agent

import (
	"testing"

	"github.com/wanlab/wanlab/internal/workload/bind"
)

// The Hello names the agent's test addresses: a dual-stack agent's two,
// else its listeners' one, which is its IPv6 one when it is IPv6.
func TestHelloTestAddresses(t *testing.T) {
	for _, tc := range []struct {
		name        string
		srv         *Server
		addr, addr6 string
	}{
		{"every address", &Server{}, "", ""},
		{"IPv4", &Server{Test: bind.Local{Addr: "10.1.0.1"}}, "10.1.0.1", ""},
		{"IPv6", &Server{Test: bind.Local{Addr: "2001:db8::1"}}, "2001:db8::1", "2001:db8::1"},
		{"dual stack", &Server{TestAddress: "10.1.0.1", TestAddress6: "2001:db8::1"}, "10.1.0.1", "2001:db8::1"},
		{"IPv6 named, IPv4 every address", &Server{TestAddress6: "2001:db8::1"}, "", "2001:db8::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, addr6 := hostCalls{tc.srv}.testAddresses()
			if addr != tc.addr || addr6 != tc.addr6 {
				t.Errorf("got %q, %q; want %q, %q", addr, addr6, tc.addr, tc.addr6)
			}
		})
	}
}
