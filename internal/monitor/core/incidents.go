package core

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/segment"
)

// RuleIncident is the rule of an incident's alert record: a fault
// inferred on one segment (package segment) from the verdicts of the
// paths crossing it, in place of one alert per path.
const RuleIncident = "incident"

// The figures incidents are inferred from: a one-way loss crosses its
// direction's links only; a round-trip figure crosses both ways' links.
const (
	FigureLoss          = "loss"
	FigureLossRoundTrip = "round-trip loss"
	FigureDelay         = "round-trip delay"
	FigureRate          = "rate"
)

// SourceExpected says a path's directions came from the topology's
// expected paths.
const SourceExpected = "expected paths"

// PathStatus is what incident inference reads of one test of a path
// besides the detector's alerts.
type PathStatus struct {
	Key  PathKey
	Type string
	// Usable says its latest result is fresh and was judged: neither
	// failed, stale nor disturbed by the service's own tests.
	Usable bool
	// OneWayLoss says its latest summary counted loss each way (the
	// reflector numbered what it received).
	OneWayLoss bool
	// At is when its latest summary ended, Loss are its loss counts
	// (Observation.Loss): the pooled evidence of loss.
	At   time.Time
	Loss map[Name]LossCount
}

// Segments are segment.Infer's observations from the paths' latest
// results: the loss of each route between two hosts, judged by the
// pooled counts of the routes crossing each direction (lossSegments), and
// each usable path's other figures that a rule judges, affected while the
// rule's alert is active. via gives a one-way path's link directions
// (none: the path explains nothing; a target's, a far end without an
// agent, is then left out), source says where they come from.
// Paths still learning a baseline, and rules switched off, are left out;
// so is a path part-way to its alert (it broke the threshold, fewer than
// `for` times in a row so far): neither affected yet nor healthy. Counted
// healthy, it would rule out the very segment at fault while a fault's
// paths fire one after the other.
func (d *Detector) Segments(paths []PathStatus, via func(src, dst string) []string, source string) []segment.Observation {
	return d.segments(paths, via, source, d.lossRoutes(paths, via))
}

// segments are Segments with the paths' loss routes already counted.
func (d *Detector) segments(paths []PathStatus, via func(src, dst string) []string, source string, routes []*lossRoute) []segment.Observation {
	out := lossSegments(routes, source)
	add := func(k PathKey, rule, figure, suffix string, dirs []string) {
		ak := alertKey{k, rule}
		_, active := d.active[ak]
		if !active && len(d.breaches[ak]) > 0 {
			return
		}
		if k.Family != "" {
			suffix += ", " + k.Family // a test run once per family: one observation each
		}
		out = append(out, segment.Observation{Path: fmt.Sprintf("%s -> %s (%s%s)", k.Src, k.Dst, k.Test, suffix),
			Dirs: dirs, Figure: figure, Affected: active, Source: source})
	}
	learnt := func(k PathKey, m Name) bool {
		_, _, n := d.Baseline(k, m)
		return n >= d.cfg.Baseline.MinPoints
	}
	for _, p := range paths {
		if !p.Usable {
			continue
		}
		k := p.Key
		th := d.cfg.For(k.Src, k.Dst)
		there := via(k.Src, k.Dst)
		if len(there) == 0 && d.cfg.IsTarget(k.Dst) {
			// A target (a far end without an agent) has no path in the
			// topology: its verdicts explain nothing, unless a hop list
			// gives its directions.
			continue
		}
		both := slices.Concat(there, via(k.Dst, k.Src))
		switch p.Type {
		case Probe:
			if th.RTTStep > 0 && learnt(k, RTTMin) {
				add(k, RuleRTTStep, FigureDelay, ", round trip", both)
			}
		case Throughput, Transfer:
			if th.ThroughputBelow > 0 && learnt(k, ThroughputRate) {
				add(k, RuleThroughputBelow, FigureRate, "", there)
			}
		}
	}
	slices.SortFunc(out, func(a, b segment.Observation) int {
		return strings.Compare(a.Figure+"\x00"+a.Path, b.Figure+"\x00"+b.Path)
	})
	return out
}

