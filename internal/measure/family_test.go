package measure

import "testing"

func TestFamilyOf(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"10.0.0.1", IPv4},
		{"10.0.0.1:5201", IPv4},
		{"::ffff:10.0.0.1", IPv4},
		{"[::ffff:10.0.0.1]:5201", IPv4},
		{"::1", IPv6},
		{"[::1]:5201", IPv6},
		{"2001:db8::1", IPv6},
		{"[fe80::1%eth0]:5201", IPv6},
		{"dtn01.example.org:5201", ""},
		{"", ""},
	} {
		if got := FamilyOf(tc.addr); got != tc.want {
			t.Errorf("FamilyOf(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
