package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/golden"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// topo resolves a scenario's test-bed.
func topo(t *testing.T, yaml string) *topology.Topology {
	t.Helper()
	f, err := scenario.Parse("t.yaml", []byte(yaml), false)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := topology.New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// drawTopo draws tp and checks that the drawing is well-formed XML.
func drawTopo(t *testing.T, tp *topology.Topology, busy map[string]*busyDir) string {
	t.Helper()
	h, err := topologySVG(tp, busy)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(string(h)))
	for {
		if _, err := d.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the drawing is not well-formed: %v\n%s", err, h)
		}
	}
	return string(h)
}

const dumbbell = `
name: dumbbell
routers: {r1: {}, r2: {}}
hosts: {a: {}, b: {}, c: {}, d: {}}
links:
  - {between: [a, r1], rate: 1Gbit, delay: 1ms}
  - {between: [b, r1], rate: 1Gbit, delay: 1ms}
  - {between: [r1, r2], rate: 100Mbit, delay: 5ms}
  - {between: [r2, c], rate: 1Gbit, delay: 1ms}
  - {between: [r2, d], rate: 1Gbit, delay: 1ms}
`

// TestTopologyGolden: a dumbbell whose backbone direction was the busiest
// of two steps, and an access link that of one.
func TestTopologyGolden(t *testing.T) {
	busy := map[string]*busyDir{"r1->r2": {util: 97, steps: []string{"bulk streams=1", "bulk streams=4"}}, "r2->c": {util: 40, steps: []string{"probe"}}}
	golden.Check(t, "testdata/topology-dumbbell.svg", drawTopo(t, topo(t, dumbbell), busy))
}

func TestTopologyEscapesNames(t *testing.T) {
	tp := &topology.Topology{Name: "x<y", Hosts: []topology.Host{{Name: "<script>alert(1)</script>", Addr: "10.250.0.1"}, {Name: `a"&b`, Addr: "10.250.0.2"}},
		Dirs: []topology.Direction{{Name: "<script>alert(1)</script>->a\"&b", From: "<script>alert(1)</script>", To: `a"&b`}}}
	svg := drawTopo(t, tp, map[string]*busyDir{"<script>alert(1)</script>->a\"&b": {util: 120, steps: []string{"<b>step</b>"}}})
	if strings.Contains(svg, "<script") || strings.Contains(svg, "<b>") || strings.Contains(svg, `a"&b`) {
		t.Errorf("a name was not escaped:\n%s", svg)
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;</text>", "a&#34;&amp;b</text>", "test-bed x&lt;y", "#d00000"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the drawing lacks %q:\n%s", want, svg)
		}
	}
}

// bigBed is 5 routers in a ring, a site behind each, and 8 hosts in each
// site: 50 nodes.
func bigBed() string {
	var b strings.Builder
	b.WriteString("name: big\nrouters: {r1: {}, r2: {}, r3: {}, r4: {}, r5: {}}\nlinks:\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&b, "  - {between: [r%d, r%d], rate: 1Gbit, delay: 2ms}\n", i, i%5+1)
	}
	b.WriteString("sites:\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&b, "  site%d: {via: r%d, rate: 100Mbit, delay: 1ms}\n", i, i)
	}
	b.WriteString("hosts:\n")
	for i := 1; i <= 5; i++ {
		for j := 1; j <= 8; j++ {
			fmt.Fprintf(&b, "  host-%d-%d: {site: site%d}\n", i, j, i)
		}
	}
	return b.String()
}

var labelRE = regexp.MustCompile(`<text x="([0-9.]+)" y="([0-9.]+)" stroke="none" text-anchor="(\w+)">([^<]*)</text>`)

var nodeRE = regexp.MustCompile(`<(?:circle cx|rect x)="([0-9.]+)" (?:cy|y)="([0-9.]+)"`)

