package scenario

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// timelineChecker reads the timelines (the run's events and each
// workload's) on the test-bed, keeping the file's bounds on their events
// and changes, and what a workload watches (its capture and watches).
type timelineChecker struct {
	*fieldChecker
	// hosts checks the hosts that watches name.
	hosts *hostChecker
	// tb is the test-bed, once read: events check their settings on it.
	tb *Testbed
	// selectors are the test-bed's link selectors, once made.
	selectors map[string][]string
	// eventCount and changeCount count the file's timelines: their
	// entries and the changes they expand to.
	eventCount, changeCount int
}

var eventKeys = []string{"name", "link", "at", "set", "for", "every", "until", "ramp", "failures"}

// events reads a timeline at field (a list node) for a test-bed; length is
// how long a step lasts (0 if it is not known: the run's timeline, or a
// step that ends when its work is done).
func (v *timelineChecker) events(field string, n *yaml.Node, tb *Testbed, length time.Duration, seed uint64) []Event {
	if !v.emulated(field, n, tb, yaml.SequenceNode,
		"events change emulated links: on real hosts nothing can (run the scenario without agent: to emulate it)",
		"expected a list of events, each as {at: 30s, link: a<->b, set: {delay: 200ms}}") {
		return nil
	}
	if v.eventCount += len(n.Content); v.eventCount > MaxEvents {
		v.FailErr(field, yamlfile.ErrTooLarge, "with these the file's timelines list %d events: a file holds at most %d", v.eventCount, MaxEvents)
		return nil
	}
	selectors := v.linkSelectors(tb)
	v.tb = tb
	var out []Event
	for i, item := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		if e, ok := v.event(f, item, selectors, length, seed); ok {
			out = append(out, e)
		}
	}
	if v.Count() > 0 {
		return out
	}
	changes := expandWithin(out, MaxTimedChanges-v.changeCount)
	if v.changeCount += len(changes); v.changeCount > MaxTimedChanges {
		v.FailErr(field, yamlfile.ErrTooLarge, "with this timeline the file's timelines expand to more than %d changes: repeat less often", MaxTimedChanges)
		return out
	}
	v.overlaps(out, changes)
	return out
}

// emulated says whether n, at field, is given, on an emulated test-bed,
// and of kind want, failing it if not: onReal says why real hosts have
// none, shape what it should be.
func (v *timelineChecker) emulated(field string, n *yaml.Node, tb *Testbed, want yaml.Kind, onReal, shape string) bool {
	switch {
	case absent(n):
		return false
	case tb.RealHosts():
		v.fail(field, "%s", onReal)
	case n.Kind != want:
		v.fail(field, "%s", shape)
	default:
		return true
	}
	return false
}

