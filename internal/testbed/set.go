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
		changed[k] = topology.Direction{Name: d.state.Dirs[i].Name, Config: c}
	}
	what := req.Select + ": " + strings.Join(req.Settings, " ")
	var now []linkemu.TimedChange
	for k, i := range idx {
		now = append(now, d.timed(time.Time{}, i, changed[k], what, ""))
	}
	if err := d.engine.Schedule(now); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for k, i := range idx {
		d.state.Dirs[i] = changed[k]
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
	return linkemu.TimedChange{At: at, Dir: dir, Config: dirConfig(to), What: what, Tag: tag, Ref: d.nextRef}
}

// TimelineRequest starts a timeline: Changes at their times from Start,
// under Tag, which ends it.
type TimelineRequest struct {
	Tag     string                 `json:"tag"`
	Start   time.Time              `json:"start"`
	Changes []scenario.TimedChange `json:"changes"`
}

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
	resolved, err := topology.Resolve(d.state.Dirs, req.Changes)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	before := map[int]topology.Direction{}
	var timed []linkemu.TimedChange
	for _, c := range resolved {
		if _, ok := before[c.Dir]; !ok {
			before[c.Dir] = d.state.Dirs[c.Dir]
		}
		to := topology.Direction{Name: d.state.Dirs[c.Dir].Name, Config: c.Config}
		timed = append(timed, d.timed(req.Start.Add(c.At), c.Dir, to, c.What, req.Tag))
	}
	if err := d.engine.Schedule(timed); err != nil {
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
	for _, i := range slices.Sorted(maps.Keys(before)) {
		back = append(back, d.timed(time.Time{}, i, before[i], "end of "+req.Tag+": "+results.TimelineEnd, ""))
		d.state.Dirs[i] = before[i]
	}
	if err := d.engine.Schedule(back); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// pendingChange is a change given to the engine and not yet recorded: the
// settings it brings, and when it is due (zero: at once).
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
		if p, ok := d.pending[a.Ref]; ok {
			d.state.Dirs[a.Dir] = p.to
			delete(d.pending, a.Ref)
		}
		name := d.state.Dirs[a.Dir].Name
		n := len(d.state.Changes)
		if last := n - 1; n > 0 && d.state.Changes[last].What == a.What && d.state.Changes[last].T.Equal(a.At.UTC()) {
			d.state.Changes[last].Dirs = append(d.state.Changes[last].Dirs, name)
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
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("reading the answer of the engine of %q: %w", name, err)
	}
	return nil
}