func TestTopologyFiftyNodes(t *testing.T) {
	tp := topo(t, bigBed())
	busy := map[string]*busyDir{"r1->r2": {util: 95, steps: []string{"mesh"}}, "site site3 down": {util: 60, steps: []string{"mesh"}}}
	svg := drawTopo(t, tp, busy)
	nodes, _ := topoNodes(tp)
	if len(nodes) != 50 {
		t.Fatalf("%d nodes, want 50", len(nodes))
	}
	for _, n := range nodes {
		if !strings.Contains(svg, ">"+n.Name+"</text>") {
			t.Errorf("%s is not named in the drawing", n.Name)
		}
	}
	var at [][2]float64
	for _, m := range nodeRE.FindAllStringSubmatch(svg, -1) {
		var x, y float64
		fmt.Sscan(m[1], &x)
		fmt.Sscan(m[2], &y)
		at = append(at, [2]float64{x, y})
	}
	if len(at) != 50 {
		t.Fatalf("%d nodes drawn, want 50", len(at))
	}
	for i := range at {
		for j := range i {
			if d := math.Hypot(at[i][0]-at[j][0], at[i][1]-at[j][1]); d < 3*nodeRadius {
				t.Errorf("nodes %d and %d are %.1f apart: they overlap", i, j, d)
			}
		}
	}
	// No label over another, nor over a node (6.2 units a character, at
	// most, in a sans-serif font of 11).
	type box struct{ x0, y0, x1, y1 float64 }
	var labels []box
	for _, m := range labelRE.FindAllStringSubmatch(svg, -1) {
		var x, y float64
		fmt.Sscan(m[1], &x)
		fmt.Sscan(m[2], &y)
		w := 6.2 * float64(len(m[4]))
		x0 := map[string]float64{"start": x, "end": x - w, "middle": x - w/2}[m[3]]
		labels = append(labels, box{x0, y - 9, x0 + w, y + 2})
	}
	if len(labels) != 50 {
		t.Fatalf("%d labels, want 50", len(labels))
	}
	over := func(a, b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }
	for i, a := range labels {
		for j, b := range labels[:i] {
			if over(a, b) {
				t.Errorf("labels %d and %d overlap", i, j)
			}
		}
		for j, n := range at {
			if over(a, box{n[0] - nodeRadius, n[1] - nodeRadius, n[0] + nodeRadius, n[1] + nodeRadius}) {
				t.Errorf("label %d %v lies over node %d %v", i, a, j, n)
			}
		}
	}
	if len(svg) > 40_000 {
		t.Errorf("the drawing of 50 nodes takes %d bytes", len(svg))
	}
	if !strings.Contains(svg, `width="900"`) || !strings.Contains(svg, `<title>r1-&gt;r2: 95% busy at most; the busiest direction of mesh</title><line`) ||
		!strings.Contains(svg, `stroke="`+utilColor(95)+`"`) {
		t.Errorf("the drawing is not scaled to 900 wide, or r1->r2 is not red:\n%s", svg)
	}
}

func TestTopologyShapes(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"hosts joined pairwise", "name: star\nhosts: {a: {}, b: {}, c: {}}\nlinks:\n  - {between: [a, b]}\n  - {between: [a, c]}\n",
			[]string{"3 hosts, 0 routers, 0 sites", "<title>a - b</title>", "<title>a - c</title>"}},
		{"sites on the core", "name: sites\nsites: {x: {rate: 10Mbit}, y: {rate: 10Mbit}}\nhosts: {a: {site: x}, b: {site: y}, c: {site: x}}\n",
			[]string{"3 hosts, 0 routers, 2 sites", "<title>site x - core</title>", "<title>site x - a</title>", ">core</text>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := drawTopo(t, topo(t, tc.yaml), nil)
			for _, w := range tc.want {
				if !strings.Contains(svg, w) {
					t.Errorf("the drawing lacks %q:\n%s", w, svg)
				}
			}
		})
	}
	var hosts []topology.Host
	for i := range maxTopoNodes + 1 {
		hosts = append(hosts, topology.Host{Name: fmt.Sprint("h", i)})
	}
	if h, err := topologySVG(&topology.Topology{Hosts: hosts}, nil); h != "" || err != nil {
		t.Errorf("a test-bed of %d nodes was drawn (%v)", len(hosts), err)
	}
}

// TestReportDrawsTopology: a report shows its test-bed drawn.
func TestReportDrawsTopology(t *testing.T) {
	a := openFixture(t)
	var b bytes.Buffer
	if err := Write(context.Background(), a, 1, "test", &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `class="topology"`) || !strings.Contains(b.String(), "test-bed every-kind: 2 hosts, 0 routers, 0 sites") {
		t.Error("the report does not draw its test-bed")
	}
}

func TestUtilColor(t *testing.T) {
	for pct, want := range map[float64]string{0: "#00b000", 50: "#d0b000", 100: "#d00000", 250: "#d00000", -1: "#00b000"} {
		if got := utilColor(pct); got != want {
			t.Errorf("utilColor(%v) = %s, want %s", pct, got, want)
		}
	}
}
