package analysis

// A shared bottleneck: a full link direction that several paths of a
// step's traffic cross, such as a backbone direction between routers.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// SharedBottleneck is the kind of the finding that names a full direction
// crossed by several paths of a workload's traffic.
const SharedBottleneck = "shared_bottleneck"

// maxNamedPaths bounds the paths a sentence names; the rest are counted.
const maxNamedPaths = 6

// topologies keeps the topology of the last test-bed resolved: a run's
// workloads share one test-bed, and resolving it is not free.
var topologies struct {
	sync.Mutex
	tb   *scenario.Testbed
	topo *topology.Topology
}

// topologyOf is tb's topology, nil if tb is nil or does not resolve.
func topologyOf(tb *scenario.Testbed) *topology.Topology {
	if tb == nil {
		return nil
	}
	topologies.Lock()
	defer topologies.Unlock()
	if topologies.tb != tb {
		t, err := topology.New(tb)
		if err != nil {
			t = nil
		}
		topologies.tb, topologies.topo = tb, t
	}
	return topologies.topo
}

// stepPairs are the ordered pairs of hosts a step's data goes between:
// its path (kind.Directed), every pair of its peers (kind.Peered), or
// from each of its servers to each of its clients (kind.Ended).
func stepPairs(s Step) [][2]string {
	var out [][2]string
	add := func(from, to string) {
		if p := [2]string{from, to}; from != to && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if p, ok := spec[kind.Peered](s); ok {
		for _, a := range p.Peers() {
			for _, b := range p.Peers() {
				add(a, b)
			}
		}
		return out
	}
	if d, ok := spec[kind.Directed](s); ok {
		from, to := d.Path()
		add(from, to)
		return out
	}
	if e, ok := spec[kind.Ended](s); ok {
		servers, clients, _ := e.Ends()
		for _, a := range servers {
			for _, b := range clients {
				add(a, b)
			}
		}
	}
	return out
}

// sharedBy are the paths of step s's traffic ("a->b", in the step's
// order) that cross direction dir, when there are two or more of them;
// nil otherwise, or when the test-bed is not known.
func sharedBy(w Workload, s Step, dir string) []string {
	t := topologyOf(w.Testbed)
	if t == nil || dir == "" {
		return nil
	}
	var out []string
	for _, pair := range stepPairs(s) {
		if p, ok := t.Path(pair[0], pair[1]); ok && slices.Contains(p.Via, dir) {
			out = append(out, pair[0]+"->"+pair[1])
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// pathList names paths, the first maxNamedPaths of them and how many more.
func pathList(paths []string) string {
	if len(paths) <= maxNamedPaths {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:maxNamedPaths], ", "), len(paths)-maxNamedPaths)
}

// shareLinks names, in a step's resources, the full link directions that
// several paths of the step's traffic cross: "link X (shared by a->b,
// c->d)". Resources of other kinds, and links not full, stay as they are.
func shareLinks(w Workload, s Step, res []resource, o Options) {
	for i, r := range res {
		if r.dir == "" || r.util < o.Saturated {
			continue
		}
		if paths := sharedBy(w, s, r.dir); paths != nil {
			res[i].what += " (shared by " + pathList(paths) + ")"
		}
	}
}

// sharedLoad is one full shared direction of a workload: the steps it
// was full in, and the paths that loaded it then.
type sharedLoad struct {
	dir      string
	steps    []string
	paths    []string
	util     float64 // the most it was busy, %
	busiest  string  // the step where it was
	fullTime float64 // the share of that step it was full in, %
	limiting int     // steps whose verdict it was (the busiest link, network)
}

// maxSharedFindings bounds the shared directions a workload's findings
// name one by one; the rest are named in the last.
const maxSharedFindings = 6

// sharedBottlenecks finds, per full direction of a workload's steps that
// several of a step's paths cross, which paths loaded it in which steps:
// a bottleneck in the middle of the network, shared by paths that need
// not share an end. Every full direction counts, not only each step's
// busiest, so that a backbone direction full beside a fuller access link
// is named too.
func sharedBottlenecks(w Workload, ws WorkloadSteps, o Options) []Finding {
	var loads []*sharedLoad
	for i, s := range w.Steps {
		if s.Status == "failed" || s.TestbedLimited {
			continue
		}
		busiest, _ := results.BusiestLink(s.Metrics)
		for _, dir := range fullLinks(s.Metrics, o.Saturated) {
			paths := sharedBy(w, s, dir)
			if paths == nil {
				continue
			}
			j := slices.IndexFunc(loads, func(l *sharedLoad) bool { return l.dir == dir })
			if j < 0 {
				loads = append(loads, &sharedLoad{dir: dir})
				j = len(loads) - 1
			}
			l := loads[j]
			l.steps = append(l.steps, stepName(s))
			for _, p := range paths {
				if !slices.Contains(l.paths, p) {
					l.paths = append(l.paths, p)
				}
			}
			if util := s.Metrics.Value(results.LinkUtilizationPct.About(dir)); util > l.util || l.busiest == "" {
				l.util, l.busiest, l.fullTime = util, stepName(s), s.Metrics.Value(results.LinkFullPct.About(dir))
			}
			if dir == busiest && i < len(ws.Steps) && ws.Steps[i].Bottleneck == Network {
				l.limiting++
			}
		}
	}
	t := topologyOf(w.Testbed)
	var out []Finding
	for k, l := range loads {
		if k == maxSharedFindings {
			var rest []string
			for _, r := range loads[k:] {
				rest = append(rest, r.dir)
			}
			out[k-1].Text += fmt.Sprintf(" Full and shared as well: %s.", pathList(rest))
			break
		}
		what := "Link"
		if backbone(t, l.dir) {
			what = "Backbone link"
		}
		how := fmt.Sprintf("%.0f%% busy at most, in %s", l.util, l.busiest)
		if l.util < o.Saturated {
			how = fmt.Sprintf("in bursts: %.0f%% busy on average at most, in %s, but at least %d%% busy for %.0f%% of it", l.util, l.busiest, results.FullUtilizationPct, l.fullTime)
		}
		text := fmt.Sprintf("%s %s, shared by %d paths of the workload's traffic, was full (%s): %s loaded it during %s.",
			what, l.dir, len(l.paths), how, pathList(l.paths), stepList(l.steps))
		if l.limiting > 0 {
			text += fmt.Sprintf(" It was the bottleneck of those paths in %s.", plural(float64(l.limiting), "step"))
		}
		out = append(out, Finding{Kind: SharedBottleneck, Workload: w.Name, Bottleneck: Network, Text: text,
			Values: map[string]float64{"utilization_pct": l.util, "full_time_pct": l.fullTime, "paths": float64(len(l.paths)), "steps": float64(len(l.steps)), "limiting_steps": float64(l.limiting)}})
	}
	return out
}

// fullLinks are the link directions of m full over the step: at least
// saturated % busy on average, or full (results.LinkFullPct) for at least
// fullShare of its intervals, which a direction that bursts of traffic
// fill is; the busiest first (by name among equals).
func fullLinks(m results.Metrics, saturated float64) []string {
	var out []string
	for _, f := range m.Figures() {
		if f.Subject == "" || f.Leg != "" || f.Phase != "" {
			continue
		}
		if (f.Family == results.LinkUtilizationPct && m.Value(f) >= saturated) ||
			(f.Family == results.LinkFullPct && m.Value(f) >= 100*fullShare && m.Value(results.LinkUtilizationPct.About(f.Subject)) < saturated) {
			out = append(out, f.Subject)
		}
	}
	util := func(d string) float64 { return m.Value(results.LinkUtilizationPct.About(d)) }
	slices.SortFunc(out, func(a, b string) int {
		if c := cmp.Compare(util(b), util(a)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return out
}

// fullShare is the share of a step's intervals a direction must be full
// in for the step to count it full, whatever its mean.
const fullShare = 0.25

// backbone says whether direction dir of t joins two routers.
func backbone(t *topology.Topology, dir string) bool {
	if t == nil {
		return false
	}
	d, ok := t.Direction(dir)
	if !ok {
		return false
	}
	from, to := false, false
	for _, r := range t.Routers {
		from, to = from || r.Name == d.From, to || r.Name == d.To
	}
	return from && to
}

// stepName is how a finding names a step: its label, or its number.
func stepName(s Step) string {
	if s.Label != "" {
		return "step " + s.Label
	}
	return fmt.Sprintf("step %d", s.Index+1)
}

// stepList names steps, the first maxNamedPaths of them and how many more.
func stepList(steps []string) string {
	if len(steps) == 1 {
		return steps[0]
	}
	return pathList(steps)
}
