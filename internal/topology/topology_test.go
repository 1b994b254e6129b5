package topology

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/wanlab/wanlab/internal/scenario"
)

const sitesYAML = `
name: multi
sites:
  cnaf: {rate: 6Mbit, delay: 1ms}
  padova: {rate: 2Mbit, delay: 3ms, lan: {rate: 100Mbit, mtu: 9000}}
  milano: {rate: 8Mbit, delay: 4ms, mtu: 1400}
hosts:
  server: {site: cnaf}
  pd1: {site: padova}
  pd2: {site: padova}
  mi1: {site: milano}
  mi2: {site: milano}
  solo: {}
links:
  - between: [solo, server]
    rate: 1Gbit
  - between: [pd1, server]
    rate: 34Mbit
`

func TestPaths(t *testing.T) {
	f, err := scenario.Parse("sites.yaml", []byte(sitesYAML), false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	host := map[string]int{}
	for i, h := range p.Hosts {
		host[h.Name] = i
	}
	table := p.PathTable()
	names := func(from, to string) []string {
		path, ok := p.Path(from, to)
		if !ok {
			return []string{"unreachable"}
		}
		var fromTable []string
		for _, d := range table[[2]int{host[from], host[to]}] {
			fromTable = append(fromTable, p.Dirs[d].Name)
		}
		if !slices.Equal(fromTable, path.Via) && len(path.Via) > 0 {
			t.Errorf("%s -> %s: the engine's table says %v, the path %v", from, to, fromTable, path.Via)
		}
		return path.Via
	}
	tests := []struct {
		from, to string
		want     []string
	}{
		{"pd2", "server", []string{"site padova up", "site cnaf down"}},
		{"server", "mi1", []string{"site cnaf up", "site milano down"}},
		{"pd1", "server", []string{"pd1->server"}}, // an explicit link wins over the sites
		{"server", "pd1", []string{"server->pd1"}},
		{"pd1", "pd2", []string{"site padova lan pd1->pd2"}},
		{"mi1", "mi2", []string{}}, // transparent LAN: direct
		{"solo", "server", []string{"solo->server"}},
		{"solo", "pd1", []string{"unreachable"}},
	}
	for _, tt := range tests {
		if got := names(tt.from, tt.to); !slices.Equal(got, tt.want) {
			t.Errorf("%s -> %s crosses %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
	if a := p.Hosts[0].Addr; a != "10.250.0.1" {
		t.Errorf("first host address %s, want 10.250.0.1", a)
	}
	// mi1's access link has MTU 1400, its LAN the default 1500.
	if n := p.Hosts[host["mi1"]]; n.MTU != 1500 || n.Routes[0].MTU != 1400 {
		t.Errorf("mi1 %+v, want device MTU 1500, 1400 to the server", n)
	}
	pd1 := p.Hosts[host["pd1"]]
	for _, r := range pd1.Routes {
		if r.Peer == "pd2" && r.MTU != 9000 || r.Peer == "mi1" && r.MTU != 1400 {
			t.Errorf("pd1 route %+v: path MTU should be the smallest on the path", r)
		}
	}
	if pd1.MTU != 9000 {
		t.Errorf("pd1 device MTU %d, want the largest path MTU 9000", pd1.MTU)
	}
	// The way there and back of a path, its RTT and loss.
	pd2, _ := p.Path("pd2", "server")
	if pd2.BaseRTTms != 8 || !slices.Equal(pd2.Back, []string{"site cnaf up", "site padova down"}) || pd2.Bottleneck != 2e6 || pd2.Loss != 0 {
		t.Errorf("pd2 -> server: %+v", pd2)
	}
	if c := pd2.TCPCeiling(); c != 2e6*(1500-TCPIPHeader)/1500 {
		t.Errorf("TCP ceiling %v", c)
	}
}

// TestReachableIsRouted: scenario validation refuses a workload whose
// hosts cannot reach each other by Testbed.Reachable; that must be exactly
// the pairs the topology routes, on the built-in scenarios and a test-bed
// with hosts by links only, by sites, and by neither.
func TestReachableIsRouted(t *testing.T) {
	beds := map[string][]byte{"sites.yaml": []byte(sitesYAML)}
	files, _ := filepath.Glob("../../examples/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		beds[name] = data
	}
	for name, data := range beds {
		f, err := scenario.Parse(name, data, false)
		if err != nil {
			continue // a monitoring configuration
		}
		topo, err := New(f.Testbed)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range f.Testbed.Hosts {
			for _, b := range f.Testbed.Hosts {
				if a.Name == b.Name {
					continue
				}
				_, routed := topo.Path(a.Name, b.Name)
				if got := f.Testbed.Reachable(a.Name, b.Name); got != routed {
					t.Errorf("%s: %s and %s reachable %v, routed %v", name, a.Name, b.Name, got, routed)
				}
			}
		}
	}
}

// TestLookupsConcurrent: lookups on one topology, and on copies of it,
// from many goroutines at once (run with -race).
func TestLookupsConcurrent(t *testing.T) {
	f, err := scenario.Parse("sites.yaml", []byte(sitesYAML), false)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			tp := topo
			if g%2 == 1 {
				c := *topo // as realhosts copies it on write
				c.Hosts = slices.Clone(c.Hosts)
				tp = &c
			}
			for _, p := range topo.Paths {
				if q, ok := tp.Path(p.From, p.To); !ok || q.From != p.From {
					t.Errorf("path %s: %+v %v", p.Name(), q, ok)
				}
				for _, v := range p.Via {
					if _, ok := tp.Direction(v); !ok {
						t.Errorf("direction %s not found", v)
					}
				}
			}
		})
	}
	wg.Wait()
}
