package predict

import (
	"os"
	"testing"
)

// TestMain keeps the package's tests off this machine's congestion
// control: the paths of a host without the sysctl say none, as they did
// before the machine's default was read.
func TestMain(m *testing.M) {
	MachineCongestion = func() string { return "" }
	os.Exit(m.Run())
}

// TestPathCongestion: a path's congestion control is its sending host's
// net.ipv4.tcp_congestion_control when the scenario sets it, else the
// machine's default, which the test-bed's namespaces inherit.
func TestPathCongestion(t *testing.T) {
	was := MachineCongestion
	t.Cleanup(func() { MachineCongestion = was })
	MachineCongestion = func() string { return "bbr" }
	_, topo := platTopology(t, `
name: cc
hosts:
  a: {sysctl: {net.ipv4.tcp_congestion_control: reno}}
  b: {}
links:
  - between: [a, b]
    rate: 10Mbit
    delay: 5ms
`)
	p := newPlatform(topo, 4)
	for _, tc := range []struct{ from, to, want string }{
		{"a", "b", "reno"},
		{"b", "a", "bbr"},
	} {
		f, err := p.path(tc.from, tc.to)
		if err != nil {
			t.Fatal(err)
		}
		if f.Congestion != tc.want {
			t.Errorf("path %s->%s: congestion %q, want %q", tc.from, tc.to, f.Congestion, tc.want)
		}
	}
}
