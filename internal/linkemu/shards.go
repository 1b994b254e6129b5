package linkemu

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"
)

// Engine forwards packets between ports through the link model. Create it
// with New, run it with Run and stop it with Stop; the other methods may be
// called from any goroutine at any time. It runs up to Config.Threads
// shards, each a thread of its own that reads some ports and models the
// directions their packets cross, and delivers to whichever port a path
// ends at. Hosts whose paths share no direction, directly or through other
// hosts, need nothing from each other and go to different shards; with
// more threads than such groups, even the two directions of one link do.
type Engine struct {
	seed   uint64
	shards []*shard
	dirAt  []place // each direction's shard and index there
	nPorts int
	// readBy is the shard that reads each port, and localPort each
	// shard's index of the ports it reads or writes.
	readBy    []int
	localPort []map[int]int
}

// place is where a direction lives: its shard and its index there.
type place struct{ shard, index int }

// New checks the configuration and prepares an engine. It takes ownership
// of nothing: the caller closes the port fds after Run returns.
func New(cfg Config) (*Engine, error) {
	if err := checkGraph(cfg); err != nil {
		return nil, err
	}
	bins := shardGroups(len(cfg.Ports), len(cfg.Dirs), cfg.Paths, cfg.Joined, max(1, cfg.Threads))
	e := &Engine{seed: cfg.Seed, dirAt: make([]place, len(cfg.Dirs)), nPorts: len(cfg.Ports),
		readBy: make([]int, len(cfg.Ports))}
	readBy := e.readBy
	for k, bin := range bins {
		for _, p := range bin.ports {
			readBy[p] = k
		}
		for i, d := range bin.dirs {
			e.dirAt[d] = place{k, i}
		}
	}
	// Each shard's ports: those it reads, then those its paths end at.
	portsOf := make([][]int, len(bins))
	localPort := make([]map[int]int, len(bins))
	e.localPort = localPort
	for k, bin := range bins {
		localPort[k] = map[int]int{}
		for _, p := range bin.ports {
			localPort[k][p] = len(portsOf[k])
			portsOf[k] = append(portsOf[k], p)
		}
	}
	pairs := slices.SortedFunc(maps.Keys(cfg.Paths), func(a, b [2]int) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	for _, pair := range pairs {
		k := readBy[pair[0]]
		if _, ok := localPort[k][pair[1]]; !ok {
			localPort[k][pair[1]] = len(portsOf[k])
			portsOf[k] = append(portsOf[k], pair[1])
		}
	}
	paths := make([]map[[2]int][]int, len(bins))
	for pair, path := range cfg.Paths {
		k := readBy[pair[0]]
		local := make([]int, len(path))
		for j, d := range path {
			local[j] = e.dirAt[d].index
		}
		if paths[k] == nil {
			paths[k] = map[[2]int][]int{}
		}
		paths[k][[2]int{localPort[k][pair[0]], localPort[k][pair[1]]}] = local
	}
	epoch := time.Now()
	for k, bin := range bins {
		sc := cfg
		sc.Ports, sc.Dirs, sc.Paths = nil, nil, paths[k]
		if k > 0 {
			sc.Seed = cfg.Seed + uint64(k)*0x9e3779b97f4a7c15 // loss draws of their own
			sc.KeepCPUsAwake = false                          // one request holds for the machine
		}
		sc.PoolBytes = max(1, poolBytes(cfg)/int64(len(bins))) // the cap is the engine's
		for i, p := range portsOf[k] {
			port := cfg.Ports[p]
			port.writeOnly = i >= len(bin.ports)
			sc.Ports = append(sc.Ports, port)
		}
		for _, d := range bin.dirs {
			sc.Dirs = append(sc.Dirs, seedCross(cfg.Seed, d, cfg.Dirs[d]))
		}
		s, err := newShard(sc)
		if err != nil {
			for _, done := range e.shards {
				done.close()
			}
			return nil, err
		}
		s.epoch = epoch
		if len(bins) > 1 {
			s.globalDir, s.globalPort = bin.dirs, portsOf[k]
		}
		e.shards = append(e.shards, s)
	}
	return e, nil
}

// checkGraph checks what the grouping relies on: ports' addresses, the
// paths' ports and directions, and the joined groups' directions.
func checkGraph(cfg Config) error {
	if len(cfg.Ports) == 0 {
		return errors.New("linkemu: no ports")
	}
	seen := map[netip.Addr]string{}
	for _, p := range cfg.Ports {
		addrs, err := p.addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if other, dup := seen[a]; dup {
				return fmt.Errorf("linkemu: port %s: address %v used twice (also by %s)", p.Name, a, other)
			}
			seen[a] = p.Name
		}
	}
	for pair, path := range cfg.Paths {
		if err := checkPath(pair[0], pair[1], path, len(cfg.Ports), len(cfg.Dirs)); err != nil {
			return err
		}
	}
	for i, group := range cfg.Joined {
		for _, d := range group {
			if d < 0 || d >= len(cfg.Dirs) {
				return fmt.Errorf("linkemu: joined group %d: no direction %d", i, d)
			}
		}
	}
	return nil
}

