// Package segment infers which link directions are at fault when several
// paths leave their baselines together, so that the monitor raises one
// incident naming a segment instead of one alert per path.
//
// The input is, per figure (loss, delay, rate: opaque names), every
// one-way path measured, the link directions it crosses in order (from the
// topology's expected paths or from measured hop lists: opaque IDs), and
// whether it is affected or healthy. A fault on a direction affects every
// path that crosses it, so the directions that explain the affected paths
// are those every affected path crosses and no healthy path does
// (tomography's boolean inference, as in Duffield's "Network tomography
// of binary network performance characteristics", IEEE Trans. Inf.
// Theory 2006, and the "smallest consistent failure set" of Kompella et
// al.'s SCORE, NSDI 2005):
//
//   - Directions that exactly the same observed paths cross cannot be
//     told apart by any measurement of those paths: they form one
//     segment, named as a whole (the fault is on one of them).
//   - The explanation is the smallest set of segments, each crossed by no
//     healthy path, that covers every affected path: one segment for a
//     single fault, up to Options.MaxFaults at once, found by a bounded
//     search. When several smallest sets exist, each incident's
//     Confidence is the share of them that name its segment, and the
//     segments that could stand in its place are its Candidates.
//   - When no such set exists (a measurement misjudged a path, or more
//     faults than the search allows), segments are chosen greedily by how
//     many affected paths they explain less how many healthy paths cross
//     them, with a confidence below one.
//
// Incidents of different figures naming overlapping segments are one
// incident (a rate cut raising delay and loss on the same direction).
// The package is pure, imports nothing of wanlab, and bounds what it
// holds (MaxObservations, MaxCrossings, Options.MaxSearch).
package segment

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Observation is one figure of one one-way path: whether it left its
// baseline.
type Observation struct {
	// Path names the one-way path ("a -> b"): the loss of a path a -> b
	// on the way there is the path a -> b's, on the way back b -> a's.
	Path string
	// Dirs are the link directions the path crosses, in order. A path
	// with none can be explained by nothing (Result.Unexplained).
	Dirs []string
	// Figure is what was judged ("loss", "delay", "rate"); paths are
	// compared with others of the same figure only.
	Figure string
	// Affected says the figure left its baseline; false: it is healthy.
	// Paths with no judgement (no data) are not observations.
	Affected bool
	// Source is where Dirs came from ("expected paths", "hop lists"):
	// incidents list the sources of their evidence.
	Source string
}

// Options bound the search.
type Options struct {
	// MaxFaults is the most segments an exact explanation names at once
	// (0: 2; at most 3).
	MaxFaults int
	// MaxSearch bounds the exact search's steps (0: DefaultMaxSearch);
	// past it the greedy choice is taken, and Result.Notes says so.
	MaxSearch int
	// MaxIncidents bounds the greedy choice's incidents per figure (0: 8).
	MaxIncidents int
}

// Bounds on the input, counted before anything is allocated.
const (
	MaxObservations  = 1 << 18
	MaxCrossings     = 1 << 22
	DefaultMaxSearch = 1 << 16
)

// ErrInput is what Infer's errors wrap: the input is too large or not
// well formed.
var ErrInput = errors.New("segment: input refused")

// Evidence is one figure of one path.
type Evidence struct {
	Path   string `json:"path"`
	Figure string `json:"figure"`
}

// Candidate is a segment that could explain an incident's paths.
type Candidate struct {
	// Dirs are the directions no observed path tells apart, sorted.
	Dirs []string `json:"dirs"`
	// Affected and Healthy count the paths of the figure crossing them.
	Affected int `json:"affected"`
	Healthy  int `json:"healthy"`
}

// Incident is a fault inferred on one segment.
type Incident struct {
	// Segment are the directions named: the fault is on one of them
	// (several when the measured paths cannot tell them apart).
	Segment []string `json:"segment"`
	// Figures are those whose paths it explains, sorted.
	Figures []string `json:"figures"`
	// Paths are the affected paths crossing the segment: the evidence.
	Paths []Evidence `json:"paths"`
	// Healthy are the healthy paths crossing it (none for an exact fit).
	Healthy []Evidence `json:"healthy,omitempty"`
	// Candidates are other segments that would explain the paths as well
	// (as many faults, as few healthy crossings), best first.
	Candidates []Candidate `json:"candidates,omitempty"`
	// Confidence is from 0 to 1: 1 when the segment is the only exact
	// explanation.
	Confidence float64 `json:"confidence"`
	// Sources are where the paths' directions came from, sorted.
	Sources []string `json:"sources,omitempty"`
	// Reason says why, in words.
	Reason string `json:"reason"`
}