// event reads one entry of a timeline.
func (v *timelineChecker) event(f string, n *yaml.Node, selectors map[string][]string, length time.Duration, seed uint64) (Event, bool) {
	if n.Kind != yaml.MappingNode {
		v.fail(f, "an event is a mapping such as {at: 30s, link: a<->b, set: {delay: 200ms}}")
		return Event{}, false
	}
	e := Event{Field: f, Line: n.Line}
	vals := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if !slices.Contains(eventKeys, k) {
			v.fail(f+"."+k, "unknown field %q (an event has %s)", k, strings.Join(eventKeys, ", "))
			continue
		}
		vals[k] = n.Content[i+1]
	}
	scalar := func(k string) string {
		if x := vals[k]; x != nil {
			if x.Kind != yaml.ScalarNode {
				v.fail(f+"."+k, "expected a single value")
				return ""
			}
			return x.Value
		}
		return ""
	}
	duration := func(k string) time.Duration {
		s := scalar(k)
		if s == "" {
			return 0
		}
		d, err := units.ParseDuration(s)
		if err != nil {
			v.fail(f+"."+k, "%v", err)
		}
		return d
	}
	e.Name = scalar("name")
	e.Link = scalar("link")
	e.At, e.For, e.Every, e.Until = duration("at"), duration("for"), duration("every"), duration("until")
	if e.Link != "" {
		v.link(f+".link", e.Link, selectors)
	} else {
		v.fail(f+".link", "missing: name the link, as a->b, a<->b (both directions), \"site x\" or \"site x up\"")
	}
	kinds := 0
	for _, k := range []string{"set", "ramp", "failures"} {
		if vals[k] != nil {
			kinds++
		}
	}
	if kinds != 1 {
		v.fail(f, "an event does one of set, ramp and failures (it has %d)", kinds)
		return e, false
	}
	switch {
	case vals["set"] != nil:
		e.Set = v.settings(f+".set", vals["set"], v.tb.directionsOf(e.Link))
	case vals["ramp"] != nil:
		e.Ramp = v.ramp(f+".ramp", vals["ramp"])
		if e.For <= 0 {
			v.fail(f+".for", "a ramp needs for: how long it takes to go from one value to the other")
		}
		if e.Ramp != nil && e.Ramp.Step == 0 {
			e.Ramp.Step = max(100*time.Millisecond, e.For/20)
		}
	default:
		e.Failures = v.failures(f+".failures", vals["failures"], seed)
		if e.Until <= e.At {
			v.fail(f+".until", "random failures need until: when they stop, after at")
		}
	}
	if e.Every > 0 {
		switch {
		case e.Ramp != nil || e.Failures != nil:
			v.fail(f+".every", "every repeats a set, not a ramp or failures")
		case e.Until <= e.At:
			v.fail(f+".until", "a repeating event needs until: when it stops, after at")
		case e.For >= e.Every:
			v.fail(f+".for", "%v is not shorter than every (%v): each time would overlap the next", e.For, e.Every)
		}
	} else if vals["until"] != nil && e.Failures == nil {
		v.fail(f+".until", "until is for events that repeat (every) or random failures")
	}
	if length > 0 {
		for _, k := range []string{"at", "until"} {
			if d := duration(k); vals[k] != nil && d >= length {
				v.fail(f+"."+k, "%v is not before the step ends (it lasts %v)", d, length)
			}
		}
	}
	return e, true
}

// settings reads an event's set: mapping into key=value settings, checked
// as Change checks them.
func (v *timelineChecker) settings(f string, n *yaml.Node, dirs []Direction) []string {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		v.fail(f, "expected settings such as {delay: 200ms, loss: 1%%}")
		return nil
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i].Value, n.Content[i+1]
		s := val.Value
		if val.Kind == yaml.SequenceNode && k == "hops" {
			var hops []string
			for _, h := range val.Content {
				hops = append(hops, h.Value)
			}
			s = strings.Join(hops, ",")
			if len(hops) == 0 {
				s = "none"
			}
		} else if val.Kind != yaml.ScalarNode {
			v.fail(f+"."+k, "expected a single value")
			continue
		}
		out = append(out, k+"="+s)
	}
	for _, d := range dirs {
		if _, err := Change(d, out); err != nil {
			v.fail(f, "%v", err)
			break
		}
	}
	return out
}

func (v *timelineChecker) ramp(f string, n *yaml.Node) *Ramp {
	if n.Kind != yaml.MappingNode {
		v.fail(f, "expected {rate: [100Mbit, 10Mbit]} or {delay: [20ms, 200ms]}, and step: 1s if not a twentieth of for")
		return nil
	}
	r := &Ramp{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i].Value, n.Content[i+1]
		switch k {
		case "rate", "delay":
			if r.Key != "" {
				v.fail(f+"."+k, "a ramp moves one setting: %s or %s", r.Key, k)
				continue
			}
			r.Key = k
			if val.Kind != yaml.SequenceNode || len(val.Content) != 2 {
				v.fail(f+"."+k, "give [from, to], as [100Mbit, 10Mbit]")
				continue
			}
			for j, x := range val.Content {
				var num float64
				if k == "rate" {
					rate, err := units.ParseRate(x.Value)
					if err != nil || rate < MinRate {
						v.fail(fmt.Sprintf("%s.%s[%d]", f, k, j), "%q: give a rate of at least %s (to cut the link use set: {down: true})", x.Value, MinRate)
					}
					num = float64(rate)
				} else {
					d, err := units.ParseDuration(x.Value)
					if err != nil || d > MaxDelay {
						v.fail(fmt.Sprintf("%s.%s[%d]", f, k, j), "%q: give a delay up to %v", x.Value, MaxDelay)
					}
					num = float64(d)
				}
				if j == 0 {
					r.From = num
				} else {
					r.To = num
				}
			}
		case "step":
			d, err := units.ParseDuration(val.Value)
			if err != nil || d < 10*time.Millisecond {
				v.fail(f+".step", "%q: give a step of at least 10ms", val.Value)
			}
			r.Step = d
		default:
			v.fail(f+"."+k, "unknown field %q (a ramp has rate or delay, and step)", k)
		}
	}
	if r.Key == "" {
		v.fail(f, "a ramp moves rate or delay: {rate: [100Mbit, 10Mbit]}")
		return nil
	}
	return r
}

