package endpoints

import (
	"errors"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/measure"
)

// choose gives every endpoint an address of the family asked for, or of
// the family all have where the bed's choices differ, or names the host
// that lacks it.
func TestChooseFamily(t *testing.T) {
	both := [2]string{"10.0.0.1", "2001:db8::1"}
	v4 := [2]string{"10.0.0.2", ""}
	v6 := [2]string{"", "2001:db8::3"}
	tests := []struct {
		name   string
		family string
		hosts  map[string][2]string
		given  map[string]string // the bed's choice, by host
		want   map[string]string // "" for an error
		err    string
	}{
		{"bed's choice", "", map[string][2]string{"a": both, "b": v6}, map[string]string{"a": "2001:db8::1", "b": "2001:db8::3"},
			map[string]string{"a": "2001:db8::1", "b": "2001:db8::3"}, ""},
		{"choices differ: IPv4 first", "", map[string][2]string{"a": both, "b": v4}, map[string]string{"a": "2001:db8::1", "b": "10.0.0.2"},
			map[string]string{"a": "10.0.0.1", "b": "10.0.0.2"}, ""},
		{"choices differ: IPv6 in common", "", map[string][2]string{"a": both, "b": v6}, map[string]string{"a": "10.0.0.1", "b": "2001:db8::3"},
			map[string]string{"a": "2001:db8::1", "b": "2001:db8::3"}, ""},
		{"nothing in common", "", map[string][2]string{"a": v4, "b": v6}, map[string]string{"a": "10.0.0.2", "b": "2001:db8::3"},
			nil, "host a (10.0.0.2) has no IPv6 test address"},
		{"-6", measure.IPv6, map[string][2]string{"a": both, "b": v6}, map[string]string{"a": "10.0.0.1", "b": "2001:db8::3"},
			map[string]string{"a": "2001:db8::1", "b": "2001:db8::3"}, ""},
		{"-4 of IPv6 alone", measure.IPv4, map[string][2]string{"a": both, "b": v6}, map[string]string{"a": "10.0.0.1", "b": "2001:db8::3"},
			nil, "host b (2001:db8::3) has no IPv4 test address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eps := map[string]measure.Endpoint{}
			for h, a := range tc.given {
				eps[h] = measure.Endpoint{Host: h, Addr: a}
			}
			err := choose(eps, tc.hosts, tc.family)
			if tc.err != "" {
				if !errors.Is(err, backend.ErrFamily) || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %v, want backend.ErrFamily with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for h, want := range tc.want {
				if eps[h].Addr != want {
					t.Errorf("host %s: %s, want %s", h, eps[h].Addr, want)
				}
			}
		})
	}
}

func TestAddressesOf(t *testing.T) {
	for _, tc := range []struct {
		addr, addr6 string
		want        [2]string
	}{
		{"10.0.0.1", "", [2]string{"10.0.0.1", ""}},
		{"10.0.0.1", "fd00::1", [2]string{"10.0.0.1", "fd00::1"}},
		{"fd00::1", "fd00::1", [2]string{"", "fd00::1"}},
		{"::ffff:10.0.0.1", "", [2]string{"10.0.0.1", ""}},
		{"", "", [2]string{}},
	} {
		if got := addressesOf(tc.addr, tc.addr6); got != tc.want {
			t.Errorf("addressesOf(%q, %q) = %q, want %q", tc.addr, tc.addr6, got, tc.want)
		}
	}
}
