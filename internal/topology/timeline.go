package topology

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/scenario"
)

// Select finds the directions a selector names: a direction as testbed
// status lists it ("a->b", "site cern up"), both directions of a link
// ("a<->b") or of a site's access ("site cern").
func Select(dirs []Direction, selector string) ([]int, error) {
	var out []int
	for _, w := range scenario.SelectorDirs(selector) {
		i := slices.IndexFunc(dirs, func(d Direction) bool { return d.Name == w })
		if i < 0 {
			var names []string
			for _, d := range dirs {
				names = append(names, d.Name)
			}
			return nil, fmt.Errorf("no link direction %q (directions: %s; a<->b names both directions of a link, \"site NAME\" both of a site)", w, strings.Join(names, ", "))
		}
		out = append(out, i)
	}
	return out, nil
}

// DirChange is new settings for one direction at a time from the start of
// a timeline, or (with Path, and Dir -1) a new path for a pair of hosts.
type DirChange struct {
	At     time.Duration      `json:"at_ns"`
	Dir    int                `json:"dir"`
	Config scenario.Direction `json:"config"`
	What   string             `json:"what"`
	// Path is a reroute (ResolvePaths): Config is then unset.
	Path *PathChange `json:"path,omitempty"`
}

// Resolve turns a timeline's changes into each direction's settings, from
// dirs as they are when it starts: each change applies over the settings
// before it, and a restore puts back what a direction had when that
// occurrence of its event began.
func Resolve(dirs []Direction, changes []scenario.TimedChange) ([]DirChange, error) {
	current := make([]scenario.Direction, len(dirs))
	for i, d := range dirs {
		current[i] = d.Config
	}
	type occurrence struct{ event, occ, dir int }
	before := map[occurrence]scenario.Direction{}
	var out []DirChange
	for _, c := range changes {
		idx, err := Select(dirs, c.Link)
		if err != nil {
			return nil, err
		}
		for _, i := range idx {
			key := occurrence{c.Event, c.Occurrence, i}
			if c.Restore {
				cfg, ok := before[key]
				if !ok {
					return nil, fmt.Errorf("%s: nothing to restore on %s", c.What, dirs[i].Name)
				}
				delete(before, key)
				current[i] = cfg
			} else {
				if _, ok := before[key]; !ok {
					before[key] = current[i]
				}
				cfg, err := scenario.Change(current[i], c.Set)
				if err != nil {
					return nil, fmt.Errorf("%s on %s: %w", c.What, dirs[i].Name, err)
				}
				current[i] = cfg
			}
			out = append(out, DirChange{At: c.At, Dir: i, Config: current[i], What: c.What})
		}
	}
	return out, nil
}

// ResolvePaths is Resolve on t's directions, with the reroutes the
// changes make: each time a direction goes down or comes back up, the
// pairs the test-bed's routing routes are routed again (Reroute) the
// test-bed's reroute delay later, around the directions down then. The
// reroutes are changes with Dir -1 and a Path, after the direction
// changes of the same time; they start from the paths t holds now and
// leave them as they are (ApplyPaths, once applied, moves them). A
// Topology that New did not make, or a test-bed that never reroutes, gets
// Resolve's changes alone.
func (t *Topology) ResolvePaths(changes []scenario.TimedChange) ([]DirChange, error) {
	out, err := Resolve(t.Dirs, changes)
	r := t.routes
	if err != nil || r == nil || r.reroute < 0 || !slices.ContainsFunc(r.routed, func(d []int) bool { return len(d) > 0 }) {
		return out, err
	}
	r.mu.Lock()
	sim := &routes{g: r.g, metric: r.metric, first: r.first, routed: r.routed, cur: maps.Clone(r.cur)}
	r.mu.Unlock()
	down := make([]bool, len(r.edgeOf))
	for i := range down {
		down[i] = t.Dirs[i].Config.Down
	}
	type reroute struct {
		at   time.Duration
		what string
	}
	var pending []reroute // in time order: changes come in time order and the delay is one
	var merged []DirChange
	flush := func(before time.Duration, all bool) {
		for len(pending) > 0 && (all || pending[0].at < before) {
			p := pending[0]
			pending = pending[1:]
			for _, pc := range sim.next(down) {
				merged = append(merged, DirChange{At: p.at, Dir: -1, Path: &pc, What: p.what})
			}
		}
	}
	for _, c := range out {
		flush(c.At, false)
		merged = append(merged, c)
		if c.Dir >= len(down) || down[c.Dir] == c.Config.Down {
			continue // no direction of the graph went down or up
		}
		down[c.Dir] = c.Config.Down
		if at := c.At + r.reroute; len(pending) == 0 || pending[len(pending)-1].at != at {
			pending = append(pending, reroute{at: at, what: "reroute after " + c.What})
		}
	}
	flush(0, true)
	return merged, nil
}
