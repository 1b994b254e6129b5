package report

// The test-bed drawn: its nodes (hosts, routers, sites) on concentric
// rings by their distance from the routers, its links, and the busiest
// direction of each step coloured by how busy it was.

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/topology"
)

// Sizes of the drawing, in SVG user units (pixels at scale 1).
const (
	nodeGap   = 56.0  // the least arc between two nodes of a ring
	ringStep  = 90.0  // the least distance between two rings
	labelRoom = 120.0 // room around the outer ring for the labels
	topoWidth = 900.0 // the widest it is shown; larger drawings are scaled down
	// minTopoWidth leaves room for the title and the legend.
	minTopoWidth = 720.0
	hotOffset    = 4.0 // how far a coloured direction is drawn beside its link
	nodeRadius   = 7.0
	// maxTopoNodes bounds the nodes drawn: past it, the drawing would be
	// too large to read, and none is made.
	maxTopoNodes = 400
)

// Kinds of node.
const (
	nodeHost   = "host"
	nodeRouter = "router"
	nodeSite   = "site"
	nodeCore   = "core"
)

// busyDir is a direction that was the busiest of some steps.
type busyDir struct {
	util  float64  // the most it was busy, % of its rate
	steps []string // the steps it was the busiest of
}

// busiestDirs are the directions that were the busiest of a step of the
// workloads, with how busy, by direction name.
func busiestDirs(workloads []analysis.Workload) map[string]*busyDir {
	out := map[string]*busyDir{}
	for _, w := range workloads {
		for _, s := range w.Steps {
			dir, util := results.BusiestLink(s.Metrics)
			if dir == "" {
				continue
			}
			b := out[dir]
			if b == nil {
				b = &busyDir{}
				out[dir] = b
			}
			b.util = math.Max(b.util, util)
			name := fmt.Sprintf("step %d", s.Index+1)
			if s.Label != "" {
				name = s.Label
			}
			b.steps = append(b.steps, w.Name+" "+name)
		}
	}
	return out
}

// topoNode is a node as drawn.
type topoNode struct {
	Name, Kind, Title string
	X, Y              float64
	// LX, LY and Anchor place its label beside it (placeLabel).
	LX, LY float64
	Anchor string
	ring   int
	angle  float64
}

// topoLine is a link between two nodes, or a coloured direction.
type topoLine struct {
	X1, Y1, X2, Y2 float64
	Title          string
	Color          string
	// Arrow is the triangle that points the way of a direction; Label
	// its utilisation, at LX, LY.
	Arrow, Label string
	LX, LY       float64
}

// legendLine is a line of the drawing's legend, at height Y.
type legendLine struct {
	Y    float64
	Text string
}

// topoView is what the drawing's template shows.
type topoView struct {
	Width, Height, ViewW, ViewH float64
	Title                       string
	Legend                      []legendLine
	Nodes                       []topoNode
	Links, Hot                  []topoLine
}

