package segment

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// class is a segment: the directions that exactly the same paths cross.
type class struct {
	dirs []string // sorted
	// aff are the affected paths crossing it (indexes into figure.affected);
	// healthy the healthy ones (indexes into figure.paths).
	aff     bitset
	naff    int
	healthy []int
}

func (c class) candidate() Candidate {
	return Candidate{Dirs: c.dirs, Affected: c.naff, Healthy: len(c.healthy)}
}

// figure is the inference over one figure's paths.
type figure struct {
	name  string
	paths []Observation
	// affected are the affected paths with directions (indexes into paths).
	affected []int
	classes  []class
	// consistent are, per affected path, the classes crossing it that no
	// healthy path crosses.
	consistent [][]int
	opts       Options
	steps      int
	cut        bool
}

// inferFigure explains one figure's affected paths.
func inferFigure(name string, paths []Observation, opts Options) Result {
	f := &figure{name: name, paths: paths, opts: opts}
	var res Result
	for i, o := range paths {
		switch {
		case !o.Affected:
		case len(o.Dirs) == 0:
			res.Unexplained = append(res.Unexplained, Evidence{o.Path, name})
		default:
			f.affected = append(f.affected, i)
		}
	}
	if len(f.affected) == 0 {
		return res
	}
	f.classify()
	for k := 1; k <= opts.MaxFaults; k++ {
		covers := f.covers(k)
		if f.cut {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: the search for %d faults at once stopped after %d steps: segments chosen by fit", name, k, opts.MaxSearch))
			break
		}
		if len(covers) > 0 {
			res.Incidents = f.exact(covers)
			return res
		}
	}
	if !f.cut {
		res.Notes = append(res.Notes, fmt.Sprintf("%s: no %d segments or fewer that no healthy path crosses explain every affected path: segments chosen by fit", name, opts.MaxFaults))
	}
	incidents, left := f.greedy()
	res.Incidents = incidents
	for _, a := range left {
		res.Unexplained = append(res.Unexplained, Evidence{f.paths[f.affected[a]].Path, name})
	}
	return res
}

// classify groups the directions affected paths cross by the paths that
// cross them.
func (f *figure) classify() {
	isAffected := map[int]int{}
	for a, i := range f.affected {
		isAffected[i] = a
	}
	crossers := map[string][]int{}
	for i, o := range f.paths {
		for _, d := range o.Dirs {
			if l := crossers[d]; len(l) == 0 || l[len(l)-1] != i {
				crossers[d] = append(l, i)
			}
		}
	}
	byKey := map[string]int{}
	for _, d := range slices.Sorted(maps.Keys(crossers)) {
		l := crossers[d]
		if !slices.ContainsFunc(l, func(i int) bool { _, ok := isAffected[i]; return ok }) {
			continue
		}
		var key strings.Builder
		for _, i := range l {
			key.WriteString(strconv.Itoa(i))
			key.WriteByte(',')
		}
		if c, ok := byKey[key.String()]; ok {
			f.classes[c].dirs = append(f.classes[c].dirs, d)
			continue
		}
		c := class{dirs: []string{d}, aff: newBitset(len(f.affected))}
		for _, i := range l {
			if a, ok := isAffected[i]; ok {
				c.aff.set(a)
				c.naff++
			} else {
				c.healthy = append(c.healthy, i)
			}
		}
		byKey[key.String()] = len(f.classes)
		f.classes = append(f.classes, c)
	}
	f.consistent = make([][]int, len(f.affected))
	for ci, c := range f.classes {
		if len(c.healthy) > 0 {
			continue
		}
		for a := range f.affected {
			if c.aff.has(a) {
				f.consistent[a] = append(f.consistent[a], ci)
			}
		}
	}
}

// covers finds every set of k classes, none crossed by a healthy path,
// that together cover every affected path: a search that branches, at
// each level, on the classes crossing the first affected path not yet
// covered, so that it tries no class that cannot help. It stops (f.cut)
// past opts.MaxSearch steps.
func (f *figure) covers(k int) [][]int {
	var out [][]int
	seen := map[string]bool{}
	var dfs func(cov bitset, chosen []int)
	dfs = func(cov bitset, chosen []int) {
		p := cov.firstZero(len(f.affected))
		if p < 0 {
			c := slices.Sorted(slices.Values(chosen))
			if key := fmt.Sprint(c); !seen[key] {
				seen[key] = true
				out = append(out, c)
			}
			return
		}
		if len(chosen) == k {
			return
		}
		for _, c := range f.consistent[p] {
			if f.steps++; f.steps > f.opts.MaxSearch {
				f.cut = true
			}
			if f.cut {
				return
			}
			dfs(cov.or(f.classes[c].aff), append(chosen, c))
		}
	}
	dfs(newBitset(len(f.affected)), nil)
	slices.SortFunc(out, slices.Compare)
	return out
}

