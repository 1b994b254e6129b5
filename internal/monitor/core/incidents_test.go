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
				out = append(out, PathStatus{Key: PathKey{s, d, "lat"}, Type: Probe, Usable: true, OneWayLoss: oneWay})
			}
		}
	}
	return out
}

// lossAlerts are active loss alerts on the paths src -> dst.
func lossAlerts(pairs ...[2]string) []Alert {
	var out []Alert
	for _, p := range pairs {
		out = append(out, Alert{Ref: "x/" + p[0] + p[1], Rule: RuleLossAbove, Src: p[0], Dst: p[1], Test: "lat"})
	}
	return out
}

func TestIncidentsFromVerdicts(t *testing.T) {
	into := func(site string) [][2]string {
		var out [][2]string
		for _, s := range starSites {
			if s != site {
				out = append(out, [2]string{s, site})
			}
		}
		return out
	}
	for _, c := range []struct {
		name    string
		oneWay  bool
		alerts  []Alert
		pending [][2]string // loss breaches, fewer than for in a row
		paths   func([]PathStatus) []PathStatus
		want    []string // segments' keys
		figures []string
	}{
		{name: "one-way loss into d", oneWay: true, alerts: lossAlerts(into("d")...), want: []string{"d.in"}, figures: []string{FigureLoss}},
		{name: "round-trip loss into d", oneWay: false,
			alerts: lossAlerts(append(into("d"), [2]string{"d", "a"}, [2]string{"d", "b"}, [2]string{"d", "c"})...),
			want:   []string{"d.in + d.out"}, figures: []string{FigureLossRoundTrip}},
		{name: "quiet", oneWay: true, want: nil},
		{name: "failed and stale paths left out", oneWay: true, alerts: lossAlerts([2]string{"a", "d"}),
			paths: func(ps []PathStatus) []PathStatus {
				// b -> d and c -> d gave nothing usable: a -> d alone
				// cannot tell a's way out from d's way in, and a -> b
				// (healthy) rules out a's way out.
				for i := range ps {
					if ps[i].Key.Dst == "d" && ps[i].Key.Src != "a" {
						ps[i].Usable = false
					}
				}
				return ps
			},
			want: []string{"d.in"}, figures: []string{FigureLoss}},
		// A fault's paths fire one after the other: those about to
		// fire are no healthy paths crossing d's way in.
		{name: "paths part-way to their alerts left out", oneWay: true, alerts: lossAlerts([2]string{"a", "d"}),
			pending: [][2]string{{"b", "d"}, {"c", "d"}}, want: []string{"d.in"}, figures: []string{FigureLoss}},
		{name: "one path alone does not name a segment", oneWay: true, alerts: lossAlerts([2]string{"a", "d"}), want: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewDetector(starConfig(t))
			d.Resume(c.alerts)
			for _, p := range c.pending {
				d.breaches[alertKey{PathKey{p[0], p[1], "lat"}, RuleLossAbove}] = []float64{0.06}
			}
			paths := starPaths(c.oneWay)
			if c.paths != nil {
				paths = c.paths(paths)
			}
			obs := d.Segments(paths, starVia, SourceExpected)
			res, err := segment.Infer(obs, segment.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, inc := range res.Incidents {
				got = append(got, inc.Key())
				if !slices.Equal(inc.Figures, c.figures) {
					t.Errorf("%s: figures %v, want %v", inc.Key(), inc.Figures, c.figures)
				}
				if !slices.Equal(inc.Sources, []string{SourceExpected}) || inc.Confidence != 1 {
					t.Errorf("%s: sources %v, confidence %v", inc.Key(), inc.Sources, inc.Confidence)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("incidents %v, want %v (unexplained %v, notes %v)", got, c.want, res.Unexplained, res.Notes)
			}
		})
	}
}

// Rules switched off and baselines still learning are not verdicts.
func TestSegmentsLeaveOutLearningPaths(t *testing.T) {
	d := NewDetector(starConfig(t))
	paths := []PathStatus{{Key: PathKey{"a", "b", "lat"}, Type: Probe, Usable: true},
		{Key: PathKey{"a", "b", "bulk"}, Type: Throughput, Usable: true}}
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
	d.Resume(lossAlerts([2]string{"a", "d"}))
	inf, err := d.Infer(starPaths(true), starVia, SourceExpected)
	if err != nil {
		t.Fatal(err)
	}
	if len(inf.Incidents) != 0 || len(inf.Lingering) != 1 || !slices.Equal(inf.Lingering[0], []string{"a.out", "d.in"}) {
		t.Errorf("incidents %+v, lingering %v: want none, and a -> d's directions", inf.Incidents, inf.Lingering)
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
