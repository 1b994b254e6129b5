package core

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/binomial"
	"github.com/wanlab/wanlab/internal/segment"
)

// Incidents' loss evidence is pooled per direction (issue 37): a path's
// own summary of 100 probes tells 6% from a threshold of 2% in about
// three summaries of four, so that waiting for each path's alert (`for`
// such summaries in a row) names a fault late; the paths crossing a
// direction, pooled, count several hundred probes a summary, which tell
// it at once. The per-path loss_above alerts are unchanged (alerts.go).

// maxPooledFaults bounds the directions the pooled search judges lossy at
// once (segment.Infer names at most a few faults).
const maxPooledFaults = 8

// lossRoute is one way between two hosts of a probe test as loss counts
// see it: the forward loss of the path from -> to and the back loss of
// the path to -> from (the replies of its probes) cross the same
// directions, and are counted together; a round-trip count (a reflector
// that numbers nothing) is a route of both ways' directions.
type lossRoute struct {
	name, figure string
	// family is the route's address family when its test runs once per
	// family ("" otherwise): each family's routes are pooled apart.
	family   string
	dirs     []string
	lost, of int
	// threshold is the largest loss_above of the paths counted.
	threshold float64
}

func (r *lossRoute) add(c LossCount, threshold float64) {
	r.lost += c.Lost
	r.of += c.Of
	r.threshold = max(r.threshold, threshold)
}

// interval is the route's 95% binomial interval.
func (r *lossRoute) interval() (lo, hi float64) { return binomial.Wilson(r.lost, r.of) }

// LossSuspect says whether a probe summary's loss, either way, is above
// threshold: the incidents' pooled evidence may have changed, and they
// are inferred again (a fault's pooled loss shows before any path's
// alert fires).
func LossSuspect(o Observation, threshold float64) bool {
	if threshold <= 0 || o.Type != Probe {
		return false
	}
	for _, c := range o.Loss {
		if c.Of > 0 && float64(c.Lost) > threshold*float64(c.Of) {
			return true
		}
	}
	return false
}

// lossRoutes are the usable probe paths' latest loss counts, by route:
// those of a summary that ended more than one and a half of its test's
// periods before the newest of its test are left out (not the same
// round), as are paths toward a target without directions.
func (d *Detector) lossRoutes(paths []PathStatus, via func(src, dst string) []string) []*lossRoute {
	period := map[string]time.Duration{}
	for _, t := range d.cfg.Tests {
		period[t.Name] = t.Period()
	}
	newest := map[string]time.Time{}
	for _, p := range paths {
		if p.Usable && p.Type == Probe && p.At.After(newest[p.Key.Test]) {
			newest[p.Key.Test] = p.At
		}
	}
	byName := map[string]*lossRoute{}
	route := func(k PathKey, name, figure string, dirs []string) *lossRoute {
		r := byName[name]
		if r == nil {
			r = &lossRoute{name: name, figure: figure, family: k.Family, dirs: dirs}
			byName[name] = r
		}
		return r
	}
	for _, p := range paths {
		k := p.Key
		th := d.cfg.For(k.Src, k.Dst).LossAbove
		if !p.Usable || p.Type != Probe || th <= 0 || newest[k.Test].Sub(p.At) > period[k.Test]*3/2 {
			continue
		}
		there := via(k.Src, k.Dst)
		if len(there) == 0 && d.cfg.IsTarget(k.Dst) {
			continue // see Segments
		}
		fam := "" // a test run once per family: each family's routes apart
		if k.Family != "" {
			fam = ", " + k.Family
		}
		fwd, okF := p.Loss[LossForward]
		back, okB := p.Loss[LossBack]
		if p.OneWayLoss && okF && okB {
			route(k, fmt.Sprintf("%s -> %s (%s%s)", k.Src, k.Dst, k.Test, fam), FigureLoss, there).add(fwd, th)
			route(k, fmt.Sprintf("%s -> %s (%s%s)", k.Dst, k.Src, k.Test, fam), FigureLoss, via(k.Dst, k.Src)).add(back, th)
			continue
		}
		if rt, ok := p.Loss[LossRatio]; ok {
			route(k, fmt.Sprintf("%s -> %s (%s, round trip%s)", k.Src, k.Dst, k.Test, fam), FigureLossRoundTrip,
				slices.Concat(there, via(k.Dst, k.Src))).add(rt, th)
		}
	}
	out := slices.Collect(maps.Values(byName))
	out = slices.DeleteFunc(out, func(r *lossRoute) bool { return r.of <= 0 })
	slices.SortFunc(out, func(a, b *lossRoute) int { return strings.Compare(a.name, b.name) })
	return out
}

// lossyDirections judges directions by the pooled counts of the routes
// crossing them: a direction is lossy when the whole 95% binomial
// interval of its pool is above the largest threshold of its routes (too
// few probes leave the interval within reach of it: no judgement). The
// search takes the direction of the strongest evidence (the highest
// lower bound), then pools again without the routes it explains, so that
// the healthy directions a lossy route also crosses are judged by the
// other routes alone; it stops when none is lossy.
func lossyDirections(routes []*lossRoute) map[string]bool {
	lossy := map[string]bool{}
	for len(lossy) < maxPooledFaults {
		type pool struct {
			lost, of  int
			threshold float64
		}
		pools := map[string]*pool{}
		for _, r := range routes {
			if crosses(r.dirs, lossy) {
				continue
			}
			for _, dir := range r.dirs {
				p := pools[dir]
				if p == nil {
					p = &pool{}
					pools[dir] = p
				}
				p.lost, p.of, p.threshold = p.lost+r.lost, p.of+r.of, max(p.threshold, r.threshold)
			}
		}
		best, bestLow := "", 0.0
		for _, dir := range slices.Sorted(maps.Keys(pools)) {
			p := pools[dir]
			if lo, _ := binomial.Wilson(p.lost, p.of); lo > p.threshold && lo > bestLow {
				best, bestLow = dir, lo
			}
		}
		if best == "" {
			break
		}
		lossy[best] = true
	}
	return lossy
}

// crosses says whether one of dirs is in set.
func crosses(dirs []string, set map[string]bool) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return set[d] })
}

// lossSegments are segment.Infer's observations of loss, one per route,
// judged by the pooled evidence of each figure and address family
// (lossyDirections; one family's fault does not show in the other's
// counts, nor do the other's clean counts hide it): a route
// crossing a lossy direction is affected unless its own counts are
// clearly below its threshold (the whole interval under it), and one
// whose own interval is wholly above its threshold is affected whatever
// it crosses; a route crossing no lossy direction is healthy when its
// loss is at most the threshold, and no judgement otherwise (left out,
// as a path part-way to its alert is).
func lossSegments(routes []*lossRoute, source string) []segment.Observation {
	byFigure := map[string][]*lossRoute{}
	for _, r := range routes {
		byFigure[r.figure+"\x00"+r.family] = append(byFigure[r.figure+"\x00"+r.family], r)
	}
	var out []segment.Observation
	for _, key := range slices.Sorted(maps.Keys(byFigure)) {
		rs := byFigure[key]
		fig := rs[0].figure
		lossy := lossyDirections(rs)
		for _, r := range rs {
			lo, hi := r.interval()
			var affected bool
			switch {
			case lo > r.threshold:
				affected = true
			case crosses(r.dirs, lossy):
				affected = hi >= r.threshold
			case float64(r.lost) > r.threshold*float64(r.of):
				continue
			}
			out = append(out, segment.Observation{Path: r.name, Dirs: r.dirs, Figure: fig, Affected: affected, Source: source})
		}
	}
	return out
}