// exact makes the incidents of the first of the smallest exact covers;
// each one's confidence is the share of covers naming its class, and its
// candidates the classes that take its place in another cover.
func (f *figure) exact(covers [][]int) []Incident {
	best := covers[0]
	keys := map[string]bool{}
	named := map[int]int{}
	for _, c := range covers {
		keys[fmt.Sprint(c)] = true
		for _, ci := range c {
			named[ci]++
		}
	}
	var out []Incident
	for i, ci := range best {
		var alts []Candidate
		for alt := range f.classes {
			if slices.Contains(best, alt) {
				continue
			}
			swapped := slices.Clone(best)
			swapped[i] = alt
			slices.Sort(swapped)
			if keys[fmt.Sprint(swapped)] {
				alts = append(alts, f.classes[alt].candidate())
			}
		}
		c := f.classes[ci]
		inc := f.incident(c, float64(named[ci])/float64(len(covers)))
		inc.Candidates = alts
		inc.Reason = fmt.Sprintf("%s: %d affected %s crossing it and no healthy one", f.name, c.naff, plural(c.naff, "path"))
		if len(c.dirs) > 1 {
			inc.Reason += fmt.Sprintf("; the measured paths cannot tell its %d directions apart", len(c.dirs))
		}
		if len(alts) > 0 {
			inc.Reason += fmt.Sprintf("; %d other %s would explain them as well", len(alts), plural(len(alts), "segment"))
		}
		if len(best) > 1 {
			inc.Reason += fmt.Sprintf(" (one of %d faults at once)", len(best))
		}
		out = append(out, inc)
	}
	return out
}

// greedy chooses classes one at a time by the affected paths they
// explain, not yet explained, less the healthy paths crossing them, while
// one explains more than is against it; it returns the incidents and the
// affected paths left unexplained.
func (f *figure) greedy() ([]Incident, []int) {
	left := newBitset(len(f.affected))
	for a := range f.affected {
		left.set(a)
	}
	better := func(gain, h, bestGain, bestH int) bool {
		if s, bs := gain-h, bestGain-bestH; s != bs {
			return s > bs
		}
		if gain != bestGain {
			return gain > bestGain
		}
		return h < bestH
	}
	var out []Incident
	for len(out) < f.opts.MaxIncidents && left.count() > 0 {
		best, bestGain := -1, 0
		for ci, c := range f.classes {
			gain := c.aff.andCount(left)
			if gain <= len(c.healthy) {
				continue
			}
			if best < 0 || better(gain, len(c.healthy), bestGain, len(f.classes[best].healthy)) {
				best, bestGain = ci, gain
			}
		}
		if best < 0 {
			break
		}
		c := f.classes[best]
		var ties []Candidate
		for ci, o := range f.classes {
			if ci != best && o.aff.andCount(left) == bestGain && len(o.healthy) == len(c.healthy) {
				ties = append(ties, o.candidate())
			}
		}
		inc := f.incident(c, float64(c.naff)/float64(c.naff+len(c.healthy))/float64(1+len(ties)))
		inc.Candidates = ties
		inc.Reason = fmt.Sprintf("%s: %d affected %s crossing it, and %d healthy: the best fit, not an exact one", f.name, c.naff, plural(c.naff, "path"), len(c.healthy))
		out = append(out, inc)
		left.andNot(c.aff)
	}
	var rest []int
	for a := range f.affected {
		if left.has(a) {
			rest = append(rest, a)
		}
	}
	return out, rest
}

// incident names class c with its evidence.
func (f *figure) incident(c class, confidence float64) Incident {
	inc := Incident{Segment: c.dirs, Figures: []string{f.name}, Confidence: confidence}
	for a, i := range f.affected {
		if c.aff.has(a) {
			inc.Paths = append(inc.Paths, Evidence{f.paths[i].Path, f.name})
			inc.Sources = append(inc.Sources, f.paths[i].Source)
		}
	}
	for _, i := range c.healthy {
		inc.Healthy = append(inc.Healthy, Evidence{f.paths[i].Path, f.name})
	}
	slices.Sort(inc.Sources)
	inc.Sources = slices.DeleteFunc(slices.Compact(inc.Sources), func(s string) bool { return s == "" })
	return inc
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// bitset is a set of small integers.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// or is a new set of b's and o's members.
func (b bitset) or(o bitset) bitset {
	out := slices.Clone(b)
	for i := range out {
		out[i] |= o[i]
	}
	return out
}

// andNot removes o's members from b.
func (b bitset) andNot(o bitset) {
	for i := range b {
		b[i] &^= o[i]
	}
}

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

func (b bitset) andCount(o bitset) int {
	n := 0
	for i, w := range b {
		n += bits.OnesCount64(w & o[i])
	}
	return n
}

// firstZero is the lowest of 0 to n-1 not in b, or -1.
func (b bitset) firstZero(n int) int {
	for i, w := range b {
		if w != ^uint64(0) {
			if z := i*64 + bits.TrailingZeros64(^w); z < n {
				return z
			}
			return -1
		}
	}
	return -1
}
