package scenario

import (
	"cmp"

	"github.com/wanlab/wanlab/internal/routing"
)

// pathKey is what routing compares paths by: their cost under the
// metric, then their number of directions.
type pathKey struct {
	cost int64
	dirs int
}

func (k pathKey) compare(o pathKey) int {
	return cmp.Or(cmp.Compare(k.cost, o.cost), cmp.Compare(k.dirs, o.dirs))
}

// paths routes every routed pair of hosts (those neither a link, nor a
// site's LAN, nor a route joins) on the graph, as the topology will, and
// refuses at hosts.h a path past MaxPathDirs and a host whose way out
// to some peer would be chosen by file order alone: it leaves through two
// exits (links to routers, its site) at equal cost and directions.
//
// A host's best path to a peer leaves by one of its exits and goes on by
// the best path from the router (or core) the exit reaches, which
// forwards for every host alike: so the paths are found once from each
// node an exit reaches, not once per host and exit.
func (v *graphChecker) paths() {
	metric, err := routing.ParseMetric(v.tb.Routing)
	if err != nil {
		return // said at routing:
	}
	fixed := map[[2]string]bool{}
	for _, r := range v.tb.Routes {
		fixed[[2]string{r.From, r.To}] = true
	}
	routed := func(a, b Host) bool {
		_, linked := v.linkOf[pairKey(a.Name, b.Name)]
		return a.Name != b.Name && !linked && (a.Site == "" || a.Site != b.Site) && !fixed[[2]string{a.Name, b.Name}]
	}
	from := map[int][]pathKey{} // the paths from each node an exit reaches
	for i, h := range v.tb.Hosts {
		xs := exits(&v.g, len(v.tb.Routers)+i)
		for _, x := range xs {
			if from[x.node] == nil {
				from[x.node] = v.keys(x.node, v.g.From(x.node, metric, nil), metric)
			}
		}
		long, tied := false, false
		for j, b := range v.tb.Hosts {
			if !routed(h, b) || long && tied {
				continue
			}
			best, by := bestExits(xs, from, len(v.tb.Routers)+j, metric)
			if best.dirs > MaxPathDirs && !long {
				v.fail("hosts."+h.Name, "the path from %s to %s crosses %d directions: at most %d (a packet's TTL must last it): give a shorter route (routes:) or links that shorten it", h.Name, b.Name, best.dirs, MaxPathDirs)
				long = true
			}
			if len(by) > 1 && !tied {
				v.fail("hosts."+h.Name, "%s reaches %s through %s and %s at equal cost: give routes: or different delays", h.Name, b.Name, by[0], by[1])
				tied = true
			}
		}
	}
}

// bestExits is the key of the best path to node dst by exits xs, each
// going on by the paths from the node it reaches (from), and the exits
// (routers, sites) that give it: more than one is a tie. dirs is -1 if
// none reaches dst.
func bestExits(xs []exit, from map[int][]pathKey, dst int, metric routing.Metric) (best pathKey, by []string) {
	best.dirs = -1
	for _, x := range xs {
		rest := from[x.node][dst]
		if rest.dirs < 0 {
			continue
		}
		k := pathKey{rest.cost + x.delay, rest.dirs + 1}
		if metric == routing.Hops {
			k.cost = int64(k.dirs)
		}
		switch c := k.compare(best); {
		case best.dirs < 0 || c < 0:
			best, by = k, []string{cmp.Or(x.site, x.to)}
		case c == 0:
			by = append(by, cmp.Or(x.site, x.to))
		}
	}
	return best, by
}

// keys is the key of the path from src to every node in pred (From's
// result): dirs -1 for a node it does not reach.
func (v *graphChecker) keys(src int, pred []int32, metric routing.Metric) []pathKey {
	out := make([]pathKey, len(pred))
	done := make([]bool, len(pred))
	var chain []int
	for n := range pred {
		// Walk up to a node done (or the root), then fill in on the way back.
		for m := n; !done[m]; {
			chain = append(chain, m)
			if pred[m] < 0 {
				break
			}
			m = int(v.g.Edges[pred[m]].From)
		}
		for len(chain) > 0 {
			m := chain[len(chain)-1]
			chain = chain[:len(chain)-1]
			switch {
			case done[m]:
			case m == src:
			case pred[m] < 0:
				out[m] = pathKey{dirs: -1}
			default:
				e := v.g.Edges[pred[m]]
				k := out[e.From]
				if k.dirs >= 0 && e.Dir >= 0 {
					k.dirs++
					k.cost += e.Delay
					if metric == routing.Hops {
						k.cost = int64(k.dirs)
					}
				}
				out[m] = k
			}
			done[m] = true
		}
	}
	return out
}
