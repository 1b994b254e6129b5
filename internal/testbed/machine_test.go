package testbed

import (
	"slices"
	"strings"
	"testing"
)

func TestMachineTarget(t *testing.T) {
	have, err := readSysctl("net.ipv4.tcp_available_congestion_control")
	if err != nil {
		t.Skip(err)
	}
	first := strings.Fields(have)[0]
	for _, c := range []struct {
		key, cur, wanted, want string
		missing                []string
	}{
		{"net.core.rmem_max", "4194304", "400000000", "400000000", nil},
		{"net.core.rmem_max", "4194304", "1000", "4194304", nil}, // never lowered
		{"net.ipv4.tcp_mem", "10 200 30", "20 100 40", "20 200 40", nil},
		{"net.ipv4.tcp_mem", "10 200", "20 100 40", "20 100 40", nil},
		{"net.core.default_qdisc", "pfifo_fast", "fq", "fq", nil},
		{"net.ipv4.tcp_allowed_congestion_control", "", first + " nosuchcc", first, []string{"nosuchcc"}},
		{"net.ipv4.tcp_allowed_congestion_control", first, first, first, nil},
	} {
		got, missing := target(c.key, c.cur, c.wanted)
		if got != c.want || !slices.Equal(missing, c.missing) {
			t.Errorf("target(%s, %q, %q) = %q, %v; want %q, %v", c.key, c.cur, c.wanted, got, missing, c.want, c.missing)
		}
	}
}
