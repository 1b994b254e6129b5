package topology

import (
	"slices"
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	var dirs []Direction
	for _, n := range []string{"a->b", "b->a", "site cern up", "site cern down"} {
		dirs = append(dirs, Direction{Name: n})
	}
	tests := []struct {
		selector string
		want     []int
		err      string
	}{
		{"a->b", []int{0}, ""},
		{"a<->b", []int{0, 1}, ""},
		{"b<->a", []int{1, 0}, ""},
		{"site cern", []int{2, 3}, ""},
		{"site cern down", []int{3}, ""},
		{"a-b", nil, `no link direction "a-b"`},
		{"a<->c", nil, `no link direction "a->c"`},
		{"site fnal", nil, `"site fnal up"`},
	}
	for _, tt := range tests {
		got, err := Select(dirs, tt.selector)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Select(%q) error %v, want %q", tt.selector, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Select(%q) = %v, %v; want %v", tt.selector, got, err, tt.want)
		}
	}
}