func (v *timelineChecker) failures(f string, n *yaml.Node, seed uint64) *Failures {
	fl := &Failures{Seed: seed}
	if n.Kind != yaml.MappingNode {
		v.fail(f, "expected {mtbf: 60s, mttr: 5s}")
		return fl
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i].Value, n.Content[i+1]
		switch k {
		case "mtbf", "mttr":
			d, err := units.ParseDuration(val.Value)
			if err != nil || d < 10*time.Millisecond {
				v.fail(f+"."+k, "%q: give a mean time of at least 10ms", val.Value)
			}
			if k == "mtbf" {
				fl.MTBF = d
			} else {
				fl.MTTR = d
			}
		case "seed":
			s, err := strconv.ParseUint(val.Value, 10, 64)
			if err != nil {
				v.fail(f+".seed", "%q: give a whole number", val.Value)
			}
			fl.Seed = s
		default:
			v.fail(f+"."+k, "unknown field %q (failures have mtbf, mttr and seed)", k)
		}
	}
	if fl.MTBF == 0 || fl.MTTR == 0 {
		v.fail(f, "give both mtbf (mean time between failures) and mttr (mean time to repair)")
	}
	return fl
}

// overlaps refuses two events that hold one direction at once: the
// second's change would be undone, or a ramp fought, by the first. Each
// direction's windows are swept in time order, so that a timeline of many
// changes is checked in n log n.
func (v *timelineChecker) overlaps(events []Event, changes []TimedChange) {
	byDir := map[string][]window{}
	for i, e := range events {
		for _, w := range e.windows(i, changes) {
			for _, d := range SelectorDirs(e.Link) {
				byDir[d] = append(byDir[d], w)
			}
		}
	}
	reported := map[[2]int]bool{}
	for _, d := range sortedKeys(byDir) {
		ws := byDir[d]
		slices.SortStableFunc(ws, func(a, b window) int { return cmp.Compare(a.start, b.start) })
		var active []window // those begun that may still overlap one to come
		for _, w := range ws {
			kept := active[:0]
			for _, u := range active {
				if u.end > w.start || u.start == w.start {
					kept = append(kept, u)
				}
			}
			active = kept
			for _, u := range active {
				// u began no later than w: they overlap if u lasts past
				// w's start, or u is a moment at the start of w's span.
				overlap := u.end > w.start || u.start == u.end && w.end > w.start
				if u.event == w.event || !overlap || reported[[2]int{u.event, w.event}] {
					continue
				}
				first, second := events[min(u.event, w.event)], events[max(u.event, w.event)]
				v.fail(second.Field, "overlaps %s on %s: a direction follows one lasting change, ramp or failure at a time", first.Field, d)
				reported[[2]int{u.event, w.event}], reported[[2]int{w.event, u.event}] = true, true
			}
			active = append(active, w)
		}
	}
}

// link checks a link selector against the test-bed's.
func (v *timelineChecker) link(field, selector string, selectors map[string][]string) {
	if _, ok := selectors[selector]; !ok {
		v.fail(field, "no link %q in this test-bed (links: %s)", selector, strings.Join(sortedKeys(selectors), ", "))
	}
}

// linkSelectors is tb.LinkSelectors, made once.
func (v *timelineChecker) linkSelectors(tb *Testbed) map[string][]string {
	if v.selectors == nil {
		v.selectors = tb.LinkSelectors()
	}
	return v.selectors
}
