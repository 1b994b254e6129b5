package bind

import (
	"net"
	"strconv"
	"testing"
)

// Listeners open in the family of the test address, IPv6 too, and on
// every address of both families when there is none; traffic of each
// family reaches them as their address allows.
func TestListenFamilies(t *testing.T) {
	tests := []struct {
		name     string
		at       Local
		reach    []string // loopback addresses that connect
		notReach []string // and those that must not
	}{
		{"IPv6 (::1)", Local{Addr: "::1"}, []string{"::1"}, []string{"127.0.0.1"}},
		{"IPv4", Local{Addr: "127.0.0.1"}, []string{"127.0.0.1"}, []string{"::1"}},
		{"every address, both families", Local{}, []string{"127.0.0.1", "::1"}, nil},
		{"IPv6 wildcard", Local{Addr: "::"}, []string{"127.0.0.1", "::1"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := tc.at.Listen(net.ListenConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			pc, err := tc.at.ListenUDP(net.ListenConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			if udp := pc.LocalAddr().(*net.UDPAddr); tc.at.Addr != "" && udp.IP.String() != tc.at.Addr {
				t.Errorf("UDP socket on %s, want %s", udp.IP, tc.at.Addr)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			for _, a := range tc.reach {
				c, err := net.Dial("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
				if err != nil {
					t.Errorf("TCP from %s: %v", a, err)
					continue
				}
				c.Close()
			}
			for _, a := range tc.notReach {
				if c, err := net.Dial("tcp", net.JoinHostPort(a, strconv.Itoa(port))); err == nil {
					c.Close()
					t.Errorf("TCP from %s reached a listener on %s", a, tc.at)
				}
			}
		})
	}
}