// shardGroups is what each of at most threads shards reads and models:
// whole groups of hosts when there are enough of them to go round, so
// that a host's packets both ways are on one thread; groups of the ports
// that send into each direction when there are not.
func shardGroups(nPorts, nDirs int, paths map[[2]int][]int, joined [][]int, threads int) []group {
	groups := portGroups(nPorts, nDirs, paths, joined, true)
	if len(groups) < threads {
		groups = portGroups(nPorts, nDirs, paths, joined, false)
	}
	return spread(groups, threads)
}

// group is ports a shard reads and the directions their packets cross, in
// index order.
type group struct{ ports, dirs []int }

// portGroups joins ports whose packets cross a common direction, with the
// directions, and the directions of each joined group, as if one path
// crossed them all; whole also joins the two ends of every path, so that
// a host's packets both ways are on one thread. Directions on no path
// (nor joined to one) go with the first group: they carry nothing but
// their cross traffic.
func portGroups(nPorts, nDirs int, paths map[[2]int][]int, joined [][]int, whole bool) []group {
	parent := make([]int, nPorts+nDirs) // ports, then directions
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	join := func(a, b int) { parent[find(a)] = find(b) }
	for pair, path := range paths {
		if whole {
			join(pair[0], pair[1])
		}
		for _, d := range path {
			join(pair[0], nPorts+d)
		}
	}
	for _, dirs := range joined {
		for _, d := range dirs {
			join(nPorts+dirs[0], nPorts+d)
		}
	}
	hasPort := make([]bool, len(parent))
	for p := range nPorts {
		hasPort[find(p)] = true
	}
	for d := range nDirs {
		if r := find(nPorts + d); !hasPort[r] {
			join(0, nPorts+d)
			hasPort[r] = true // the root of port 0's group now
		}
	}
	byRoot := map[int]int{}
	var groups []group
	for i := range parent {
		r := find(i)
		g, ok := byRoot[r]
		if !ok {
			g = len(groups)
			byRoot[r] = g
			groups = append(groups, group{})
		}
		if i < nPorts {
			groups[g].ports = append(groups[g].ports, i)
		} else {
			groups[g].dirs = append(groups[g].dirs, i-nPorts)
		}
	}
	return groups
}

// spread deals groups into at most n bins, the largest (by directions,
// then ports) first into the least loaded, and keeps each bin's ports and
// directions in index order.
func spread(groups []group, n int) []group {
	weight := func(g group) int { return 4*len(g.dirs) + len(g.ports) }
	order := slices.Clone(groups)
	slices.SortStableFunc(order, func(a, b group) int { return cmp.Compare(weight(b), weight(a)) })
	bins := make([]group, min(n, len(groups)))
	load := make([]int, len(bins))
	for _, g := range order {
		k := slices.Index(load, slices.Min(load))
		bins[k].ports = append(bins[k].ports, g.ports...)
		bins[k].dirs = append(bins[k].dirs, g.dirs...)
		load[k] += weight(g)
	}
	for k := range bins {
		slices.Sort(bins[k].ports)
		slices.Sort(bins[k].dirs)
	}
	// The bin with the first port first, so that one bin is the whole engine.
	slices.SortStableFunc(bins, func(a, b group) int { return cmp.Compare(a.ports[0], b.ports[0]) })
	return bins
}

