package scenario

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// Event is one entry of a timeline: a change to link directions at a time
// from the start of each step (a workload's events:) or of the run (the
// scenario's events:).
type Event struct {
	// Field and Line say where the event is written, for messages.
	Field string
	Line  int
	// Name says what the event stands for ("route change"), for findings.
	Name string
	// Link selects directions as testbed set does: a->b, a<->b, "site x",
	// "site x up".
	Link string
	At   time.Duration
	// Set are the settings, key=value, as Change takes them.
	Set []string
	// For is how long the change lasts before the directions go back to
	// what they were; 0 keeps it. A ramp takes For to reach its end.
	For time.Duration
	// Every repeats the event until Until.
	Every time.Duration
	Until time.Duration
	// Ramp moves rate or delay from one value to another over For.
	Ramp *Ramp
	// Failures takes the directions down at random until Until.
	Failures *Failures
}

// Ramp moves a setting (rate or delay) linearly from From to To in Steps.
type Ramp struct {
	Key      string
	From, To float64 // bit/s or nanoseconds
	Step     time.Duration
}

// Failures are outages at random: times between failures and to repair
// drawn from exponential distributions of the given means (the NMWG
// availability characteristics), from Seed.
type Failures struct {
	MTBF, MTTR time.Duration
	Seed       uint64
}

// What is the event in words, for records and findings.
func (e Event) What() string {
	var what string
	switch {
	case e.Ramp != nil:
		what = fmt.Sprintf("%s: %s ramp", e.Link, e.Ramp.Key)
	case e.Failures != nil:
		what = fmt.Sprintf("%s: random outage (MTBF %v, MTTR %v)", e.Link, e.Failures.MTBF, e.Failures.MTTR)
	default:
		what = e.Link + ": " + strings.Join(e.Set, " ")
	}
	if e.For > 0 && e.Ramp == nil {
		what += " for " + e.For.String()
	}
	if e.Name != "" {
		what = e.Name + " (" + what + ")"
	}
	return what
}

// TimedChange is one change of an expanded timeline.
type TimedChange struct {
	At   time.Duration `json:"at_ns"`
	Link string        `json:"link"`
	// Set are settings, as Change takes them; with Restore the directions
	// go back to their settings before occurrence Occurrence of the event.
	Set        []string `json:"set,omitempty"`
	Restore    bool     `json:"restore,omitempty"`
	Event      int      `json:"event"`
	Occurrence int      `json:"occurrence"`
	What       string   `json:"what"`
}

// Bounds on the timelines of one file.
const (
	// MaxTimedChanges bounds the changes the timelines of a file (the
	// run's and every workload's) expand to.
	MaxTimedChanges = 100000
	// MaxEvents bounds the events the timelines of a file list.
	MaxEvents = 10000
)

// Expand turns a timeline into its changes in time order (file order for
// changes at the same time).
func Expand(events []Event) []TimedChange {
	return expandWithin(events, MaxTimedChanges)
}

// expandWithin is Expand, stopping once it has more than limit changes.
func expandWithin(events []Event, limit int) []TimedChange {
	var out []TimedChange
	for i, e := range events {
		out = append(out, e.expand(i, limit-len(out))...)
		if len(out) > limit {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b TimedChange) int { return cmp.Compare(a.At, b.At) })
	return out
}

// expand is the changes of event i, stopping once it has more than limit.
func (e Event) expand(i int, limit int) []TimedChange {
	what := e.What()
	var out []TimedChange
	add := func(at time.Duration, occ int, set []string, restore bool, w string) {
		out = append(out, TimedChange{At: at, Link: e.Link, Set: set, Restore: restore, Event: i, Occurrence: occ, What: w})
	}
	switch {
	case e.Ramp != nil:
		r := e.Ramp
		n := max(1, int(math.Ceil(float64(e.For)/float64(r.Step))))
		for k := 0; k <= n && len(out) <= limit; k++ {
			v := r.From + (r.To-r.From)*float64(k)/float64(n)
			at := e.At + e.For*time.Duration(k)/time.Duration(n)
			add(at, 0, []string{r.Key + "=" + r.format(v)}, false, fmt.Sprintf("%s: %s=%s (%s)", e.Link, r.Key, r.format(v), what))
		}
	case e.Failures != nil:
		f := e.Failures
		rng := rand.New(rand.NewPCG(f.Seed, uint64(i)))
		t := e.At
		for occ := 0; len(out) <= limit; occ++ {
			t += time.Duration(rng.ExpFloat64() * float64(f.MTBF))
			if t >= e.Until {
				break
			}
			repair := max(time.Millisecond, time.Duration(rng.ExpFloat64()*float64(f.MTTR)))
			add(t, occ, []string{"down=true"}, false, fmt.Sprintf("%s: outage for %v (%s)", e.Link, repair.Round(time.Millisecond), what))
			add(t+repair, occ, nil, true, fmt.Sprintf("%s: back up (%s)", e.Link, what))
			t += repair
		}
	default:
		for occ, at := 0, e.At; len(out) <= limit; occ, at = occ+1, at+e.Every {
			add(at, occ, e.Set, false, what)
			if e.For > 0 {
				add(at+e.For, occ, nil, true, "end of "+what)
			}
			if e.Every == 0 || at+e.Every > e.Until {
				break
			}
		}
	}
	return out
}