// Inference is what Infer found: segment.Infer's result, and the
// directions of each affected path that no incident explains.
type Inference struct {
	segment.Result
	// Lingering are the directions of the Unexplained paths (those with
	// none left out), and of the loss routes above their threshold that
	// their counts do not prove: evidence that has not gone.
	Lingering [][]string
	// Family says what is known of an incident's address family, by its
	// key (InferFamilies): "ipv4" or "ipv6" for one only that family's
	// paths show, "" for one both families' show; not there when
	// unknown.
	Family map[string]string
}

// Infer explains the paths' verdicts (Segments), and more observations
// (OneWay.Segments), by faulty segments.
func (d *Detector) Infer(paths []PathStatus, via func(src, dst string) []string, source string, more ...segment.Observation) (Inference, error) {
	routes := d.lossRoutes(paths, via)
	obs := append(d.segments(paths, via, source, routes), more...)
	res, err := segment.Infer(obs, segment.Options{})
	if err != nil {
		return Inference{}, fmt.Errorf("inferring incidents from %d paths: %w", len(paths), err)
	}
	out := Inference{Result: res}
	for _, e := range res.Unexplained {
		i := slices.IndexFunc(obs, func(o segment.Observation) bool { return o.Path == e.Path && o.Figure == e.Figure })
		if i >= 0 && len(obs[i].Dirs) > 0 {
			out.Lingering = append(out.Lingering, obs[i].Dirs)
		}
	}
	// A route losing more than its threshold, though too few probes prove
	// it, still crosses an open incident's segment: a direction that only
	// one route crosses (a point-to-point link's) leaves its incident
	// missing whenever that route's summary falls short of proof, and the
	// incident would close and open twice for one fault.
	for _, r := range routes {
		if float64(r.lost) > r.threshold*float64(r.of) && !slices.ContainsFunc(out.Lingering, func(dirs []string) bool { return slices.Equal(dirs, r.dirs) }) {
			out.Lingering = append(out.Lingering, r.dirs)
		}
	}
	return out, nil
}

// IncidentKey is the segment an incident's alert record names.
func IncidentKey(a Alert) string {
	var inc segment.Incident
	if json.Unmarshal(a.Evidence, &inc) != nil || inc.Key() == "" {
		return a.Src
	}
	return inc.Key()
}

// Incidents follows inferred incidents from one inference to the next:
// one opens once its segment has been inferred in `for` inferences in a
// row spanning `for` summary periods (for - 1 periods between the first
// and the last, at least one, so that every path of a round has been
// judged), and closes once it has been missing as long. An open incident
// is not missing while an affected path that no incident explains still
// crosses its segment: a fault's paths whose alerts flap (a summary of a
// lossy path that happened to lose little ends its alert, and `for` more
// must break the threshold to fire it again) leave too few affected
// paths, for a while, to name the segment again, but the evidence has
// not gone, and the incident neither closes nor opens twice. It is not
// safe for concurrent use.
type Incidents struct {
	held map[string]*heldIncident
}

type heldIncident struct {
	inc segment.Incident
	// seen counts the inferences in a row that found it (missed those
	// that did not, once open), from since (missingSince).
	seen, missed        int
	since, missingSince time.Time
	open                *Alert
	// narrowed is the segment it was first opened on, when it has been
	// narrowed since ("" if not).
	narrowed string
	// family is the address family only whose paths show it ("" all);
	// once open, it only widens to all (Update).
	family string
}