// Result is what Infer found.
type Result struct {
	// Incidents, by confidence, then by segment.
	Incidents []Incident
	// Unexplained are the affected paths no incident explains.
	Unexplained []Evidence
	// Notes say where the search was cut short.
	Notes []string
}

// Infer finds the segments that explain the affected paths of each figure.
func Infer(obs []Observation, opts Options) (Result, error) {
	if err := check(obs); err != nil {
		return Result{}, err
	}
	opts = opts.withDefaults()
	if opts.MaxFaults > 3 {
		return Result{}, fmt.Errorf("%w: %d faults at once: at most 3", ErrInput, opts.MaxFaults)
	}
	byFigure := map[string][]Observation{}
	for _, o := range obs {
		byFigure[o.Figure] = append(byFigure[o.Figure], o)
	}
	var res Result
	var incidents []Incident
	for _, fig := range slices.Sorted(maps.Keys(byFigure)) {
		got := inferFigure(fig, byFigure[fig], opts)
		incidents = append(incidents, got.Incidents...)
		res.Unexplained = append(res.Unexplained, got.Unexplained...)
		res.Notes = append(res.Notes, got.Notes...)
	}
	res.Incidents = merge(incidents)
	return res, nil
}

func (o Options) withDefaults() Options {
	if o.MaxFaults <= 0 {
		o.MaxFaults = 2
	}
	if o.MaxSearch <= 0 {
		o.MaxSearch = DefaultMaxSearch
	}
	if o.MaxIncidents <= 0 {
		o.MaxIncidents = 8
	}
	return o
}

// check refuses input too large or not well formed, before any of it is
// copied.
func check(obs []Observation) error {
	if len(obs) > MaxObservations {
		return fmt.Errorf("%w: %d observations, at most %d", ErrInput, len(obs), MaxObservations)
	}
	crossings := 0
	for _, o := range obs {
		crossings += len(o.Dirs)
		if crossings > MaxCrossings {
			return fmt.Errorf("%w: more than %d crossings of directions by paths", ErrInput, MaxCrossings)
		}
		if o.Path == "" || o.Figure == "" {
			return fmt.Errorf("%w: an observation with no path or no figure (%q, %q)", ErrInput, o.Path, o.Figure)
		}
	}
	seen := make(map[Evidence]bool, len(obs))
	for _, o := range obs {
		k := Evidence{o.Path, o.Figure}
		if seen[k] {
			return fmt.Errorf("%w: the %s of path %s is observed twice", ErrInput, o.Figure, o.Path)
		}
		seen[k] = true
	}
	return nil
}

// merge joins the incidents of different figures whose segments overlap:
// the segment is then the directions they share.
func merge(in []Incident) []Incident {
	var out []Incident
	for _, inc := range in {
		i := slices.IndexFunc(out, func(o Incident) bool {
			return len(intersect(o.Figures, inc.Figures)) == 0 && len(intersect(o.Segment, inc.Segment)) > 0
		})
		if i < 0 {
			out = append(out, inc)
			continue
		}
		o := &out[i]
		o.Segment = intersect(o.Segment, inc.Segment)
		o.Figures = union(o.Figures, inc.Figures)
		o.Sources = union(o.Sources, inc.Sources)
		o.Paths = append(o.Paths, inc.Paths...)
		o.Healthy = append(o.Healthy, inc.Healthy...)
		for _, c := range inc.Candidates {
			if !slices.ContainsFunc(o.Candidates, func(x Candidate) bool { return slices.Equal(x.Dirs, c.Dirs) }) {
				o.Candidates = append(o.Candidates, c)
			}
		}
		o.Confidence = max(o.Confidence, inc.Confidence)
		o.Reason += "; " + inc.Reason
	}
	slices.SortStableFunc(out, func(a, b Incident) int {
		switch {
		case a.Confidence > b.Confidence:
			return -1
		case a.Confidence < b.Confidence:
			return 1
		}
		return strings.Compare(strings.Join(a.Segment, "\x00"), strings.Join(b.Segment, "\x00"))
	})
	return out
}

// intersect and union take sorted lists and return sorted lists.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); ok {
			out = append(out, x)
		}
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// Key names an incident by its segment, to follow it from one inference
// to the next (its figures and evidence may change meanwhile).
func (i Incident) Key() string { return strings.Join(i.Segment, " + ") }
