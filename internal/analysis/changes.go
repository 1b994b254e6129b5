package analysis

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// A run whose links changed (the scenario's events, or wanlab testbed set)
// is read as a timeline: the changes, and each path's throughput, round
// trip and loss over time. Change points in those series are found by
// circular binary segmentation on the mean, and each is matched to the link change
// that explains it, or said to have no injected cause.

// LinkEvent is a change made to the links while a run ran.
type LinkEvent struct {
	T    time.Time `json:"t"`
	What string    `json:"what"`
	Dirs []string  `json:"directions"`
}

// Timeline is what a run's changes are read from.
type Timeline struct {
	Events []LinkEvent
	// Series are each path's throughput, round-trip time and loss.
	Series []Series
	// Steps are when the run's steps started, in order: a finding's times
	// are from the start of its step, as a workload's events are written.
	Steps []time.Time
}

// Series is one measure of one path over time.
type Series struct {
	Path   string // A->B
	Metric string // a results sample metric
	T      []time.Time
	V      []float64
}

// measureRule is how a timeline judges one measure: minSeg is the fewest
// samples a level lasts; a move counts if it is at least absStep and at
// least relStep of the higher level; react is how long after a link
// change the measure may take to show it (TCP recovers from an outage
// only at its next retransmission timeout).
type measureRule struct {
	name             string
	minSeg           int
	relStep, absStep float64
	unit             string
	scale            float64
	react            time.Duration
	// early is how many samples before a change its change point may fall.
	early int
}

// watched are the measures a timeline follows.
var watched = map[string]measureRule{
	results.BandwidthAchievable: {"throughput", 2, 0.3, 0, "Mbit/s", 1e-6, 6 * time.Second, 1},
	results.DelayRoundtrip:      {"RTT", 3, 0.1, 0.005, "ms", 1e3, 1500 * time.Millisecond, 1},
	results.LossRoundtrip:       {"loss", 8, 0, 0.1, "%", 100, 1500 * time.Millisecond, 12},
}

// LoadTimeline reads a run's link changes and, if there are any, its
// paths' series. A run without changes has an empty timeline.
func LoadTimeline(ctx context.Context, a *archive.Archive, id int64) (*Timeline, error) {
	evs, err := a.Events(ctx, id)
	if err != nil {
		return nil, err
	}
	tl := &Timeline{}
	steps, err := a.Steps(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, s := range steps {
		if t, err := time.Parse(time.RFC3339Nano, s.StartedAt); err == nil {
			tl.Steps = append(tl.Steps, t)
		}
	}
	slices.SortFunc(tl.Steps, func(a, b time.Time) int { return a.Compare(b) })
	for _, e := range evs {
		if e.Level != archive.Link {
			continue
		}
		what, dirs := results.ParseLinkEvent(e.Message)
		tl.Events = append(tl.Events, LinkEvent{T: e.T, What: what, Dirs: dirs})
	}
	if len(tl.Events) == 0 {
		return tl, nil
	}
	byKey := map[[2]string]*Series{}
	err = a.Samples(ctx, id, func(s archive.Sample) error {
		if _, ok := watched[s.Metric]; !ok {
			return nil
		}
		sub, ok := results.ParseSubject(s.Subject)
		if !ok || sub.Kind != results.OfPath || sub.Stream != 0 {
			return nil
		}
		k := [2]string{sub.Name, s.Metric}
		sr := byKey[k]
		if sr == nil {
			sr = &Series{Path: sub.Name, Metric: s.Metric}
			byKey[k] = sr
		}
		sr.T, sr.V = append(sr.T, s.T), append(sr.V, s.Value)
		return nil
	})
	for _, k := range slices.SortedFunc(func(yield func([2]string) bool) {
		for k := range byKey {
			if !yield(k) {
				return
			}
		}
	}, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) }) {
		tl.Series = append(tl.Series, *byKey[k])
	}
	return tl, err
}