// ActiveIncident is an open incident as shown.
type ActiveIncident struct {
	Key string `json:"key"`
	segment.Incident
	Ref     string    `json:"ref"`
	Started time.Time `json:"started"`
	// Rows and Columns are the hosts every one of whose paths out (rows
	// of the grid) or in (columns) crosses the segment: a site's way out
	// marks its hosts' rows, its way in their columns (Marks).
	Rows    []string `json:"rows,omitempty"`
	Columns []string `json:"columns,omitempty"`
	// NarrowedFrom is the segment it opened on, when later evidence
	// narrowed it to fewer directions (Update).
	NarrowedFrom string `json:"narrowed_from,omitempty"`
	// Family and Scope say an incident only one address family's paths
	// show (ipv4, ipv4-only), or one that did and now both do ("",
	// path): as an alert's (Alert.Family, Alert.Scope).
	Family string `json:"family,omitempty"`
	Scope  string `json:"scope,omitempty"`
	// AckedBy is who acknowledged it ("" nobody), when, and what they
	// said (Ack).
	AckedBy string    `json:"acked_by,omitempty"`
	AckedAt time.Time `json:"acked_at,omitzero"`
	AckNote string    `json:"ack_note,omitempty"`
}

// Marks are the hosts of paths whose every path out (rows) or every path
// in (columns) crosses one of the segment's directions; paths gives each
// expected path's directions (none: it marks nothing).
func Marks(segment []string, paths map[[2]string][]string) (rows, columns []string) {
	out, in := map[string]bool{}, map[string]bool{}
	for p, dirs := range paths {
		crosses := slices.ContainsFunc(dirs, func(d string) bool { return slices.Contains(segment, d) })
		for i, m := range []map[string]bool{out, in} {
			h := p[i]
			if seen, ok := m[h]; !ok || seen {
				m[h] = crosses
			}
		}
	}
	for _, hosts := range []struct {
		m   map[string]bool
		put *[]string
	}{{out, &rows}, {in, &columns}} {
		for _, h := range slices.Sorted(maps.Keys(hosts.m)) {
			if hosts.m[h] {
				*hosts.put = append(*hosts.put, h)
			}
		}
	}
	return rows, columns
}

// maxIncidents bounds the incidents followed at once.
const maxIncidents = 256

// Update takes an inference at `at`; need is the rule's `for` and span
// the summary period. An incident opens once found in need inferences in
// a row spanning need-1 periods (at least one, so that every path of a
// round has been judged), and closes once missing as long. A segment
// found that is a strict part of an open incident's, which is not found
// itself, narrows that incident (the same alert, renamed) rather than
// opening a second one: more evidence told apart directions that the
// first could not. It returns the alert records of the incidents it
// opens and of those it closes (Ended set).
func (t *Incidents) Update(found Inference, at time.Time, need int, span time.Duration) (opened, closed []Alert) {
	if t.held == nil {
		t.held = map[string]*heldIncident{}
	}
	need = max(need, 1)
	hold := time.Duration(max(need-1, 1)) * span
	now := map[string]bool{}
	for _, inc := range found.Incidents {
		now[inc.Key()] = true
	}
	done := map[string]bool{}
	for _, inc := range found.Incidents {
		key := inc.Key()
		if done[key] || key == "" {
			continue
		}
		done[key] = true
		h := t.held[key]
		if h == nil {
			h = t.narrow(inc, now)
		}
		if h == nil {
			if len(t.held) >= maxIncidents {
				continue
			}
			h = &heldIncident{since: at}
			t.held[key] = h
		}
		h.inc, h.missed = inc, 0
		h.seen++
		switch fam, known := found.Family[key]; {
		case !known:
		case h.open == nil:
			h.family = fam
		case h.family != "" && fam != h.family:
			// Both families show it now: the scope widens, and never
			// narrows again while open.
			h.family = ""
			h.open.Family, h.open.Scope = "", ScopePath
		}
		if h.open == nil && h.seen >= need && at.Sub(h.since) >= hold {
			a := incidentAlert(key, inc, at)
			a.Family, a.Scope = h.family, familyScope(h.family)
			a.Message = scopeWords(a.Scope) + a.Message
			h.open = &a
			opened = append(opened, a)
		} else if h.open != nil {
			h.open.Value, h.open.Message = inc.Confidence, scopeWords(h.open.Scope)+incidentMessage(key, inc)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(t.held)) {
		h := t.held[key]
		if now[key] {
			continue
		}
		if h.open == nil {
			delete(t.held, key)
			continue
		}
		if lingers(h.inc.Segment, found.Lingering) {
			h.missed = 0
			continue
		}
		if h.missed == 0 {
			h.missingSince = at
		}
		h.missed++
		if h.missed >= need && at.Sub(h.missingSince) >= hold {
			a := *h.open
			a.Ended = at
			closed = append(closed, a)
			delete(t.held, key)
		}
	}
	return opened, closed
}

// narrow renames the open incident whose segment strictly holds inc's,
// and which the inference (its keys: found) did not find, to inc's
// segment; it returns it, or nil if there is none. The alert keeps its
// ref, start and acknowledgement; its segment, evidence and message are
// inc's.
func (t *Incidents) narrow(inc segment.Incident, found map[string]bool) *heldIncident {
	for _, key := range slices.Sorted(maps.Keys(t.held)) {
		h := t.held[key]
		if h.open == nil || found[key] || len(h.inc.Segment) <= len(inc.Segment) ||
			slices.ContainsFunc(inc.Segment, func(d string) bool { return !slices.Contains(h.inc.Segment, d) }) {
			continue
		}
		delete(t.held, key)
		t.held[inc.Key()] = h
		if h.narrowed == "" {
			h.narrowed = key
		}
		ev, _ := json.Marshal(inc)
		h.open.Src, h.open.Dst, h.open.Evidence = inc.Segment[0], inc.Segment[len(inc.Segment)-1], ev
		h.open.Test = strings.Join(inc.Figures, ",")
		h.open.Message = scopeWords(h.open.Scope) + incidentMessage(inc.Key(), inc)
		h.seen, h.since = 0, h.open.Started
		return h
	}
	return nil
}

// lingers says whether one of the paths (their directions) crosses the
// segment.
func lingers(seg []string, paths [][]string) bool {
	return slices.ContainsFunc(paths, func(dirs []string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return slices.Contains(seg, d) })
	})
}

