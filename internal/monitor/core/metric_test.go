package core

import (
	"slices"
	"strings"
	"testing"
)

// Every name is registered once, ends in its unit, and every test type's
// metrics are registered.
func TestMetricRegistry(t *testing.T) {
	seen := map[Name]bool{}
	for _, m := range slices.Concat(Metrics, Interface) {
		if seen[m.Name] {
			t.Errorf("%s is registered twice", m.Name)
		}
		seen[m.Name] = true
		if m.Unit != Count && !strings.HasSuffix(string(m.Name), "_"+string(m.Unit)) {
			t.Errorf("%s does not end in its unit %s", m.Name, m.Unit)
		}
		if got, ok := ByName(string(m.Name)); !ok || got.Name != m.Name {
			t.Errorf("ByName(%s) = %v, %v", m.Name, got, ok)
		}
		if !strings.HasPrefix(m.Series, "wanlab_") || !slices.Contains(Series(), m.Series) {
			t.Errorf("%s: series %q is not one /metrics lists", m.Name, m.Series)
		}
	}
	if _, ok := PathMetric(string(IfaceIn)); ok {
		t.Error("an interface's metric is taken for a path's")
	}
	for _, typ := range []string{Probe, Throughput, Transfer, Trace, Disk} {
		if len(Of(typ)) == 0 {
			t.Errorf("test type %s has no metrics", typ)
		}
		for _, n := range Of(typ) {
			if _, ok := PathMetric(string(n)); !ok {
				t.Errorf("Of(%s) has %s, which is not a registered path metric", typ, n)
			}
		}
	}
}