// seedCross gives direction d's cross traffic its random source from the
// engine's seed, as one shard would: the same seed, the same traffic,
// however the directions are spread.
func seedCross(seed uint64, d int, cfg DirConfig) DirConfig {
	if cfg.Cross != nil && cfg.Cross.Seed == 0 {
		c := *cfg.Cross
		c.Seed = seed + uint64(d) + 1
		cfg.Cross = &c
	}
	return cfg
}

// Run forwards packets until Stop is called, each shard on a thread of its
// own; if one fails, it stops the others and returns its error.
func (e *Engine) Run() error {
	errs := make(chan error, len(e.shards))
	for _, s := range e.shards {
		go func() { errs <- s.Run() }()
	}
	var first error
	for range e.shards {
		if err := <-errs; err != nil && first == nil {
			first = err
			e.Stop()
		}
	}
	return first
}

// Stop makes Run return soon. It is safe to call more than once and from any goroutine.
func (e *Engine) Stop() {
	for _, s := range e.shards {
		s.Stop()
	}
}

// Set gives direction i new settings from its next packet on: packets
// already admitted keep their release times, so nothing queued is dropped
// or reordered by the change; the queue limit and loss apply to arrivals.
func (e *Engine) Set(i int, cfg DirConfig) error {
	return e.Schedule([]TimedChange{{Dir: i, Config: cfg, What: "set"}})
}

// Schedule queues changes to take effect at their times (a zero or past
// time is now), each between two packets, as Set does: new settings for a
// direction or, with Path, a new path for a pair of ports, which Schedule
// routes to the thread that reads the pair's source. The engine wakes for
// each on its own clock, so a change is as punctual as a packet's release.
// Either all the changes are queued or, with an error, none.
func (e *Engine) Schedule(changes []TimedChange) error {
	per := make([][]TimedChange, len(e.shards))
	for _, c := range changes {
		if c.Path != nil {
			local, k, err := e.localPath(*c.Path)
			if err != nil {
				return err
			}
			c.Dir, c.Config, c.Path = -1, DirConfig{}, local
			per[k] = append(per[k], c)
			continue
		}
		if c.Dir < 0 || c.Dir >= len(e.dirAt) {
			return fmt.Errorf("linkemu: no direction %d", c.Dir)
		}
		if err := c.Config.check(); err != nil {
			return err
		}
		at := e.dirAt[c.Dir]
		local := c
		local.Dir, local.Config = at.index, seedCross(e.seed, c.Dir, c.Config)
		per[at.shard] = append(per[at.shard], local)
	}
	for k, todo := range per {
		if len(todo) > 0 {
			e.shards[k].schedule(todo)
		}
	}
	return nil
}

// Cancel drops the changes with tag that have not taken effect yet and says
// how many there were.
func (e *Engine) Cancel(tag string) int {
	n := 0
	for _, s := range e.shards {
		n += s.Cancel(tag)
	}
	return n
}

// Applied returns the changes made since the last call, oldest first.
func (e *Engine) Applied() []Applied {
	var out []Applied
	for _, s := range e.shards {
		for _, a := range s.Applied() {
			if a.Path != nil {
				a.Path = e.globalPath(s, a.Path)
			} else {
				a.Dir = e.globalDir(s, a.Dir)
			}
			out = append(out, a)
		}
	}
	if len(e.shards) > 1 {
		slices.SortStableFunc(out, func(a, b Applied) int { return a.At.Compare(b.At) })
	}
	return out
}