// Resume takes incidents still open in the archive, so that a restart
// neither forgets nor repeats them: each closes unless inferred again.
func (t *Incidents) Resume(alerts []Alert) {
	if t.held == nil {
		t.held = map[string]*heldIncident{}
	}
	for _, a := range alerts {
		if a.Rule != RuleIncident {
			continue
		}
		var inc segment.Incident
		if err := json.Unmarshal(a.Evidence, &inc); err != nil || inc.Key() == "" {
			continue
		}
		a := a
		t.held[inc.Key()] = &heldIncident{inc: inc, since: a.Started, open: &a, family: a.Family}
	}
}

// Active are the open incidents, by key.
func (t *Incidents) Active() []ActiveIncident {
	var out []ActiveIncident
	for _, key := range slices.Sorted(maps.Keys(t.held)) {
		if h := t.held[key]; h.open != nil {
			a := h.open
			out = append(out, ActiveIncident{Key: key, Incident: h.inc, Ref: a.Ref, Started: a.Started, NarrowedFrom: h.narrowed,
				Family: a.Family, Scope: a.Scope, AckedBy: a.AckedBy, AckedAt: a.AckedAt, AckNote: a.AckNote})
		}
	}
	return out
}

// Pending says whether an incident is open or waiting to open: the
// inference must go on even with no alert changing.
func (t *Incidents) Pending() bool { return len(t.held) > 0 }

func incidentMessage(key string, inc segment.Incident) string {
	return fmt.Sprintf("segment %s (%s, from %s): %s", key, strings.Join(inc.Figures, ", "), strings.Join(inc.Sources, ", "), inc.Reason)
}

// incidentAlert is the alert record of an incident: its source and
// destination the segment's first and last direction, its test the
// figures, its value the confidence, its evidence the incident.
func incidentAlert(key string, inc segment.Incident, at time.Time) Alert {
	ev, _ := json.Marshal(inc)
	return Alert{Ref: fmt.Sprintf("%s/%s/%d", RuleIncident, key, at.UnixNano()), Rule: RuleIncident,
		Src: inc.Segment[0], Dst: inc.Segment[len(inc.Segment)-1], Test: strings.Join(inc.Figures, ","),
		Started: at, Value: inc.Confidence, Threshold: 1, Message: incidentMessage(key, inc), Evidence: ev}
}
