package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/golden"
	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/topology"
)

// TestValidateRoutersGolden checks testbed validate of a test-bed with
// routers: the router table, the PATHS column, NODES and bottleneck
// directions in the path table, and the unreachable pairs as a note
// (exit 0), listed up to maxListed; and the same in JSON.
func TestValidateRoutersGolden(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"validate-routers.txt", []string{"testbed", "validate", "testdata/routers.yaml"}},
		{"validate-routers.json", []string{"testbed", "validate", "--json", "testdata/routers.yaml"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != exitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			golden.Check(t, "testdata/"+tt.golden, out.String())
		})
	}
}

// TestValidateRoutersJSON checks the fields --json gains with routers.
func TestValidateRoutersJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"testbed", "validate", "--json", "testdata/routers.yaml"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var v planView
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Routers) != 5 || v.Routers[2].Addr != "193.206.0.1" || v.Routing != "delay" || len(v.Unreachable) != 16 {
		t.Errorf("routers %+v, routing %q, %d unreachable", v.Routers, v.Routing, len(v.Unreachable))
	}
	i := slices.IndexFunc(v.Links, func(d dirView) bool { return d.Name == "mi->bo" })
	if i < 0 || v.Links[i].From != "mi" || v.Links[i].To != "bo" || v.Links[i].Entry != "10.251.0.1" || len(v.Links[i].Paths) != 5 {
		t.Errorf("mi->bo: %+v", v.Links[i])
	}
	i = slices.IndexFunc(v.Paths, func(p topology.Path) bool { return p.From == "bari" && p.To == "cnaf" })
	if p := v.Paths[i]; p.Route != topology.RouteExplicit || p.BottleneckDir != "site bari up" || len(p.Nodes) != 8 || len(p.Via) != 5 {
		t.Errorf("bari -> cnaf: %+v", p)
	}
}

// routersState is the state of the routers.yaml test-bed running, after
// mi<->bo went down and the routed pairs moved round it.
func routersState(t *testing.T) *testbed.State {
	t.Helper()
	p, err := loadPlan("testdata/routers.yaml", false)
	if err != nil {
		t.Fatal(err)
	}
	topo := p.topo
	down := make([]bool, len(topo.Dirs))
	for i := range topo.Dirs {
		if d := &topo.Dirs[i]; d.Name == "mi->bo" || d.Name == "bo->mi" {
			d.Config.Down, down[i] = true, true
		}
	}
	if len(topo.Reroute(down)) == 0 {
		t.Fatal("mi<->bo down moved no path")
	}
	// Through JSON, as testbed status reads it.
	data, err := json.Marshal(&testbed.State{Name: topo.Name, Hosts: testbed.Hosts(topo), Routers: topo.Routers, Routing: topo.Routing,
		Dirs: topo.Dirs, Paths: topo.Paths, Unreachable: topo.Unreachable})
	if err != nil {
		t.Fatal(err)
	}
	var st testbed.State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// TestStatusRoutersGolden checks what testbed status shows of a test-bed
// with routers after a reroute: the paths in force, the directions'
// paths, with live counters beside the PATHS column.
func TestStatusRoutersGolden(t *testing.T) {
	st := routersState(t)
	stats := &linkemu.Stats{}
	for i, d := range st.Dirs {
		stats.Dirs = append(stats.Dirs, linkemu.DirSnapshot{Name: d.Name, Packets: uint64(10 * i), Bytes: uint64(15000 * i)})
	}
	v := newStatusView(&testbed.Status{State: st, Alive: true, Engine: stats})
	var out bytes.Buffer
	printPlan(&out, v.planView)
	golden.Check(t, "testdata/status-routers.txt", out.String())
	if !strings.Contains(out.String(), "torino -> cnaf    155Mbit (site torino up)  24ms") {
		t.Error("torino -> cnaf is not shown on its new path")
	}
}

// TestListText checks that the text lists stop at maxListed names.
func TestListText(t *testing.T) {
	var names []string
	for i := range maxListed + 3 {
		names = append(names, fmt.Sprint("d", i))
	}
	if got := listText(names[:2]); got != "d0, d1" {
		t.Errorf("two names: %q", got)
	}
	if got := listText(names); !strings.HasSuffix(got, fmt.Sprintf("d%d, and 3 more", maxListed-1)) || strings.Count(got, ",") != maxListed {
		t.Errorf("%d names: %q", len(names), got)
	}
	var out bytes.Buffer
	printUnreachable(&out, nil)
	if out.String() != "unreachable: none\n" {
		t.Errorf("no unreachable pair: %q", out.String())
	}
}
