package core

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/segment"
)

// star is a four-site star: each site's way out ("x.out") and way in
// ("x.in") meet in the core.
var starSites = []string{"a", "b", "c", "d"}

func starVia(src, dst string) []string { return []string{src + ".out", dst + ".in"} }

func starConfig(t *testing.T) *Config {
	t.Helper()
	cfg, err := Parse("star.yaml", []byte(`testbed: x
groups: {sites: [a, b, c, d]}
tests:
  - {name: lat, type: probe, group: sites}
alerts: {loss_above: 2%, for: 2}
baseline: {window: 1h, min_points: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// starPaths are every probe path of the star, usable.
func starPaths(oneWay bool) []PathStatus {
	var out []PathStatus
	for _, s := range starSites {
		for _, d := range starSites {
			if s != d {
				out = append(out, PathStatus{Key: PathKey{Src: s, Dst: d, Test: "lat"}, Type: Probe, Usable: true, OneWayLoss: oneWay})
			}
		}
	}
	return out
}

// summaryAt is when the synthetic summaries of these tests end.
var summaryAt = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

// withLoss gives each path a summary of `of` probes ending at summaryAt,
// lost(from, to) of them lost on the way from -> to: forward and back
// counts where the path counts loss each way, the round trip otherwise.
func withLoss(paths []PathStatus, of int, lost func(from, to string) int) []PathStatus {
	for i := range paths {
		p := &paths[i]
		f, b := lost(p.Key.Src, p.Key.Dst), lost(p.Key.Dst, p.Key.Src)
		p.At = summaryAt
		p.Loss = map[Name]LossCount{LossRatio: {Lost: f + b, Of: of}}
		if p.OneWayLoss {
			p.Loss[LossForward], p.Loss[LossBack] = LossCount{Lost: f, Of: of}, LossCount{Lost: b, Of: of - f}
		}
	}
	return paths
}

// lossOn loses n probes on the ways crossing one of dirs (starVia).
func lossOn(n int, dirs ...string) func(from, to string) int {
	return func(from, to string) int {
		if slices.ContainsFunc(starVia(from, to), func(d string) bool { return slices.Contains(dirs, d) }) {
			return n
		}
		return 0
	}
}

func TestIncidentsFromPooledLoss(t *testing.T) {
	for _, c := range []struct {
		name    string
		oneWay  bool
		of      int
		lost    func(from, to string) int
		paths   func([]PathStatus) []PathStatus
		want    []string // segments' keys
		figures []string
		// evidence are the affected routes of the one incident.
		evidence []string
	}{
		{name: "one-way loss into d", oneWay: true, of: 100, lost: lossOn(6, "d.in"), want: []string{"d.in"}, figures: []string{FigureLoss},
			evidence: []string{"a -> d (lat)", "b -> d (lat)", "c -> d (lat)"}},
		// 3 of 100 (3%) is no verdict on one path against 2%: pooled,
		// the six paths crossing d's way in (forward and back) are.
		{name: "pooled loss no path tells alone", oneWay: true, of: 100, lost: lossOn(4, "d.in"), want: []string{"d.in"}, figures: []string{FigureLoss}},
		{name: "loss into two sites", oneWay: true, of: 100, lost: lossOn(6, "b.in", "d.in"), want: []string{"b.in", "d.in"}, figures: []string{FigureLoss}},
		{name: "loss out of a and into d", oneWay: true, of: 100, lost: lossOn(6, "a.out", "d.in"), want: []string{"a.out", "d.in"}, figures: []string{FigureLoss}},
		{name: "round-trip loss into d", oneWay: false, of: 100, lost: lossOn(6, "d.in"),
			want: []string{"d.in + d.out"}, figures: []string{FigureLossRoundTrip}},
		{name: "quiet", oneWay: true, of: 100, lost: lossOn(0), want: nil},
		{name: "a little loss everywhere", oneWay: true, of: 100, lost: func(string, string) int { return 1 }, want: nil},
		// The replies of d -> b and d -> c still count the ways into d.
		{name: "failed and stale paths left out", oneWay: true, of: 100, lost: lossOn(6, "d.in"),
			paths: func(ps []PathStatus) []PathStatus {
				for i := range ps {
					switch {
					case ps[i].Key.Dst == "d" && ps[i].Key.Src == "b":
						ps[i].Usable = false
					case ps[i].Key.Dst == "d" && ps[i].Key.Src == "c":
						ps[i].At = summaryAt.Add(-time.Hour)
					}
				}
				return ps
			},
			want: []string{"d.in"}, figures: []string{FigureLoss}},
		{name: "one way alone does not name a segment", oneWay: true, of: 100,
			lost: func(from, to string) int { return map[bool]int{true: 6}[from == "a" && to == "d"] }, want: nil},
		// 2 of the 30 probes into d (6.7%, counted by a -> d and the
		// replies of d -> a): the interval reaches down to 1.9%.
		{name: "too few probes", oneWay: true, of: 5,
			lost: func(from, to string) int { return map[bool]int{true: 1}[from == "a" && to == "d"] }, want: nil},
		{name: "enough probes", oneWay: true, of: 50,
			lost: func(from, to string) int { return map[bool]int{true: 5}[to == "d" && from != "c"] }, want: []string{"d.in"}, figures: []string{FigureLoss}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewDetector(starConfig(t))
			paths := withLoss(starPaths(c.oneWay), c.of, c.lost)
			if c.paths != nil {
				paths = c.paths(paths)
			}
			res, err := d.Infer(paths, starVia, SourceExpected)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, inc := range res.Incidents {
				got = append(got, inc.Key())
				if !slices.Equal(inc.Figures, c.figures) {
					t.Errorf("%s: figures %v, want %v", inc.Key(), inc.Figures, c.figures)
				}
				if !slices.Equal(inc.Sources, []string{SourceExpected}) || inc.Confidence != 1 || len(inc.Healthy) > 0 {
					t.Errorf("%s: sources %v, confidence %v, healthy %v", inc.Key(), inc.Sources, inc.Confidence, inc.Healthy)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("incidents %v, want %v (unexplained %v, notes %v)", got, c.want, res.Unexplained, res.Notes)
			}
			if c.evidence != nil && len(res.Incidents) == 1 {
				var paths []string
				for _, e := range res.Incidents[0].Paths {
					paths = append(paths, e.Path)
				}
				if !slices.Equal(paths, c.evidence) {
					t.Errorf("evidence %v, want %v", paths, c.evidence)
				}
			}
		})
	}
}

// Rules switched off and baselines still learning are not verdicts.
func TestSegmentsLeaveOutLearningPaths(t *testing.T) {
	d := NewDetector(starConfig(t))
	paths := withLoss([]PathStatus{{Key: PathKey{Src: "a", Dst: "b", Test: "lat"}, Type: Probe, Usable: true},
		{Key: PathKey{Src: "a", Dst: "b", Test: "bulk"}, Type: Throughput, Usable: true}}, 100, lossOn(0))
	obs := d.Segments(paths, starVia, SourceExpected)
	if len(obs) != 1 || obs[0].Figure != FigureLossRoundTrip || !slices.Equal(obs[0].Dirs, []string{"a.out", "b.in", "b.out", "a.in"}) {
		t.Errorf("observations %+v: want the round-trip loss of a -> b alone", obs)
	}
}

func TestIncidentsOpenAndClose(t *testing.T) {
	inc := segment.Incident{Segment: []string{"d.in"}, Figures: []string{FigureLoss}, Confidence: 1, Reason: "loss: 3 affected paths"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	period := 10 * time.Second
	var tr Incidents
	type step struct {
		after  time.Duration
		found  bool
		opens  bool
		closes bool
	}
	steps := []step{
		{0, true, false, false},
		{time.Second, true, false, false},               // for: 2 inferences, but not yet a period
		{period, true, true, false},                     // both: opens
		{period + time.Second, true, false, false},      // open, found again
		{2 * period, false, false, false},               // missing once
		{2*period + time.Second, true, false, false},    // back: the count restarts
		{3 * period, false, false, false},               // missing
		{3*period + 2*time.Second, false, false, false}, // twice, within a period
		{4 * period, false, false, true},                // a period missing: closes
		{5 * period, false, false, false},
	}
	for i, s := range steps {
		var found []segment.Incident
		if s.found {
			found = []segment.Incident{inc}
		}
		at := t0.Add(s.after)
		opened, closed := tr.Update(Inference{Result: segment.Result{Incidents: found}}, at, 2, period)
		if (len(opened) == 1) != s.opens || (len(closed) == 1) != s.closes {
			t.Fatalf("step %d: opened %v, closed %v; want opens %v closes %v", i, opened, closed, s.opens, s.closes)
		}
		for _, a := range opened {
			var ev segment.Incident
			if a.Rule != RuleIncident || a.Src != "d.in" || a.Started != at || json.Unmarshal(a.Evidence, &ev) != nil || ev.Key() != "d.in" {
				t.Errorf("opened %+v", a)
			}
		}
		for _, a := range closed {
			if a.Ended != at || a.Started != t0.Add(period) {
				t.Errorf("closed %+v", a)
			}
		}
		if open := len(tr.Active()) == 1; open != (s.after >= period && s.after < 4*period) {
			t.Errorf("step %d: active %v", i, tr.Active())
		}
	}
	if tr.Pending() {
		t.Error("nothing should be held once closed")
	}
}

// A restarted service takes the open incidents back and closes them
// unless they are inferred again.
// An affected path that nothing explains lingers with its directions.
func TestInferLingering(t *testing.T) {
	d := NewDetector(starConfig(t))
	// 16 of 200 (8%) is loss on the way a -> d alone: pooled, neither
	// a's way out nor d's way in is lossy.
	lost := func(from, to string) int { return map[bool]int{true: 8}[from == "a" && to == "d"] }
	inf, err := d.Infer(withLoss(starPaths(true), 100, lost), starVia, SourceExpected)
	if err != nil {
		t.Fatal(err)
	}
	if len(inf.Incidents) != 0 || len(inf.Lingering) != 1 || !slices.Equal(inf.Lingering[0], []string{"a.out", "d.in"}) {
		t.Errorf("incidents %+v, lingering %v: want none, and a -> d's directions", inf.Incidents, inf.Lingering)
	}
}

// A route losing more than its threshold that its counts do not prove (6
// of 200 against 2%: no judgement, so not Unexplained) lingers too: a
// direction only it crosses keeps its open incident.
func TestInferLingeringUnproven(t *testing.T) {
	d := NewDetector(starConfig(t))
	lost := func(from, to string) int { return map[bool]int{true: 3}[from == "a" && to == "d"] }
	inf, err := d.Infer(withLoss(starPaths(true), 100, lost), starVia, SourceExpected)
	if err != nil {
		t.Fatal(err)
	}
	if len(inf.Incidents) != 0 || len(inf.Unexplained) != 0 || len(inf.Lingering) != 1 || !slices.Equal(inf.Lingering[0], []string{"a.out", "d.in"}) {
		t.Errorf("incidents %+v, unexplained %v, lingering %v: want none, none, and a -> d's directions", inf.Incidents, inf.Unexplained, inf.Lingering)
	}
}

// An open incident whose paths' alerts flap is not missing while an
// affected path that nothing explains still crosses its segment; it
// closes once none does.
func TestIncidentsLinger(t *testing.T) {
	inc := segment.Incident{Segment: []string{"d.in"}, Figures: []string{FigureLoss}, Confidence: 1}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	period := 10 * time.Second
	var tr Incidents
	found := Inference{Result: segment.Result{Incidents: []segment.Incident{inc}}}
	tr.Update(found, t0, 2, period)
	if opened, _ := tr.Update(found, t0.Add(period), 2, period); len(opened) != 1 {
		t.Fatalf("not opened: %v", opened)
	}
	// b -> d alone still alerts: too little to name d.in, but it crosses it.
	lingering := Inference{Result: segment.Result{Unexplained: []segment.Evidence{{Path: "b -> d (lat)", Figure: FigureLoss}}},
		Lingering: [][]string{{"b.out", "d.in"}}}
	for i := 2; i <= 8; i++ {
		if _, closed := tr.Update(lingering, t0.Add(time.Duration(i)*period), 2, period); len(closed) > 0 {
			t.Fatalf("closed while a path crossing it still alerts: %v", closed)
		}
	}
	// What lingers now crosses other directions: the incident is missing.
	other := Inference{Lingering: [][]string{{"b.out", "c.in"}}}
	var closed []Alert
	for i := 9; i <= 12 && len(closed) == 0; i++ {
		_, closed = tr.Update(other, t0.Add(time.Duration(i)*period), 2, period)
	}
	if len(closed) != 1 || closed[0].Ended != t0.Add(10*period) {
		t.Errorf("closed %v: want the incident, a period after it went missing", closed)
	}
}

func TestIncidentsResume(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := incidentAlert("d.in", segment.Incident{Segment: []string{"d.in"}, Figures: []string{FigureLoss}, Confidence: 1}, t0)
	var tr Incidents
	tr.Resume([]Alert{a, {Rule: RuleLossAbove}})
	if got := tr.Active(); len(got) != 1 || got[0].Ref != a.Ref {
		t.Fatalf("active after resume: %+v", got)
	}
	tr.Update(Inference{}, t0.Add(time.Minute), 1, time.Second)
	if _, closed := tr.Update(Inference{}, t0.Add(2*time.Minute), 1, time.Second); len(closed) != 1 || closed[0].Ref != a.Ref {
		t.Errorf("closed %+v", closed)
	}
}

func TestMarks(t *testing.T) {
	paths := map[[2]string][]string{}
	for _, s := range starSites {
		for _, d := range starSites {
			if s != d {
				paths[[2]string{s, d}] = starVia(s, d)
			}
		}
	}
	paths[[2]string{"a", "e"}] = nil // unknown: marks nothing
	for _, c := range []struct {
		segment       []string
		rows, columns []string
	}{
		{[]string{"d.in"}, nil, []string{"d"}},
		{[]string{"d.in", "d.out"}, []string{"d"}, []string{"d"}},
		{[]string{"x.y"}, nil, nil},
	} {
		rows, cols := Marks(c.segment, paths)
		if !slices.Equal(rows, c.rows) || !slices.Equal(cols, c.columns) {
			t.Errorf("%v: rows %v columns %v, want %v %v", c.segment, rows, cols, c.rows, c.columns)
		}
	}
}

// A segment found that is a strict part of an open incident's narrows
// that incident: the same alert (ref, start, acknowledgement), renamed,
// and no second one opens.
func TestIncidentsNarrow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	period := 10 * time.Second
	wide := segment.Incident{Segment: []string{"r1->r2", "site cern up"}, Figures: []string{FigureLoss}, Confidence: 1}
	narrow := segment.Incident{Segment: []string{"r1->r2"}, Figures: []string{FigureLoss}, Confidence: 1}
	other := segment.Incident{Segment: []string{"site slac down"}, Figures: []string{FigureLoss}, Confidence: 1}
	found := func(incs ...segment.Incident) Inference { return Inference{Result: segment.Result{Incidents: incs}} }
	var tr Incidents
	tr.Update(found(wide), t0, 2, period)
	opened, _ := tr.Update(found(wide), t0.Add(period), 2, period)
	if len(opened) != 1 {
		t.Fatalf("opened %v", opened)
	}
	ref := opened[0].Ref
	if !tr.Ack(ref, "alice", "looking", t0.Add(period+time.Second)) {
		t.Fatal("the incident could not be acknowledged")
	}
	for i, step := range []Inference{found(narrow, other), found(narrow, other), found(narrow, other)} {
		opened, closed := tr.Update(step, t0.Add(time.Duration(2+i)*period), 2, period)
		if len(closed) > 0 || slices.ContainsFunc(opened, func(a Alert) bool { return IncidentKey(a) != "site slac down" }) {
			t.Fatalf("step %d: opened %v, closed %v: want the wide incident narrowed, and only slac's opened", i, opened, closed)
		}
	}
	got := tr.Active()
	if len(got) != 2 {
		t.Fatalf("active %+v, want the narrowed incident and slac's", got)
	}
	n := got[0]
	if n.Key != "r1->r2" || n.Ref != ref || !n.Started.Equal(t0.Add(period)) || n.NarrowedFrom != "r1->r2 + site cern up" ||
		n.AckedBy != "alice" || n.AckNote != "looking" || n.AckedAt.IsZero() {
		t.Errorf("narrowed incident %+v", n)
	}
	if got[1].Key != "site slac down" || got[1].NarrowedFrom != "" || got[1].AckedBy != "" {
		t.Errorf("slac's incident %+v", got[1])
	}
	// A wider segment than an open incident's opens one of its own.
	tr.Update(found(wide, other), t0.Add(5*period), 2, period)
	if keys := len(tr.Active()); keys != 2 {
		t.Errorf("%d incidents open, want the same two while the wider segment waits its turn", keys)
	}
}
