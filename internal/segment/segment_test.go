package segment

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// obs is a shorthand: path name, figure, affected, directions.
func obs(path, figure string, affected bool, dirs ...string) Observation {
	return Observation{Path: path, Dirs: dirs, Figure: figure, Affected: affected, Source: "expected paths"}
}

// want is an incident as a test sees it.
type want struct {
	segment    []string
	figures    []string
	paths      int
	healthy    int
	candidates int
	confidence float64
}

func TestInfer(t *testing.T) {
	for _, tc := range []struct {
		name        string
		obs         []Observation
		opts        Options
		want        []want
		unexplained []string
		note        string // in Result.Notes; "" for none
	}{
		{name: "nothing affected", obs: []Observation{obs("a -> b", "loss", false, "a->b")}},
		{name: "a point-to-point link's one direction",
			obs:  []Observation{obs("a -> b", "loss", true, "a->b"), obs("b -> a", "loss", false, "b->a")},
			want: []want{{segment: []string{"a->b"}, figures: []string{"loss"}, paths: 1, confidence: 1}}},
		{name: "directions no path tells apart are named together",
			obs:  []Observation{obs("a -> b", "delay", true, "x", "y"), obs("b -> a", "delay", false, "z")},
			want: []want{{segment: []string{"x", "y"}, figures: []string{"delay"}, paths: 1, confidence: 1}}},
		{name: "a healthy path clears what it crosses",
			obs: []Observation{obs("a -> c", "loss", true, "x", "y"), obs("b -> c", "loss", true, "w", "y"),
				obs("a -> d", "loss", false, "x", "z")},
			want: []want{{segment: []string{"y"}, figures: []string{"loss"}, paths: 2, confidence: 1}}},
		{name: "a path crossing a direction twice counts once",
			obs:  []Observation{obs("a -> b", "loss", true, "x", "y", "x"), obs("c -> d", "loss", false, "y")},
			want: []want{{segment: []string{"x"}, figures: []string{"loss"}, paths: 1, confidence: 1}}},
		{name: "two faults at once",
			obs: []Observation{obs("p1", "loss", true, "x", "h1"), obs("p2", "loss", true, "y", "h2"),
				obs("p3", "loss", false, "h1", "h2")},
			want: []want{{segment: []string{"x"}, figures: []string{"loss"}, paths: 1, confidence: 1},
				{segment: []string{"y"}, figures: []string{"loss"}, paths: 1, confidence: 1}}},
		{name: "three faults, when allowed",
			// p1 and p2 need x (a and b are cleared by q1), p4 needs y and
			// p5 z: three faults, past the default two.
			obs: []Observation{obs("p1", "loss", true, "x", "a"), obs("p2", "loss", true, "x", "b"),
				obs("p3", "loss", true, "y", "z"), obs("p4", "loss", true, "y"), obs("p5", "loss", true, "z"),
				obs("q1", "loss", false, "a", "b")},
			opts: Options{MaxFaults: 3},
			want: []want{{segment: []string{"x"}, figures: []string{"loss"}, paths: 2, confidence: 1},
				{segment: []string{"y"}, figures: []string{"loss"}, paths: 2, confidence: 1},
				{segment: []string{"z"}, figures: []string{"loss"}, paths: 2, confidence: 1}}},
		{name: "a healthy path rules out the other covers",
			// p1 by x or u, p2 by x or v, p3 by w: q clears u and v.
			obs: []Observation{obs("p1", "loss", true, "x", "u"), obs("p2", "loss", true, "x", "v"),
				obs("p3", "loss", true, "w"), obs("q", "loss", false, "u", "v")},
			want: []want{{segment: []string{"w"}, figures: []string{"loss"}, paths: 1, confidence: 1},
				{segment: []string{"x"}, figures: []string{"loss"}, paths: 2, confidence: 1}}},
		{name: "a third path tells two faults apart",
			// y and z both cross p2, but only x and z explain p4.
			obs: []Observation{obs("p1", "loss", true, "x"), obs("p2", "loss", true, "y", "z"),
				obs("p3", "loss", true, "x", "y"), obs("p4", "loss", true, "z", "t")},
			want: []want{{segment: []string{"x"}, figures: []string{"loss"}, paths: 2, confidence: 1},
				{segment: []string{"z"}, figures: []string{"loss"}, paths: 2, confidence: 1}}},
		{name: "two smallest explanations: a candidate and half the confidence",
			// x explains p1 and p2; p3 is y's or z's: {x, y} and {x, z}.
			obs: []Observation{obs("p1", "loss", true, "x"), obs("p2", "loss", true, "x", "z"),
				obs("p3", "loss", true, "y", "z")},
			want: []want{{segment: []string{"x"}, figures: []string{"loss"}, paths: 2, confidence: 1},
				{segment: []string{"y"}, figures: []string{"loss"}, paths: 1, candidates: 1, confidence: 0.5}}},
		{name: "a misjudged healthy path: the best fit",
			obs: []Observation{obs("b -> a", "loss", true, "b up", "a down"), obs("c -> a", "loss", true, "c up", "a down"),
				obs("d -> a", "loss", false, "d up", "a down"), obs("b -> c", "loss", false, "b up", "c down"),
				obs("c -> b", "loss", false, "c up", "b down"), obs("d -> b", "loss", false, "d up", "b down")},
			want: []want{{segment: []string{"a down"}, figures: []string{"loss"}, paths: 2, healthy: 1, confidence: 2.0 / 3}},
			note: "no 2 segments or fewer"},
		{name: "an affected path with no directions",
			obs:         []Observation{obs("a -> b", "loss", true)},
			unexplained: []string{"a -> b"}},
		{name: "figures naming overlapping segments are one incident",
			obs: []Observation{obs("a -> b", "loss", true, "x", "y"), obs("c -> b", "loss", false, "y"),
				obs("a -> b", "delay", true, "x", "y")},
			want: []want{{segment: []string{"x"}, figures: []string{"delay", "loss"}, paths: 2, confidence: 1}}},
		{name: "the search's bound",
			obs: []Observation{obs("p1", "loss", true, "x", "h1"), obs("p2", "loss", true, "y", "h2"),
				obs("p3", "loss", false, "h1", "h2")},
			opts: Options{MaxSearch: 1},
			want: []want{{segment: []string{"x"}, figures: []string{"loss"}, paths: 1, candidates: 1, confidence: 0.5},
				{segment: []string{"y"}, figures: []string{"loss"}, paths: 1, confidence: 1}},
			note: "stopped after 1 steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Infer(tc.obs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkIncidents(t, res, tc.want)
			var unexplained []string
			for _, e := range res.Unexplained {
				unexplained = append(unexplained, e.Path)
			}
			if !slices.Equal(unexplained, tc.unexplained) {
				t.Errorf("unexplained %v, want %v", unexplained, tc.unexplained)
			}
			if note := strings.Join(res.Notes, "\n"); (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("notes %q, want %q", note, tc.note)
			}
		})
	}
}