// topologySVG draws t with the busiest directions coloured, as inline SVG;
// "" when t has no nodes or more than maxTopoNodes.
func topologySVG(t *topology.Topology, busy map[string]*busyDir) (template.HTML, error) {
	nodes, at := topoNodes(t)
	if len(nodes) == 0 || len(nodes) > maxTopoNodes {
		return "", nil
	}
	edges := topoEdges(t, at)
	radius := layout(nodes, edges)
	size := 2 * (radius + labelRoom)
	v := topoView{ViewW: round(math.Max(size, minTopoWidth)), ViewH: round(size + 50), Nodes: nodes}
	v.Width = math.Min(v.ViewW, topoWidth)
	v.Height = math.Round(v.Width * v.ViewH / v.ViewW)
	shift := round((v.ViewW - size) / 2) // centred when the legend is the wider
	outer := 0
	for _, n := range v.Nodes {
		outer = max(outer, n.ring)
	}
	for i := range v.Nodes {
		v.Nodes[i].X = round(v.Nodes[i].X + shift)
		placeLabel(&v.Nodes[i], size/2+shift, size/2, v.Nodes[i].ring == outer)
	}
	nodes = v.Nodes
	for _, e := range edges {
		a, b := nodes[e[0]], nodes[e[1]]
		v.Links = append(v.Links, topoLine{X1: a.X, Y1: a.Y, X2: b.X, Y2: b.Y, Title: a.Name + " - " + b.Name})
	}
	for _, d := range t.Dirs {
		b, ok := busy[d.Name]
		i, fromOK := at[d.From]
		j, toOK := at[d.To]
		if !ok || !fromOK || !toOK || i == j {
			continue
		}
		v.Hot = append(v.Hot, hotLine(d.Name, nodes[i], nodes[j], b))
	}
	counts := map[string]int{}
	for _, n := range nodes {
		counts[n.Kind]++
	}
	v.Title = fmt.Sprintf("test-bed %s: %s, %s, %s", t.Name, plural(counts[nodeHost], "host"), plural(counts[nodeRouter], "router"), plural(counts[nodeSite], "site"))
	for i, l := range []string{"circle: host; square: router; diamond: site; grey circle: the core where sites meet.",
		"Coloured beside a link, its arrow the way it goes: the busiest direction of a step, green (idle) to red (full), with its utilisation."} {
		v.Legend = append(v.Legend, legendLine{Y: size + 16 + 16*float64(i), Text: l})
	}
	var b bytes.Buffer
	if err := topoTemplate.Execute(&b, v); err != nil {
		return "", fmt.Errorf("drawing the topology: %w", err)
	}
	return template.HTML(b.String()), nil
}

// plural is n noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// topoNodes are t's nodes in a fixed order (routers, the core, sites,
// hosts, each in the topology's order), and where each is by name.
func topoNodes(t *topology.Topology) ([]topoNode, map[string]int) {
	var nodes []topoNode
	at := map[string]int{}
	add := func(name, kind, title string) {
		if _, ok := at[name]; !ok && name != "" {
			at[name] = len(nodes)
			nodes = append(nodes, topoNode{Name: name, Kind: kind, Title: title})
		}
	}
	for _, r := range t.Routers {
		add(r.Name, nodeRouter, "router "+r.Name+" "+r.Addr)
	}
	for _, d := range t.Dirs {
		for _, n := range []string{d.From, d.To} {
			switch {
			case n == nodeCore:
				add(n, nodeCore, "the core, where sites without a router meet")
			case strings.HasPrefix(n, "site "):
				add(n, nodeSite, n)
			}
		}
	}
	for _, h := range t.Hosts {
		if h.Site != "" {
			add("site "+h.Site, nodeSite, "site "+h.Site)
		}
	}
	for _, h := range t.Hosts {
		add(h.Name, nodeHost, "host "+h.Name+" "+h.Addr)
	}
	return nodes, at
}

// topoEdges are the pairs of nodes a link joins, each once, in direction
// order, then each host in a site joined to its site (the site's LAN,
// whose directions join its hosts pairwise, is drawn as that).
func topoEdges(t *topology.Topology, at map[string]int) [][2]int {
	var edges [][2]int
	seen := map[[2]int]bool{}
	join := func(i, j int) {
		if e := [2]int{min(i, j), max(i, j)}; i != j && !seen[e] {
			seen[e] = true
			edges = append(edges, e)
		}
	}
	site := map[string]string{}
	for _, h := range t.Hosts {
		site[h.Name] = h.Site
	}
	for _, d := range t.Dirs {
		i, ok1 := at[d.From]
		j, ok2 := at[d.To]
		if ok1 && ok2 && (site[d.From] == "" || site[d.From] != site[d.To]) {
			join(i, j)
		}
	}
	for _, h := range t.Hosts {
		if j, ok := at["site "+h.Site]; ok && h.Site != "" {
			join(at[h.Name], j)
		}
	}
	return edges
}

