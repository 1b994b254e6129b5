package linkemu

import (
	"fmt"
	"slices"
)

// PathChange gives the ordered pair of ports From -> To a new path while
// the engine runs: Dirs, indexes into Config.Dirs in crossing order (empty
// forwards directly), as Config.Paths does at the start. Packets already
// on their way keep the path they started on; the next one read takes the
// new one. A path must run on the thread that reads From: its directions
// must share a group of Config.Joined with those of From's paths, or be
// on one of From's paths, and To must be the end of a path of that thread.
type PathChange struct {
	From, To int
	Dirs     []int
}

// checkPath checks that path, for the pair of ports src -> dst, joins two
// different ports of nPorts through directions of nDirs.
func checkPath(src, dst int, path []int, nPorts, nDirs int) error {
	if src < 0 || src >= nPorts || dst < 0 || dst >= nPorts || src == dst {
		return fmt.Errorf("linkemu: path %v: no such pair of ports", [2]int{src, dst})
	}
	for _, d := range path {
		if d < 0 || d >= nDirs {
			return fmt.Errorf("linkemu: path %v: no direction %d", [2]int{src, dst}, d)
		}
	}
	return nil
}

// pathTable is the model's paths: the directions each crosses, in order,
// with its ends, and the path each ordered pair of ports takes now.
// Packets in flight hold the index of the path they started on, so a
// path, once added, stays: a change of path adds one, unless the pair
// took that same path before (a link that goes down and up again moves
// its pairs between the same two paths as often as it does).
type pathTable struct {
	nPorts int
	of     []int32   // [src*nPorts+dst] -> index into dirs, -1 if none
	dirs   [][]int32 // direction indexes
	dst    []int32   // destination port of each path
	src    []int32   // source port of each path, -1 for a local one
	local  []int32   // per port, an empty path: packets the engine makes for it
	// known finds a pair's earlier paths by their ends and directions;
	// only set reads it, never the packets.
	known map[string]int32
}

// init makes the table of nPorts ports with no path but the local ones.
func (t *pathTable) init(nPorts int) {
	*t = pathTable{nPorts: nPorts, of: make([]int32, nPorts*nPorts), local: make([]int32, nPorts)}
	for i := range t.of {
		t.of[i] = -1
	}
	for port := range nPorts {
		t.local[port] = t.add(-1, port, nil)
	}
}

// set makes path (direction indexes, in crossing order) the path of
// packets from port src to port dst read from now on.
func (t *pathTable) set(src, dst int, path []int) {
	key := fmt.Sprint(src, dst, path)
	if i, ok := t.known[key]; ok {
		t.of[src*t.nPorts+dst] = i
		return
	}
	p := make([]int32, len(path))
	for j, d := range path {
		p[j] = int32(d)
	}
	i := t.add(src, dst, p)
	if t.known == nil {
		t.known = map[string]int32{}
	}
	t.known[key] = i
	t.of[src*t.nPorts+dst] = i
}

// add adds a path from src (-1: the engine) to dst and returns its index.
func (t *pathTable) add(src, dst int, dirs []int32) int32 {
	t.dirs = append(t.dirs, dirs)
	t.dst = append(t.dst, int32(dst))
	t.src = append(t.src, int32(src))
	return int32(len(t.dirs) - 1)
}

// localPath checks a path change and puts it in the numbering of the
// shard that reads its source port, which it returns.
func (e *Engine) localPath(pc PathChange) (*PathChange, int, error) {
	if err := checkPath(pc.From, pc.To, pc.Dirs, e.nPorts, len(e.dirAt)); err != nil {
		return nil, 0, err
	}
	k := e.readBy[pc.From]
	to, ok := e.localPort[k][pc.To]
	if !ok {
		return nil, 0, fmt.Errorf("linkemu: path %v: port %d is the end of no path of port %d's thread: give the pair a path in Config.Paths",
			[2]int{pc.From, pc.To}, pc.To, pc.From)
	}
	local := &PathChange{From: e.localPort[k][pc.From], To: to, Dirs: make([]int, len(pc.Dirs))}
	for j, d := range pc.Dirs {
		if e.dirAt[d].shard != k {
			return nil, 0, fmt.Errorf("linkemu: path %v: direction %d runs on another thread than port %d: list it in Config.Joined with the directions of the port's paths",
				[2]int{pc.From, pc.To}, d, pc.From)
		}
		local.Dirs[j] = e.dirAt[d].index
	}
	return local, k, nil
}

// globalPath is a copy of shard s's path change pc in the Engine's
// numbering.
func (e *Engine) globalPath(s *shard, pc *PathChange) *PathChange {
	out := &PathChange{From: pc.From, To: pc.To, Dirs: slices.Clone(pc.Dirs)}
	if s.globalDir == nil {
		return out
	}
	out.From, out.To = s.globalPort[pc.From], s.globalPort[pc.To]
	for j, d := range out.Dirs {
		out.Dirs[j] = s.globalDir[d]
	}
	return out
}