// format writes a ramp's value as a setting.
func (r *Ramp) format(v float64) string {
	if r.Key == "rate" {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + "bit"
	}
	return time.Duration(math.Round(v)).String()
}

// window is when an occurrence of an event holds a direction.
type window struct {
	start, end time.Duration
	event      int
}

// windows are the spans during which event i holds its directions: a
// change that lasts, a ramp, an outage; a lasting change is a moment.
func (e Event) windows(i int, changes []TimedChange) []window {
	var out []window
	open := map[int]time.Duration{}
	for _, c := range changes {
		if c.Event != i {
			continue
		}
		switch {
		case e.Ramp != nil:
			if len(out) == 0 {
				out = append(out, window{e.At, e.At + e.For, i})
			}
		case c.Restore:
			out = append(out, window{open[c.Occurrence], c.At, i})
		case e.For > 0 || e.Failures != nil:
			open[c.Occurrence] = c.At
		default:
			out = append(out, window{c.At, c.At, i})
		}
	}
	return out
}

var eventKeys = []string{"name", "link", "at", "set", "for", "every", "until", "ramp", "failures"}

// events reads a timeline at field (a list node) for a test-bed; length is
// how long a step lasts (0 if it is not known: the run's timeline, or a
// step that ends when its work is done).
func (v *validator) events(field string, n *yaml.Node, tb *Testbed, length time.Duration, seed uint64) []Event {
	if absent(n) {
		return nil
	}
	if tb.RealHosts() {
		v.fail(field, "events change emulated links: on real hosts nothing can (run the scenario without agent: to emulate it)")
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		v.fail(field, "expected a list of events, each as {at: 30s, link: a<->b, set: {delay: 200ms}}")
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

// event reads one entry of a timeline.
func (v *validator) event(f string, n *yaml.Node, selectors map[string][]string, length time.Duration, seed uint64) (Event, bool) {
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
func (v *validator) settings(f string, n *yaml.Node, dirs []Direction) []string {
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

func (v *validator) ramp(f string, n *yaml.Node) *Ramp {
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

func (v *validator) failures(f string, n *yaml.Node, seed uint64) *Failures {
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
func (v *validator) overlaps(events []Event, changes []TimedChange) {
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

// SelectorDirs are the direction names a link selector stands for:
// a<->b both directions of a link, "site x" both of a site's access.
func SelectorDirs(selector string) []string {
	if a, b, ok := strings.Cut(selector, "<->"); ok {
		return []string{a + "->" + b, b + "->" + a}
	}
	if strings.HasPrefix(selector, "site ") && !strings.HasSuffix(selector, " up") && !strings.HasSuffix(selector, " down") {
		return []string{selector + " up", selector + " down"}
	}
	return []string{selector}
}

// absent says a key is missing or empty (key: with nothing after it).
func absent(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// link checks a link selector against the test-bed's.
func (v *validator) link(field, selector string, selectors map[string][]string) {
	if _, ok := selectors[selector]; !ok {
		v.fail(field, "no link %q in this test-bed (links: %s)", selector, strings.Join(sortedKeys(selectors), ", "))
	}
}

// linkSelectors is tb.LinkSelectors, made once.
func (v *validator) linkSelectors(tb *Testbed) map[string][]string {
	if v.selectors == nil {
		v.selectors = tb.LinkSelectors()
	}
	return v.selectors
}

// LinkSelectors maps each way to name links of the test-bed in events to
// the directions it selects: a->b, a<->b, "site x", "site x up", "site x down".
func (t *Testbed) LinkSelectors() map[string][]string {
	out := map[string][]string{}
	for name := range t.namedDirections() {
		out[name] = []string{name}
		if a, b, ok := strings.Cut(name, "->"); ok {
			out[a+"<->"+b] = SelectorDirs(a + "<->" + b)
		}
		if site, ok := strings.CutSuffix(name, " up"); ok {
			out[site] = SelectorDirs(site)
		}
	}
	return out
}

// namedDirections are the test-bed's link and site directions by the names
// the topology gives them (a->b, "site x up"), as the scenario configures them.
func (t *Testbed) namedDirections() map[string]Direction {
	out := map[string]Direction{}
	for _, l := range t.Links {
		out[l.A+"->"+l.B], out[l.B+"->"+l.A] = l.Forward, l.Reverse
	}
	for _, s := range t.Sites {
		out["site "+s.Name+" up"], out["site "+s.Name+" down"] = s.Up, s.Down
	}
	return out
}

// directionsOf are the directions a link selector names, as the scenario
// configures them.
func (t *Testbed) directionsOf(selector string) []Direction {
	named := t.namedDirections()
	var out []Direction
	for _, name := range SelectorDirs(selector) {
		if d, ok := named[name]; ok {
			out = append(out, d)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
