package e2e

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// figureLog keeps the per-direction figures of each path's summaries,
// from /api/v1/paths, once each: loss and one-way delay (the namespaces
// share a clock, so the one-way delays are absolute), and each path's
// one-way delays before the injection.
type figureLog struct {
	seen   map[string]map[time.Time]dirFigures // path -> summary
	before map[string]dirFigures
}

// dirFigures are a summary's forward and back loss and one-way delay.
type dirFigures struct{ loss, owd [2]float64 }

func figuresOf(p core.PathView) (dirFigures, bool) {
	var f dirFigures
	for i, m := range [][2]core.Name{{core.LossForward, core.OWDForward}, {core.LossBack, core.OWDBack}} {
		var ok1, ok2 bool
		f.loss[i], ok1 = p.Values[string(m[0])]
		f.owd[i], ok2 = p.Values[string(m[1])]
		if !ok1 || !ok2 {
			return f, false
		}
	}
	return f, p.Type == core.Probe
}

func newFigureLog(before map[string]core.PathView) *figureLog {
	f := &figureLog{seen: map[string]map[time.Time]dirFigures{}, before: map[string]dirFigures{}}
	for _, p := range before {
		if v, ok := figuresOf(p); ok {
			f.before[p.Src+"->"+p.Dst] = v
		}
	}
	return f
}

// sample takes the paths' latest figures, of summaries that began after
// start (one ending more than a summary and its wait after it).
func (f *figureLog) sample(paths map[string]core.PathView, start time.Time, summary time.Duration) {
	for _, p := range paths {
		v, ok := figuresOf(p)
		if !ok || p.At.Before(start.Add(summary+3*time.Second)) {
			continue
		}
		k := p.Src + "->" + p.Dst
		if f.seen[k] == nil {
			f.seen[k] = map[time.Time]dirFigures{}
		}
		f.seen[k][p.At] = v
	}
}

// cycle is the median time between a path's summaries, or 0.
func (f *figureLog) cycle() time.Duration {
	var gaps []time.Duration
	for _, m := range f.seen {
		at := slices.SortedFunc(maps.Keys(m), time.Time.Compare)
		for i := 1; i < len(at); i++ {
			gaps = append(gaps, at[i].Sub(at[i-1]))
		}
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}

func (f *figureLog) summaries() int {
	n := 0
	for _, m := range f.seen {
		n += len(m)
	}
	return n
}

// lossBounds are the bounds of the count of n probes lost at p that a
// check of dozens of ways at once holds to: 4 standard deviations either
// side (binomialBounds' 99% would fail one run in six of the truth
// table's checks by chance).
func lossBounds(n int, p float64) (lo, hi float64) {
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	return mean - 4*sd, mean + 4*sd
}

// check compares each path's figures each way with what the injections
// on the directions that way crosses make of them: the mean loss within
// lossBounds of the injected loss, or under 1% where it
// crosses none; the lowest one-way delay moved by the injected step, or
// by under 2 ms where it crosses none.
func (f *figureLog) check(p *problems, r *incidentRig, c truthCase) {
	per := int(math.Round(10 * r.summary.Seconds()))
	for pair, dirs := range r.via {
		k := pair[0] + "->" + pair[1]
		got := f.seen[k]
		if len(got) == 0 {
			p.add("%s: no summary of %s during the injection", c.name, k)
			continue
		}
		for i, way := range [][]string{dirs, r.via[[2]string{pair[1], pair[0]}]} {
			pass, step := 1.0, time.Duration(0)
			for _, in := range c.inject {
				switch {
				case !slices.Contains(way, in.dir):
				case in.loss():
					pass *= 1 - in.lossShare()
				default:
					step += in.step()
				}
			}
			want := 1 - pass
			mean, owd := 0.0, math.Inf(1)
			for _, v := range got {
				mean += v.loss[i] / float64(len(got))
				owd = min(owd, v.owd[i])
			}
			name := [2]string{"forward", "back"}[i]
			n := per * len(got)
			lo, hi := lossBounds(n, want)
			switch {
			case want == 0 && mean > 0.01:
				p.add("%s: %s %s loss %.2f%% over %d summaries: it crosses no injected direction", c.name, k, name, 100*mean, len(got))
			case want > 0 && (mean*float64(n) < lo || mean*float64(n) > hi):
				p.add("%s: %s %s loss %.2f%% over %d summaries, want %.2f%% (bounds %.2f%% to %.2f%%)", c.name, k, name, 100*mean, len(got), 100*want, 100*lo/float64(n), 100*hi/float64(n))
			}
			if b, ok := f.before[k]; ok {
				moved := time.Duration((owd - b.owd[i]) * float64(time.Second))
				if (moved - step).Abs() > 2*time.Millisecond {
					p.add("%s: %s %s one-way delay moved by %s (median %s before, lowest median %s since), want %s", c.name, k, name,
						moved.Round(100*time.Microsecond), time.Duration(b.owd[i]*1e9).Round(100*time.Microsecond), time.Duration(owd*1e9).Round(100*time.Microsecond), step)
				}
			}
		}
	}
}
