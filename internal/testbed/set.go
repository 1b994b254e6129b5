package testbed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/backend"
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

// Select finds the directions a selector names: a direction as testbed
// status lists it ("a->b", "site cern up"), both directions of a link
// ("a<->b") or of a site's access ("site cern").
func Select(dirs []topology.Direction, selector string) ([]int, error) {
	var want []string
	switch a, b, ok := strings.Cut(selector, "<->"); {
	case ok:
		want = []string{a + "->" + b, b + "->" + a}
	case strings.HasPrefix(selector, "site ") && !strings.HasSuffix(selector, " up") && !strings.HasSuffix(selector, " down"):
		want = []string{selector + " up", selector + " down"}
	default:
		want = []string{selector}
	}
	var out []int
	for _, w := range want {
		i := slices.IndexFunc(dirs, func(d topology.Direction) bool { return d.Name == w })
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

// setDirections applies a SetRequest to the engine, between two packets,
// and records the new settings in the test-bed's state.
func (d *daemon) setDirections(w http.ResponseWriter, r *http.Request) {
	var req SetRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	d.setMu.Lock()
	defer d.setMu.Unlock()
	idx, err := Select(d.state.Dirs, req.Select)
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
	for k, i := range idx {
		if err := d.engine.Set(i, dirConfig(changed[k])); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d.state.Dirs[i] = changed[k]
	}
	log.Printf("set %s: %s", req.Select, strings.Join(req.Settings, " "))
	c := backend.LinkChange{T: time.Now().UTC(), What: req.Select + ": " + strings.Join(req.Settings, " ")}
	for _, ch := range changed {
		c.Dirs = append(c.Dirs, ch.Name)
	}
	d.state.Changes = append(d.state.Changes, c)
	d.state.Changes = d.state.Changes[max(len(d.state.Changes)-maxChanges, 0):]
	if err := writeState(d.state); err != nil {
		log.Printf("recording the change: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(changed)
}

// Set changes link directions of running test-bed name and returns their
// new settings.
func Set(name string, req SetRequest) ([]topology.Direction, error) {
	if daemonPID(name) == 0 {
		if _, err := ReadState(name); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("test-bed %q is not running (its daemon is gone): wanlab testbed down %s", name, name)
	}
	body, _ := json.Marshal(req)
	resp, err := NewStatsReader(name).client.Post("http://engine/directions", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("asking the engine of %q to change links: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("test-bed %q: %s", name, strings.TrimSpace(string(msg)))
	}
	var out []topology.Direction
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("reading the changed links of %q: %w", name, err)
	}
	return out, nil
}