// clock says a time in seconds from the start of the step it falls in
// (with the step's number when the run has several), or from the
// timeline's first moment when no step is known.
func (tl *Timeline) clock() func(time.Time) string {
	t0 := tl.Events[0].T
	for _, s := range tl.Series {
		if len(s.T) > 0 && s.T[0].Before(t0) {
			t0 = s.T[0]
		}
	}
	return func(t time.Time) string {
		// i is how many steps had started by t.
		i, found := slices.BinarySearchFunc(tl.Steps, t, func(a, b time.Time) int { return a.Compare(b) })
		if found {
			i++
		}
		if i == 0 || len(tl.Steps) == 0 {
			return fmt.Sprintf("%.1f s", t.Sub(t0).Seconds())
		}
		if len(tl.Steps) == 1 {
			return fmt.Sprintf("%.1f s", t.Sub(tl.Steps[0]).Seconds())
		}
		return fmt.Sprintf("%.1f s of step %d", t.Sub(tl.Steps[i-1]).Seconds(), i)
	}
}

// spacing is the median time between a series' samples.
func (s Series) spacing() time.Duration {
	if len(s.T) < 2 {
		return 0
	}
	d := make([]time.Duration, 0, len(s.T)-1)
	for i := 1; i < len(s.T); i++ {
		d = append(d, s.T[i].Sub(s.T[i-1]))
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// ChangePoint is where a series moves to another level.
type ChangePoint struct {
	Path   string
	Metric string
	// T is the first sample at the new level; Prev the last at the old.
	T, Prev       time.Time
	Before, After float64
}

// maxSegment bounds the inner segments the search tries, so that it stays
// quadratic in a burst's length, not the series'.
const maxSegment = 3000

// ChangePoints finds where a series changes level.
func ChangePoints(s Series) []ChangePoint {
	w, ok := watched[s.Metric]
	if !ok || len(s.V) < 2*w.minSeg {
		return nil
	}
	var penalty float64
	if s.Metric == results.LossRoundtrip {
		p := mean(s.V)
		penalty = 3 * math.Max(p*(1-p), 0.01) * math.Log(float64(len(s.V)))
	} else {
		sigma := noise(s.V)
		penalty = 3 * sigma * sigma * math.Log(float64(len(s.V)))
	}
	// Circular binary segmentation: in each stretch, the single cut or the
	// inner segment that sets the most apart from the rest (a burst or an
	// outage in the middle of a steady series is one segment, which a single
	// cut would not find), then again on each part.
	sum := make([]float64, len(s.V)+1)
	for i, x := range s.V {
		sum[i+1] = sum[i] + x
	}
	meanOf := func(i, j int) float64 { return (sum[j] - sum[i]) / float64(j-i) }
	var cuts []int
	var split func(a, b int)
	split = func(a, b int) {
		n := b - a
		if n < 2*w.minSeg || len(cuts) >= 50 {
			return
		}
		total := sum[b] - sum[a]
		bi, bj, gain := -1, -1, 0.0
		for i := a; i <= b-w.minSeg; i++ {
			if i > a && i-a < w.minSeg {
				continue
			}
			for j := i + w.minSeg; j <= b && j-i <= maxSegment; j++ {
				if j < b && b-j < w.minSeg || i == a && j == b {
					continue
				}
				in, out := float64(j-i), float64(n-(j-i))
				d := (sum[j]-sum[i])/in - (total-(sum[j]-sum[i]))/out
				if g := in * out / float64(n) * d * d; g > gain {
					bi, bj, gain = i, j, g
				}
			}
		}
		if bi < 0 || gain <= penalty {
			return
		}
		rest := (total - (sum[bj] - sum[bi])) / float64(n-(bj-bi))
		if !w.counts(meanOf(bi, bj), rest) {
			return
		}
		for _, c := range []int{bi, bj} {
			if c > a && c < b {
				cuts = append(cuts, c)
			}
		}
		split(a, bi)
		split(bi, bj)
		split(bj, b)
	}
	split(0, len(s.V))
	slices.Sort(cuts)
	var out []ChangePoint
	for i, k := range cuts {
		lo, hi := 0, len(s.V)
		if i > 0 {
			lo = cuts[i-1]
		}
		if i+1 < len(cuts) {
			hi = cuts[i+1]
		}
		before, after := mean(s.V[lo:k]), mean(s.V[k:hi])
		// Neighbouring segments found apart may not differ enough once
		// both are cut: keep only steps that count.
		if !w.counts(before, after) {
			continue
		}
		out = append(out, ChangePoint{Path: s.Path, Metric: s.Metric, T: s.T[k], Prev: s.T[k-1], Before: before, After: after})
	}
	return out
}

// counts says whether a move from one level to another is large enough.
func (w measureRule) counts(a, b float64) bool {
	d := math.Abs(a - b)
	return d >= w.absStep && d >= w.relStep*math.Max(math.Abs(a), math.Abs(b))
}

// noise is the standard deviation of a series' sample-to-sample noise,
// robust to its steps: the median absolute difference of neighbours.
func noise(v []float64) float64 {
	d := make([]float64, 0, len(v)-1)
	for i := 1; i < len(v); i++ {
		d = append(d, math.Abs(v[i]-v[i-1]))
	}
	slices.Sort(d)
	med := d[len(d)/2]
	return math.Max(med/(0.6745*math.Sqrt2), 0.01*math.Abs(median(v)))
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// PathChanges explains a timeline: one finding per link change with what
// it did to the paths that cross the changed directions, and one per
// change point that no link change explains.
func PathChanges(tl *Timeline, tb *scenario.Testbed) []Finding {
	if tl == nil || len(tl.Events) == 0 {
		return nil
	}
	var topo *topology.Topology
	if tb != nil {
		topo, _ = topology.New(tb)
	}
	crosses := func(path string, dirs []string) bool {
		if topo == nil {
			return true
		}
		from, to, _ := strings.Cut(path, "->")
		p, ok := topo.Path(from, to)
		if !ok {
			return false
		}
		for _, d := range dirs {
			if slices.Contains(p.Via, d) || slices.Contains(p.Back, d) {
				return true
			}
		}
		return false
	}
	at := tl.clock()
	explained := make([][]ChangePoint, len(tl.Events))
	var unexplained []ChangePoint
	for _, s := range tl.Series {
		w := watched[s.Metric]
		spacing := s.spacing()
		for _, cp := range ChangePoints(s) {
			// The latest change to a direction the path crosses, made
			// between the last sample at the old level (less the time the
			// measure takes to react) and the first at the new one, or a
			// few samples after it: a sample is stamped when it was sent
			// (or its interval ended), and where a level is a rate of
			// losses a run of luck can put its start or end early.
			best := -1
			for i, e := range tl.Events {
				if crosses(s.Path, e.Dirs) && !e.T.Before(cp.Prev.Add(-w.react)) && !e.T.After(cp.T.Add(time.Duration(w.early)*spacing)) {
					best = i
				}
			}
			if best < 0 {
				unexplained = append(unexplained, cp)
				continue
			}
			explained[best] = append(explained[best], cp)
		}
	}
	var out []Finding
	for i, e := range tl.Events {
		cps := explained[i]
		if len(cps) == 0 {
			if results.EndsTimeline(e.What) {
				continue
			}
			out = append(out, Finding{Kind: "path_change", Text: fmt.Sprintf("At %s %s: no visible change in the paths' throughput, round trip or loss.", at(e.T), e.What),
				Values: map[string]float64{"t_unix": unix(e.T)}})
			continue
		}
		var parts []string
		vals := map[string]float64{"t_unix": unix(e.T)}
		for _, cp := range cps {
			w := watched[cp.Metric]
			parts = append(parts, fmt.Sprintf("%s %s %s from %s to %s %s at %s", cp.Path, w.name, direction(cp), format(cp.Before*w.scale), format(cp.After*w.scale), w.unit, at(cp.T)))
			vals[cp.Path+" "+w.name+" before"] = cp.Before * w.scale
			vals[cp.Path+" "+w.name+" after"] = cp.After * w.scale
			vals[cp.Path+" "+w.name+" lag_s"] = cp.T.Sub(e.T).Seconds()
		}
		out = append(out, Finding{Kind: "path_change", Text: fmt.Sprintf("At %s %s: %s.", at(e.T), e.What, strings.Join(parts, "; ")), Values: vals})
	}
	for _, cp := range unexplained {
		w := watched[cp.Metric]
		out = append(out, Finding{Kind: "path_change", Text: fmt.Sprintf("At %s %s %s %s from %s to %s %s with no injected cause: no link change was made to its directions just before.",
			at(cp.T), cp.Path, w.name, direction(cp), format(cp.Before*w.scale), format(cp.After*w.scale), w.unit),
			Values: map[string]float64{"t_unix": unix(cp.T), "before": cp.Before * w.scale, "after": cp.After * w.scale}})
	}
	return out
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func direction(cp ChangePoint) string {
	if cp.After > cp.Before {
		return "rose"
	}
	return "fell"
}

func format(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
