package testbed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// SetRequest changes the settings of some link directions of a running
// test-bed: those Select names, with Settings written key=value as
// scenario.Change reads them.
type SetRequest struct {
	Select   string   `json:"select"`
	Settings []string `json:"settings"`
}

// readRequest decodes a request's JSON body, of at most limit bytes; if it
// cannot, it answers 400, saying it was reading what, and returns false.
func readRequest[T any](w http.ResponseWriter, r *http.Request, limit int64, what string) (T, bool) {
	var req T
	if err := json.NewDecoder(io.LimitReader(r.Body, limit)).Decode(&req); err != nil {
		http.Error(w, "reading "+what+": "+err.Error(), http.StatusBadRequest)
		return req, false
	}
	return req, true
}

// setDirections applies a SetRequest to the engine, between two packets,
// and records the new settings in the test-bed's state.
func (d *daemon) setDirections(w http.ResponseWriter, r *http.Request) {
	req, ok := readRequest[SetRequest](w, r, 64<<10, "the request")
	if !ok {
		return
	}
	d.setMu.Lock()
	defer d.setMu.Unlock()
	idx, err := topology.Select(d.state.Dirs, req.Select)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	changed := make([]topology.Direction, len(idx))
	for k, i := range idx {
		c, err := scenario.Change(d.state.Dirs[i].Config, req.Settings)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		changed[k] = d.state.Dirs[i] // its ends, entry router and paths stay
		changed[k].Config = c
	}
	what := req.Select + ": " + strings.Join(req.Settings, " ")
	var now []linkemu.TimedChange
	flipped := false // a direction goes down or comes back up
	for k, i := range idx {
		now = append(now, d.timed(time.Time{}, i, changed[k], what, ""))
		flipped = flipped || changed[k].Config.Down != d.state.Dirs[i].Config.Down
	}
	if err := d.schedule(now); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for k, i := range idx {
		d.state.Dirs[i].Config = changed[k].Config
		changed[k].Paths = nil // the answer is the settings; status lists the paths
	}
	if flipped {
		d.rerouteAfter(what)
	}
	// testbed status shows the new settings at once; the change itself is
	// recorded once the engine has made it.
	if err := writeState(d.state); err != nil {
		log.Printf("recording the new settings: %v", err)
	}
	log.Printf("set %s", what)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(changed)
}

// Set changes link directions of running test-bed name and returns their
// new settings.
func Set(name string, req SetRequest) ([]topology.Direction, error) {
	var out []topology.Direction
	return out, engineRequest(name, "/directions", req, &out)
}

// timed is a change for the engine whose settings are recorded in the
// test-bed's state once the engine has made it; setMu is held.
func (d *daemon) timed(at time.Time, dir int, to topology.Direction, what, tag string) linkemu.TimedChange {
	if d.pending == nil {
		d.pending = map[int]pendingChange{}
	}
	d.nextRef++
	d.pending[d.nextRef] = pendingChange{to: to, due: at}
	return linkemu.TimedChange{At: at, Dir: dir, Config: dirConfig(to, d.topo.HasIPv6()), What: what, Tag: tag, Ref: d.nextRef}
}

// schedule gives the engine changes made by timed and timedPath. The
// engine checks them all before it takes any: if it refuses them, none is
// pending any more. setMu is held.
func (d *daemon) schedule(changes []linkemu.TimedChange) error {
	err := d.engine.Schedule(changes)
	if err != nil {
		for _, c := range changes {
			delete(d.pending, c.Ref)
		}
	}
	return err
}

// TimelineRequest starts a timeline: Changes at their times from Start,
// under Tag, which ends it.
type TimelineRequest struct {
	Tag     string                 `json:"tag"`
	Start   time.Time              `json:"start"`
	Changes []scenario.TimedChange `json:"changes"`
}

// maxTimelineResolved bounds the changes a timeline gives the engine: its
// changes of directions and the new paths of the reroutes they make.
const maxTimelineResolved = 10 * scenario.MaxTimedChanges