func checkIncidents(t *testing.T, res Result, ws []want) {
	t.Helper()
	got := slices.Clone(res.Incidents)
	slices.SortFunc(got, func(a, b Incident) int { return slices.Compare(a.Segment, b.Segment) })
	if len(got) != len(ws) {
		t.Fatalf("incidents %+v, want %d", got, len(ws))
	}
	for i, w := range ws {
		g := got[i]
		if !slices.Equal(g.Segment, w.segment) || !slices.Equal(g.Figures, w.figures) || len(g.Paths) != w.paths ||
			len(g.Healthy) != w.healthy || len(g.Candidates) != w.candidates || g.Confidence < w.confidence-1e-9 || g.Confidence > w.confidence+1e-9 {
			t.Errorf("incident %d: %+v\nwant %+v", i, g, w)
		}
		if g.Reason == "" || !slices.Equal(g.Sources, []string{"expected paths"}) {
			t.Errorf("incident %d: reason %q, sources %q", i, g.Reason, g.Sources)
		}
	}
}

func TestInferRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		obs  []Observation
		opts Options
		want string
	}{
		{"no path", []Observation{obs("", "loss", true, "x")}, Options{}, "no path"},
		{"no figure", []Observation{obs("a -> b", "", true, "x")}, Options{}, "no figure"},
		{"twice", []Observation{obs("a -> b", "loss", true, "x"), obs("a -> b", "loss", false, "x")}, Options{}, "observed twice"},
		{"four faults", []Observation{obs("a -> b", "loss", true, "x")}, Options{MaxFaults: 4}, "at most 3"},
		{"too many observations", make([]Observation, MaxObservations+1), Options{}, "observations, at most"},
		{"too many crossings", manyCrossings(), Options{}, "crossings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Infer(tc.obs, tc.opts)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrInput saying %q", err, tc.want)
			}
		})
	}
}

// manyCrossings are observations crossing more than MaxCrossings
// directions in all (sharing one list).
func manyCrossings() []Observation {
	dirs := make([]string, 1<<12)
	out := make([]Observation, MaxCrossings/len(dirs)+1)
	for i := range out {
		out[i] = Observation{Path: "a", Figure: "loss", Dirs: dirs}
	}
	return out
}
