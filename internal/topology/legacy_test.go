package topology

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/scenario"
)

// newFields are the keys issue 33 added to the topology's JSON, left out
// when it is compared with the goldens taken before: at the top level, in
// each direction and in each path.
var newFields = map[string][]string{
	"":           {"routers", "routing", "unreachable"},
	"directions": {"from", "to", "entry", "paths"},
	"paths":      {"nodes", "bottleneck_dir", "route"},
}

// TestLegacyTopologiesUnchanged checks that the topology of every shipped
// scenario of before routers (and of sitesYAML) is what it was: its JSON,
// new fields aside, equals the golden in testdata/legacy, which was taken
// from the tree before issue 33.
func TestLegacyTopologiesUnchanged(t *testing.T) {
	goldens, err := filepath.Glob("testdata/legacy/*.json")
	if err != nil || len(goldens) < 10 {
		t.Fatalf("%d goldens (%v): want one per shipped scenario", len(goldens), err)
	}
	for _, golden := range goldens {
		name := strings.TrimSuffix(filepath.Base(golden), ".json")
		t.Run(name, func(t *testing.T) {
			text := []byte(sitesYAML)
			if name != "inline-sites" {
				if text, err = os.ReadFile(filepath.Join("../../examples", name+".yaml")); err != nil {
					t.Fatal(err)
				}
			}
			f, err := scenario.Parse(name+".yaml", text, false)
			if err != nil {
				t.Fatal(err)
			}
			topo, err := New(f.Testbed)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(topo)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			var g, w map[string]any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			for _, k := range newFields[""] {
				delete(g, k)
			}
			for _, list := range []string{"directions", "paths"} {
				items, _ := g[list].([]any)
				for _, it := range items {
					for _, k := range newFields[list] {
						delete(it.(map[string]any), k)
					}
				}
			}
			if !reflect.DeepEqual(g, w) {
				pretty, _ := json.MarshalIndent(g, "", " ")
				t.Errorf("the topology changed; now (new fields aside):\n%s\nwant %s", pretty, golden)
			}
		})
	}
}