// maxTimelineBody bounds a timeline request: MaxTimedChanges of a few
// hundred bytes each.
const maxTimelineBody = 64 << 20

func (d *daemon) startTimeline(w http.ResponseWriter, r *http.Request) {
	req, ok := readRequest[TimelineRequest](w, r, maxTimelineBody, "the timeline")
	if !ok {
		return
	}
	if req.Tag == "" || len(req.Changes) > scenario.MaxTimedChanges {
		http.Error(w, fmt.Sprintf("a timeline needs a tag and at most %d changes", scenario.MaxTimedChanges), http.StatusBadRequest)
		return
	}
	d.setMu.Lock()
	defer d.setMu.Unlock()
	if _, dup := d.before[req.Tag]; dup {
		http.Error(w, fmt.Sprintf("timeline %q is already running", req.Tag), http.StatusConflict)
		return
	}
	// d.topo's directions are d.state's: ResolvePaths starts from the
	// settings in force, and adds the reroutes the changes make.
	resolved, err := d.topo.ResolvePaths(req.Changes)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(resolved) > maxTimelineResolved {
		http.Error(w, fmt.Sprintf("timeline %q makes %d changes of directions and paths (its reroutes included): at most %d", req.Tag, len(resolved), maxTimelineResolved), http.StatusBadRequest)
		return
	}
	before := map[int]topology.Direction{}
	var timed []linkemu.TimedChange
	for _, c := range resolved {
		at := req.Start.Add(c.At)
		if c.Path != nil {
			timed = append(timed, d.timedPath(at, *c.Path, c.What, req.Tag))
			continue
		}
		if _, ok := before[c.Dir]; !ok {
			before[c.Dir] = d.state.Dirs[c.Dir]
		}
		to := d.state.Dirs[c.Dir]
		to.Config = c.Config
		timed = append(timed, d.timed(at, c.Dir, to, c.What, req.Tag))
	}
	if err := d.schedule(timed); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if d.before == nil {
		d.before = map[string]map[int]topology.Direction{}
	}
	d.before[req.Tag] = before
	log.Printf("timeline %s: %d changes to %d directions from %s", req.Tag, len(timed), len(before), req.Start.Format(time.RFC3339Nano))
	w.WriteHeader(http.StatusNoContent)
}

// endTimeline cancels what a timeline has not done yet and puts its
// directions back.
func (d *daemon) endTimeline(w http.ResponseWriter, r *http.Request) {
	req, ok := readRequest[TimelineRequest](w, r, 64<<10, "the request")
	if !ok {
		return
	}
	d.setMu.Lock()
	defer d.setMu.Unlock()
	before, ok := d.before[req.Tag]
	if !ok {
		http.Error(w, fmt.Sprintf("no timeline %q is running", req.Tag), http.StatusNotFound)
		return
	}
	d.engine.Cancel(req.Tag)
	delete(d.before, req.Tag)
	var back []linkemu.TimedChange
	what := "end of " + req.Tag + ": " + results.TimelineEnd
	flipped := false
	for _, i := range slices.Sorted(maps.Keys(before)) {
		back = append(back, d.timed(time.Time{}, i, before[i], what, ""))
		flipped = flipped || d.state.Dirs[i].Config.Down != before[i].Config.Down
		d.state.Dirs[i].Config = before[i].Config
	}
	if err := d.schedule(back); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if flipped {
		d.rerouteAfter(what)
	}
	w.WriteHeader(http.StatusNoContent)
}

// pendingChange is a change given to the engine and not yet recorded: the
// settings it brings (none for a new path), and when it is due (zero: at
// once).
type pendingChange struct {
	to  topology.Direction
	due time.Time
}

// recordChanges writes the changes the engine has made into the test-bed's
// state, with when each was due and when it took effect, until the daemon stops.
func (d *daemon) recordChanges() {
	for !d.stopping.Load() {
		time.Sleep(50 * time.Millisecond)
		d.setMu.Lock()
		d.recordApplied()
		d.setMu.Unlock()
	}
}