// layout puts nodes on concentric rings by their hops from the routers
// and the core (ring 0), each ring's nodes in the order of their
// neighbours on the ring inside, nodeGap apart at least; without routers
// or core, all on one ring. It returns the outer ring's radius; the
// centre is at (radius+labelRoom, radius+labelRoom).
func layout(nodes []topoNode, edges [][2]int) float64 {
	adj := make([][]int, len(nodes))
	for _, e := range edges {
		adj[e[0]] = append(adj[e[0]], e[1])
		adj[e[1]] = append(adj[e[1]], e[0])
	}
	for i := range nodes {
		nodes[i].ring = -1
	}
	var queue []int
	for i, n := range nodes {
		if n.Kind == nodeRouter || n.Kind == nodeCore {
			nodes[i].ring = 0
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range adj[i] {
			if nodes[j].ring < 0 {
				nodes[j].ring = nodes[i].ring + 1
				queue = append(queue, j)
			}
		}
	}
	rings := 0
	for _, n := range nodes {
		rings = max(rings, n.ring+1)
	}
	for i := range nodes {
		if nodes[i].ring < 0 { // joined to no router: the outer ring
			nodes[i].ring = rings
		}
	}
	radius := 0.0
	for ring := 0; ; ring++ {
		var on []int
		for i, n := range nodes {
			if n.ring == ring {
				on = append(on, i)
			}
		}
		if len(on) == 0 {
			break
		}
		inner := func(i int) float64 { // the angle of its first neighbour inside
			for _, j := range adj[i] {
				if nodes[j].ring == ring-1 {
					return nodes[j].angle
				}
			}
			return 2 * math.Pi
		}
		slices.SortStableFunc(on, func(a, b int) int { return cmp.Compare(inner(a), inner(b)) })
		r := math.Max(radius+ringStep, float64(len(on))*nodeGap/(2*math.Pi))
		if ring == 0 {
			r = 0
			if len(on) > 1 {
				r = math.Max(ringStep*0.75, float64(len(on))*nodeGap/(2*math.Pi))
			}
		}
		// Evenly spaced, turned as a whole to lie nearest the neighbours
		// inside: the circular mean of how far each is from its own.
		turn := -math.Pi / 2
		if ring > 0 {
			var sin, cos float64
			for k, i := range on {
				d := inner(i) - 2*math.Pi*float64(k)/float64(len(on))
				sin, cos = sin+math.Sin(d), cos+math.Cos(d)
			}
			turn = math.Atan2(sin, cos)
		}
		for k, i := range on {
			a := 2*math.Pi*float64(k)/float64(len(on)) + turn
			nodes[i].angle = a
			nodes[i].X, nodes[i].Y = r*math.Cos(a), r*math.Sin(a)
		}
		radius = r
	}
	c := radius + labelRoom
	for i := range nodes {
		nodes[i].X, nodes[i].Y = round(nodes[i].X+c), round(nodes[i].Y+c)
	}
	return radius
}

// round keeps two decimals: the drawing's text stays short and stable.
func round(x float64) float64 { return math.Round(x*100) / 100 }

// placeLabel puts a node's label beside it: outward from the centre on
// the outer ring, where nothing lies beyond; below it inside, where the
// next ring's nodes lie outward.
func placeLabel(n *topoNode, cx, cy float64, outer bool) {
	dx, dy := n.X-cx, n.Y-cy
	d := math.Hypot(dx, dy)
	if d < 1 || !outer {
		n.LX, n.LY, n.Anchor = n.X, n.Y+nodeRadius+12, "middle"
		return
	}
	ux, uy := dx/d, dy/d
	n.LX, n.LY = round(n.X+ux*(nodeRadius+9)), round(n.Y+uy*(nodeRadius+9)+4)
	switch {
	case ux > 0.3:
		n.Anchor = "start"
	case ux < -0.3:
		n.Anchor = "end"
	default: // above or below it, clear of it
		n.Anchor = "middle"
		n.LX, n.LY = n.X, n.Y-nodeRadius-4
		if uy > 0 {
			n.LY = n.Y + nodeRadius + 12
		}
	}
}

// hotLine is direction name from a to b drawn beside their link, on the
// right of the way it goes, coloured by how busy it was, with an arrow.
func hotLine(name string, a, b topoNode, busy *busyDir) topoLine {
	dx, dy := b.X-a.X, b.Y-a.Y
	d := math.Max(math.Hypot(dx, dy), 1)
	ux, uy := dx/d, dy/d
	px, py := -uy*hotOffset, ux*hotOffset // to the right, y growing down
	l := topoLine{X1: round(a.X + px + ux*nodeRadius), Y1: round(a.Y + py + uy*nodeRadius),
		X2: round(b.X + px - ux*nodeRadius), Y2: round(b.Y + py - uy*nodeRadius), Color: utilColor(busy.util)}
	// The arrow at 60% of the way, 8 long.
	tx, ty := a.X+px+dx*0.6, a.Y+py+dy*0.6
	l.Arrow = fmt.Sprintf("%.2f,%.2f %.2f,%.2f %.2f,%.2f", tx+ux*4, ty+uy*4, tx-ux*4-uy*4, ty-uy*4+ux*4, tx-ux*4+uy*4, ty-uy*4-ux*4)
	l.Label = fmt.Sprintf("%.0f%%", busy.util)
	l.LX, l.LY = round(a.X+dx*0.45+px*4), round(a.Y+dy*0.45+py*4+3)
	steps := busy.steps
	more := ""
	if len(steps) > 8 {
		steps, more = steps[:8], fmt.Sprintf(" and %d more", len(busy.steps)-8)
	}
	l.Title = fmt.Sprintf("%s: %.0f%% busy at most; the busiest direction of %s%s", name, busy.util, strings.Join(steps, ", "), more)
	return l
}

// utilColor is green at 0%, yellow at 50% and red from 100%.
func utilColor(pct float64) string {
	f := math.Min(math.Max(pct/100, 0), 1)
	r, g := 1.0, 1.0
	if f < 0.5 {
		r = 2 * f
	} else {
		g = 2 * (1 - f)
	}
	return fmt.Sprintf("#%02x%02x00", int(math.Round(r*0xd0)), int(math.Round(g*0xb0)))
}

var topoTemplate = template.Must(template.New("topology").Parse(`<svg xmlns="http://www.w3.org/2000/svg" class="topology" style="max-width: 100%; height: auto" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.ViewW}} {{.ViewH}}" font-family="sans-serif" font-size="11">
<text x="10" y="18" font-size="14">{{.Title}}</text>
<g stroke="#999" stroke-width="1.5">{{range .Links}}
<line x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}"><title>{{.Title}}</title></line>{{end}}
</g>
<g stroke-width="4">{{range .Hot}}
<g><title>{{.Title}}</title><line x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" stroke="{{.Color}}"/><polygon points="{{.Arrow}}" fill="{{.Color}}" stroke="none"/><text x="{{.LX}}" y="{{.LY}}" stroke="none" text-anchor="middle" font-size="10">{{.Label}}</text></g>{{end}}
</g>
<g stroke="#333" stroke-width="1">{{range .Nodes}}
<g><title>{{.Title}}</title>{{if eq .Kind "router"}}<rect x="{{.X}}" y="{{.Y}}" width="14" height="14" transform="translate(-7 -7)" fill="#1f77b4"/>{{else if eq .Kind "site"}}<rect x="{{.X}}" y="{{.Y}}" width="11" height="11" transform="rotate(45 {{.X}} {{.Y}}) translate(-5.5 -5.5)" fill="#ff7f0e"/>{{else if eq .Kind "core"}}<circle cx="{{.X}}" cy="{{.Y}}" r="10" fill="#ddd"/>{{else}}<circle cx="{{.X}}" cy="{{.Y}}" r="7" fill="#fff"/>{{end}}<text x="{{.LX}}" y="{{.LY}}" stroke="none" text-anchor="{{.Anchor}}">{{.Name}}</text></g>{{end}}
</g>
{{range .Legend}}<text x="10" y="{{.Y}}">{{.Text}}</text>
{{end}}
</svg>`))
