package topology

import (
	"fmt"
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
// a timeline.
type DirChange struct {
	At     time.Duration      `json:"at_ns"`
	Dir    int                `json:"dir"`
	Config scenario.Direction `json:"config"`
	What   string             `json:"what"`
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
