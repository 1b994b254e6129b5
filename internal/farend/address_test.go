package farend

import (
	"strings"
	"testing"
)

// CheckAddress takes a host, HOST:PORT and [IPv6]:PORT where the kind
// has a port, and says what is wrong with anything else.
func TestCheckAddress(t *testing.T) {
	for _, tc := range []struct {
		kind, addr, why string
	}{
		{Iperf3, "iperf.example.org:5201", ""},
		{Iperf3, "[2001:db8::9]:5201", ""},
		{STAMP, "192.0.2.7", ""},
		{STAMP, "[2001:db8::7]", ""},
		{Ping, "2001:db8::1", ""},
		{Ping, "router.example.org", ""},
		{Ping, "192.0.2.1:7", "a ping target has no port"},
		{STAMP, "192.0.2.7:0", `port "0": give 1 to 65535`},
		{STAMP, "[192.0.2.7]:862", "brackets hold an IPv6 address"},
		{STAMP, "2001:db8::7:862", ""}, // a bare IPv6 address, no port
		{Iperf3, "[2001:db8::9:5201", "give a host, or HOST:PORT"},
		{Ping, "ff02::1", "not a unicast address"},
		{Ping, "fe80::1%eth0", "not a unicast address"},
		{Ping, "", "no address"},
		{Ping, "bad_name!", "give a host without a port"},
	} {
		why := CheckAddress(tc.kind, tc.addr)
		if (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("CheckAddress(%s, %q) = %q, want %q", tc.kind, tc.addr, why, tc.why)
		}
	}
}
