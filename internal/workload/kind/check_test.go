package kind

import (
	"testing"
	"time"
)

type toySpec struct{ n int }

func (*toySpec) Length() time.Duration          { return 0 }
func (*toySpec) RoleHosts() map[string][]string { return nil }

type toyRaw struct{ N int }

func TestDecodeWith(t *testing.T) {
	decode := DecodeWith(func(c Check, r toyRaw) *toySpec {
		if r.N < 0 {
			return nil // no step at all
		}
		return &toySpec{n: r.N}
	})
	for _, tc := range []struct {
		name    string
		decoded bool
		n, want int // want -1: no spec
	}{
		{"decoded", true, 3, 3},
		{"nothing decoded", false, 3, -1},
		{"no step made", true, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := decode(func(raw any) bool { raw.(*toyRaw).N = tc.n; return tc.decoded }, nil)
			switch ts, _ := s.(*toySpec); {
			case tc.want < 0 && s != nil:
				t.Errorf("spec %#v, want none", s)
			case tc.want >= 0 && (ts == nil || ts.n != tc.want):
				t.Errorf("spec %#v, want n %d", s, tc.want)
			}
		})
	}
}
