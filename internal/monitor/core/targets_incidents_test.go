package core

import (
	"testing"
	"time"
)

// Targets have no topology path: their paths are left out of incident
// inference (unless a hop list gives their directions), so that a fault
// that also reaches the targets is still named exactly.
func TestIncidentsLeaveOutTargets(t *testing.T) {
	cfg, err := Parse("star.yaml", []byte(`testbed: x
targets: {refl: {stamp: 192.0.2.7}, gw: {ping: 192.0.2.1}}
groups: {sites: [a, b, c, d, refl, gw]}
tests:
  - {name: lat, type: probe, group: sites}
alerts: {loss_above: 2%, for: 2}
baseline: {window: 1h, min_points: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	paths := starPaths(true)
	for _, s := range starSites {
		for _, tg := range []string{"refl", "gw"} {
			paths = append(paths, PathStatus{Key: PathKey{Src: s, Dst: tg, Test: "lat"}, Type: Probe, Usable: true})
		}
	}
	// a's way out is lossy: its paths to the other sites and to both
	// targets lose 6%.
	paths = withLoss(paths, 100, func(from, _ string) int { return map[bool]int{true: 6}[from == "a"] })
	for _, c := range []struct {
		name string
		via  func(src, dst string) []string
		obs  int
	}{
		{"no directions for targets", func(src, dst string) []string {
			if cfg.IsTarget(dst) || cfg.IsTarget(src) {
				return nil
			}
			return starVia(src, dst)
		}, 12},
		{"a hop list's directions", func(src, dst string) []string {
			if cfg.IsTarget(src) {
				return nil
			}
			return starVia(src, dst)
		}, 12 + 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewDetector(cfg)
			obs := d.Segments(paths, c.via, SourceExpected)
			if len(obs) != c.obs {
				t.Errorf("%d observations, want %d: %+v", len(obs), c.obs, obs)
			}
			res, err := d.Infer(paths, c.via, SourceExpected)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Incidents) != 1 || res.Incidents[0].Key() != "a.out" || res.Incidents[0].Confidence != 1 || len(res.Unexplained) != 0 {
				t.Fatalf("incidents %+v, unexplained %v: want a.out, exactly", res.Incidents, res.Unexplained)
			}
			var inc Incidents
			start := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
			for i := range 3 {
				inc.Update(res, start.Add(time.Duration(i)*time.Minute), 2, time.Minute)
			}
			if got := inc.Active(); len(got) != 1 || got[0].Key != "a.out" {
				t.Errorf("open incidents %+v", got)
			}
		})
	}
}
