package testbed

import (
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/topology"
)

// rerouteAfter routes the pairs that the test-bed's routing routes again,
// around the directions down then, the test-bed's reroute delay from now
// (at once for none), after the change what made a direction go down or
// come back up; never if the test-bed never reroutes. setMu is held.
func (d *daemon) rerouteAfter(what string) {
	switch {
	case d.rerouteDelay < 0:
	case d.rerouteDelay == 0:
		d.rerouteNow(what)
	default:
		time.AfterFunc(d.rerouteDelay, func() {
			d.setMu.Lock()
			defer d.setMu.Unlock()
			if d.stopping.Load() {
				return
			}
			d.rerouteNow(what)
			if err := writeState(d.state); err != nil {
				log.Printf("recording the new paths: %v", err)
			}
		})
	}
}

// rerouteNow routes the routed pairs again around the directions down now
// and gives the engine their new paths, at once. The topology (and so the
// state, which shares its paths) shows them at once, as testbed set shows
// new settings; the engine's record of each is applied again when it is
// made (recordApplied), which changes nothing then. setMu is held.
func (d *daemon) rerouteNow(what string) {
	down := make([]bool, len(d.state.Dirs))
	for i, dir := range d.state.Dirs {
		down[i] = dir.Config.Down
	}
	changes := d.topo.Reroute(down)
	d.sharePaths()
	if len(changes) == 0 {
		return
	}
	timed := make([]linkemu.TimedChange, 0, len(changes))
	for _, c := range changes {
		timed = append(timed, d.timedPath(time.Time{}, c, "reroute after "+what, ""))
	}
	if err := d.schedule(timed); err != nil {
		// The engine keeps the old paths, though the state shows the new.
		log.Printf("rerouting after %s: the engine keeps the old paths: %v", what, err)
		return
	}
	log.Printf("reroute after %s: %d paths change", what, len(changes))
}

// sharePaths makes the state show the topology's directions and paths,
// which it shares (and so shows already, unless the topology made new
// slices of them); setMu is held.
func (d *daemon) sharePaths() {
	d.state.Dirs, d.state.Paths = d.topo.Dirs, d.topo.Paths
}

// timedPath is a new path for the engine, recorded in the test-bed's state
// once the engine has made it; setMu is held.
func (d *daemon) timedPath(at time.Time, c topology.PathChange, what, tag string) linkemu.TimedChange {
	if d.pending == nil {
		d.pending = map[int]pendingChange{}
	}
	d.nextRef++
	d.pending[d.nextRef] = pendingChange{due: at}
	return linkemu.TimedChange{At: at, Dir: -1, Path: enginePaths([]topology.PathChange{c})[0], What: what, Tag: tag, Ref: d.nextRef}
}

// applyPath gives the topology, and so the state, the new path the engine
// has made, and returns the pair's name ("a -> b"); setMu is held.
func (d *daemon) applyPath(p *linkemu.PathChange) (string, error) {
	c := topologyPath(p)
	err := d.topo.ApplyPaths([]topology.PathChange{c})
	d.sharePaths()
	if err != nil {
		return "", err
	}
	return d.topo.Hosts[c.From].Name + " -> " + d.topo.Hosts[c.To].Name, nil
}

// maxChangeNames bounds the paths one recorded reroute lists (it can move
// a path per ordered pair of hosts); the rest are counted in a last
// "and N more".
const maxChangeNames = 32

// addName adds name to the paths of a recorded reroute, counting it in a
// last "and N more" past maxChangeNames.
func addName(names []string, name string) []string {
	switch {
	case len(names) < maxChangeNames:
		return append(names, name)
	case len(names) == maxChangeNames:
		return append(names, moreText(1))
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(names[maxChangeNames], "and "), " more"))
	names[maxChangeNames] = moreText(n + 1)
	return names[:maxChangeNames+1]
}

func moreText(n int) string { return fmt.Sprintf("and %d more", n) }
