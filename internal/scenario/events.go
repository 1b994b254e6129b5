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
