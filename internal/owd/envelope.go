package owd

import (
	"slices"
)

// point is one bin's lowest one-way delay: t in seconds since the
// tracker's origin, d in milliseconds as measured (offset included).
type point struct{ t, d float64 }

// line is d = slope*t + icept (slope in ms per second: 1 ppm is 1e-3).
type line struct{ slope, icept float64 }

func (l line) at(t float64) float64 { return l.slope*t + l.icept }

// lowerHull returns the lower convex hull of pts, which are sorted by t,
// into out (reused): Andrew's monotone chain, O(n) on sorted points (the
// sort the points arrive in makes the whole fit O(n log n) at worst). Of
// points with the same t only the lowest is kept, so no edge is vertical.
func lowerHull(pts []point, out []point) []point {
	out = out[:0]
	for _, p := range pts {
		if n := len(out); n > 0 && p.t == out[n-1].t {
			if p.d >= out[n-1].d {
				continue
			}
			out = out[:n-1]
		}
		// Pop while the last two and p do not turn left: the last point
		// is then on or above the chord from the one before it to p.
		for n := len(out); n >= 2 && cross(out[n-2], out[n-1], p) <= 0; n = len(out) {
			out = out[:n-1]
		}
		out = append(out, p)
	}
	return out
}

// cross is the z of (a-o) x (b-o): positive when o, a, b turn left.
func cross(o, a, b point) float64 {
	return (a.t-o.t)*(b.d-o.d) - (a.d-o.d)*(b.t-o.t)
}

// fitEnvelope solves the linear programme of Moon, Skelly and Towsley
// ("Estimation and removal of clock skew from network delay
// measurements", IEEE INFOCOM 1999): the line d = a*t + b that lies on or
// below every point and minimises the sum of the points' heights above it.
// That sum is sum(d) - n*(a*mean(t) + b), so the optimum is the highest
// line under the points at t = mean(t): the edge of the lower convex hull
// over mean(t), as Zhang, Liu and Xia observed ("Clock synchronization
// algorithms for network measurements", IEEE INFOCOM 2002). Unlike a
// least-squares fit it ignores queueing, which only adds delay; unlike
// Paxson's median-of-slopes estimate over the minima ("On calibrating
// measurements of packet transit times", SIGMETRICS 1998) it needs no
// choice of pairs. pts are sorted by t; hull is scratch space. ok is false
// when the points span no time.
func fitEnvelope(pts []point, hull []point) (l line, h []point, ok bool) {
	h = lowerHull(pts, hull)
	if len(h) < 2 {
		return line{}, h, false
	}
	var mean float64
	for _, p := range pts {
		mean += p.t
	}
	mean /= float64(len(pts))
	// The first edge whose right end reaches mean(t); mean(t) lies within
	// the hull's span, between its first and last points.
	i, _ := slices.BinarySearchFunc(h, mean, func(p point, t float64) int {
		switch {
		case p.t < t:
			return -1
		case p.t > t:
			return 1
		}
		return 0
	})
	i = min(max(i, 1), len(h)-1)
	a, b := h[i-1], h[i]
	slope := (b.d - a.d) / (b.t - a.t)
	return line{slope: slope, icept: a.d - slope*a.t}, h, true
}
