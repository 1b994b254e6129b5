package owd

import (
	"math"
	"slices"
	"testing"
)

func TestLowerHull(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pts, out []point
	}{
		{"empty", nil, nil},
		{"one", []point{{0, 1}}, []point{{0, 1}}},
		{"a valley keeps its bottom", []point{{0, 1}, {1, 0}, {2, 1}}, []point{{0, 1}, {1, 0}, {2, 1}}},
		{"a peak is not on it", []point{{0, 0}, {1, 1}, {2, 0}}, []point{{0, 0}, {2, 0}}},
		{"collinear points drop", []point{{0, 0}, {1, 1}, {2, 2}, {3, 3}}, []point{{0, 0}, {3, 3}}},
		{"of one time the lowest", []point{{0, 2}, {0, 1}, {1, 5}, {1, 3}, {2, 2}}, []point{{0, 1}, {2, 2}}},
		{"same time, lower first", []point{{0, 1}, {0, 2}, {1, 0}}, []point{{0, 1}, {1, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts := slices.Clone(tc.pts)
			slices.SortStableFunc(pts, func(a, b point) int {
				if a.t < b.t {
					return -1
				}
				if a.t > b.t {
					return 1
				}
				return 0
			})
			if got := lowerHull(pts, nil); !slices.Equal(got, tc.out) {
				t.Errorf("hull %v, want %v", got, tc.out)
			}
		})
	}
}

// TestFitEnvelope checks the linear programme's solution: the line under
// every point that is highest at the points' mean time.
func TestFitEnvelope(t *testing.T) {
	// d = 0.05 t + 3 (50 ppm of a 3 ms offset), touched at t = 10 and 90,
	// every other point above it by queueing.
	var onLine []point
	for i := range 100 {
		q := 0.1 + 0.5*math.Abs(math.Sin(float64(i)))
		if i == 10 || i == 90 {
			q = 0
		}
		onLine = append(onLine, point{float64(i), 0.05*float64(i) + 3 + q})
	}
	for _, tc := range []struct {
		name         string
		pts          []point
		ok           bool
		slope, icept float64
	}{
		{"the line under queueing", onLine, true, 0.05, 3},
		{"two points", []point{{0, 1}, {2, 2}}, true, 0.5, 1},
		{"the edge over the mean", []point{{0, 0}, {1, 0}, {2, 1}, {3, 3}, {4, 6}, {5, 9}}, true, 2, -3},
		{"one point spans no time", []point{{1, 1}}, false, 0, 0},
		{"one time spans none", []point{{1, 1}, {1, 2}}, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _, ok := fitEnvelope(tc.pts, nil)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if math.Abs(l.slope-tc.slope) > 1e-9 || math.Abs(l.icept-tc.icept) > 1e-9 {
				t.Errorf("line %+v, want slope %g, intercept %g", l, tc.slope, tc.icept)
			}
			for _, p := range tc.pts {
				if p.d < l.at(p.t)-1e-9 {
					t.Errorf("point %v below the envelope (%g)", p, l.at(p.t))
				}
			}
		})
	}
}