// globalDir is the engine's index of shard s's direction i.
func (e *Engine) globalDir(s *shard, i int) int {
	if s.globalDir == nil {
		return i
	}
	return s.globalDir[i]
}

// Settings are the directions' current settings, in Config order.
func (e *Engine) Settings() []DirConfig {
	per := make([][]DirConfig, len(e.shards))
	for k, s := range e.shards {
		per[k] = s.Settings()
	}
	out := make([]DirConfig, len(e.dirAt))
	for d, at := range e.dirAt {
		out[d] = per[at.shard][at.index]
	}
	return out
}

// StartCapture starts capturing directions dirs, snaplen bytes of each
// packet, from their next packet on. A direction has one capture at a time.
func (e *Engine) StartCapture(dirs []int, snaplen int) (*Capture, error) {
	var c Capture
	for _, d := range dirs {
		if d < 0 || d >= len(e.dirAt) {
			return nil, fmt.Errorf("linkemu: no direction %d", d)
		}
		at := e.dirAt[d]
		k := slices.IndexFunc(c.parts, func(p capturePart) bool { return p.shard == at.shard })
		if k < 0 {
			k = len(c.parts)
			c.parts = append(c.parts, capturePart{shard: at.shard})
		}
		c.parts[k].dirs = append(c.parts[k].dirs, at.index)
	}
	if len(c.parts) == 0 {
		c.parts = append(c.parts, capturePart{})
	}
	for i := range c.parts {
		p := &c.parts[i]
		ring, err := e.shards[p.shard].startCapture(p.dirs, snaplen)
		if err != nil {
			e.StopCapture(&Capture{parts: c.parts[:i]})
			return nil, err
		}
		p.ring = ring
	}
	return &c, nil
}

// StopCapture stops capture c on the directions it was started on.
func (e *Engine) StopCapture(c *Capture) {
	for _, p := range c.parts {
		e.shards[p.shard].stopCapture(p.dirs)
	}
}

// Stats is what the engine has done so far, its shards' added up.
func (e *Engine) Stats() Stats {
	if len(e.shards) == 1 {
		s := e.shards[0].Stats()
		s.Threads = 1
		return s
	}
	per := make([]Stats, len(e.shards))
	for k, s := range e.shards {
		per[k] = s.Stats()
	}
	out := per[0]
	out.Threads = len(e.shards)
	out.Dirs = make([]DirSnapshot, len(e.dirAt))
	for d, at := range e.dirAt {
		out.Dirs[d] = per[at.shard].Dirs[at.index]
	}
	out.Ports = make([]PortSnapshot, e.nPorts)
	for k, s := range e.shards {
		for i, ps := range per[k].Ports {
			all := &out.Ports[s.globalPort[i]]
			all.Name = ps.Name
			all.RxPackets += ps.RxPackets
			all.TxPackets += ps.TxPackets
			all.Unroutable += ps.Unroutable
			all.WriteDrops += ps.WriteDrops
		}
	}
	var late, coalesce, engine, write, wake, changes latenessHist
	for k, s := range e.shards {
		late.add(&s.late)
		coalesce.add(&s.lateCoalesce)
		engine.add(&s.lateEngine)
		write.add(&s.writeTime)
		wake.add(&s.wakeLate)
		changes.add(&s.changeLate)
		if k > 0 {
			st := per[k]
			out.PoolDrops += st.PoolDrops
			out.Realtime = out.Realtime && st.Realtime
			out.InFlight += st.InFlight
			out.IO.Reads += st.IO.Reads
			out.IO.ReadBytes += st.IO.ReadBytes
			out.IO.Writes += st.IO.Writes
			out.IO.WriteBytes += st.IO.WriteBytes
			out.ICMPSent += st.ICMPSent
		}
	}
	lateCounts := late.load()
	out.Lateness, out.Coalescing, out.EngineLateness = lateCounts.summary(), coalesce.summary(), engine.summary()
	out.LatenessHistogram = lateCounts.histogram()
	out.WriteTime, out.WakeLateness, out.Changes = write.summary(), wake.summary(), changes.summary()
	return out
}