// recordApplied records the changes the engine has made since the last
// call; setMu is held.
func (d *daemon) recordApplied() {
	applied := d.engine.Applied()
	if len(applied) == 0 {
		return
	}
	for _, a := range applied {
		// In the order the engine made them, so the last one stands.
		p, ok := d.pending[a.Ref]
		delete(d.pending, a.Ref)
		var name string
		switch {
		case a.Path != nil:
			// A new path (Dir is -1): Paths and the directions' lists
			// take it, and the change is recorded under the pair's name.
			var err error
			if name, err = d.applyPath(a.Path); err != nil {
				log.Printf("recording %s: %v", a.What, err)
				continue
			}
		case a.Dir < 0 || a.Dir >= len(d.state.Dirs):
			log.Printf("recording %s: the engine changed direction %d, which the test-bed does not have", a.What, a.Dir)
			continue
		default:
			if ok {
				d.state.Dirs[a.Dir].Config = p.to.Config
			}
			name = d.state.Dirs[a.Dir].Name
		}
		n := len(d.state.Changes)
		if last := n - 1; n > 0 && d.state.Changes[last].What == a.What && d.state.Changes[last].T.Equal(a.At.UTC()) {
			if a.Path != nil {
				d.state.Changes[last].Dirs = addName(d.state.Changes[last].Dirs, name)
			} else {
				d.state.Changes[last].Dirs = append(d.state.Changes[last].Dirs, name)
			}
			continue
		}
		c := backend.LinkChange{T: a.At.UTC(), What: a.What, Dirs: []string{name}}
		if a.Tag != "" {
			c.Due = a.Due.UTC()
		}
		d.state.Changes = append(d.state.Changes, c)
	}
	d.state.Changes = d.state.Changes[max(len(d.state.Changes)-maxChanges, 0):]
	if err := writeState(d.state); err != nil {
		log.Printf("recording the links' changes: %v", err)
	}
}

// flushChanges records every change due by now, waiting (a moment: the
// engine makes a due change before its next packet) until the engine has
// made them, so that whoever reads the state next finds them.
func (d *daemon) flushChanges(w http.ResponseWriter, r *http.Request) {
	d.setMu.Lock()
	defer d.setMu.Unlock()
	now := time.Now()
	for deadline := now.Add(time.Second); ; time.Sleep(time.Millisecond) {
		d.recordApplied()
		waiting := slices.ContainsFunc(slices.Collect(maps.Values(d.pending)), func(p pendingChange) bool { return !p.due.After(now) })
		if !waiting {
			break
		}
		if time.Now().After(deadline) {
			http.Error(w, "the engine has not made the changes due by now within a second", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// Schedule starts a timeline on the test-bed (backend.Timeline).
func (b *Bed) Schedule(tag string, start time.Time, changes []scenario.TimedChange) error {
	return engineRequest(b.state.Name, "/timeline", TimelineRequest{Tag: tag, Start: start, Changes: changes}, nil)
}

// EndTimeline ends timeline tag (backend.Timeline).
func (b *Bed) EndTimeline(tag string) error {
	return engineRequest(b.state.Name, "/timeline/end", TimelineRequest{Tag: tag}, nil)
}

var _ backend.Timeline = (*Bed)(nil)

// maxAnswer bounds what is read of an engine daemon's answer: the new
// settings of at most every direction, or the counters of every
// direction and host (a few hundred bytes each).
const maxAnswer = 64 << 20

// engineRequest posts req to test-bed name's engine daemon and decodes its
// answer into out, unless out is nil.
func engineRequest(name, path string, req, out any) error {
	if daemonPID(name) == 0 {
		if _, err := ReadState(name); err != nil {
			return err
		}
		return fmt.Errorf("test-bed %q is not running (its daemon is gone): wanlab testbed down %s", name, name)
	}
	body, _ := json.Marshal(req)
	resp, err := NewStatsReader(name).client.Post("http://engine"+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("asking the engine of %q (%s): %w", name, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("test-bed %q: %s", name, strings.TrimSpace(string(msg)))
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(out); err != nil {
		return fmt.Errorf("reading the answer of the engine of %q: %w", name, err)
	}
	return nil
}
