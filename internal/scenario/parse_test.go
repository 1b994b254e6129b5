package scenario

import (
	"cmp"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/golden"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"go.yaml.in/yaml/v3"
)

// TestBadFiles checks that each bad scenario gives exactly the errors in its
// .err golden file: file, line, field and a message in plain words.
func TestBadFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.bad.yaml")
	if len(files) == 0 {
		t.Fatal("no bad fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f, false)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error is %T, want *scenario.Error: %v", err, err)
			}
			golden.Check(t, f+".err", err.Error()+"\n")
		})
	}
}

// exampleScenarios are the shipped scenarios: every file of examples/ but
// the monitoring configurations (wanlab serve's, with groups: and tests:).
func exampleScenarios(t testing.TB) []string {
	all, _ := filepath.Glob("../../examples/*.yaml")
	var out []string
	for _, f := range all {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]any
		if yaml.Unmarshal(data, &top) == nil && top["groups"] != nil && top["tests"] != nil {
			continue
		}
		out = append(out, f)
	}
	return out
}

// TestGoodFiles checks the validated test-bed, defaults included, against golden JSON.
func TestGoodFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.yaml")
	for _, f := range append(files, exampleScenarios(t)...) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sf, err := Load(f, false)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(f, "examples") {
				return
			}
			out, err := json.MarshalIndent(sf.Testbed, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, strings.TrimSuffix(f, ".yaml")+".json", string(out)+"\n")
		})
	}
}

func TestDefaultQueue(t *testing.T) {
	tests := []struct {
		rate  units.Rate
		delay time.Duration
		want  int64
	}{
		{100 * units.Mbit, 25 * time.Millisecond, 625000}, // BDP of a 50 ms round trip
		{2 * units.Mbit, 0, 150000},                       // floor: 100 x 1500 B
		{0, 10 * time.Millisecond, 150000},                // unlimited rate: floor
	}
	for _, tt := range tests {
		if got := DefaultQueue(tt.rate, tt.delay, 1500); got.Bytes != tt.want || got.Packets != 0 {
			t.Errorf("DefaultQueue(%v, %v) = %+v, want %d bytes", tt.rate, tt.delay, got, tt.want)
		}
	}
}

func TestLossMean(t *testing.T) {
	tests := []struct {
		loss Loss
		want float64
	}{
		{Loss{Random: 0.01}, 0.01},
		{Loss{Gilbert: &GilbertElliott{P: 0.01, R: 0.09, BadLoss: 1}}, 0.1},
		{Loss{Gilbert: &GilbertElliott{P: 0.5, R: 0.5, BadLoss: 0.5, GoodLoss: 0.1}}, 0.3},
	}
	for _, tt := range tests {
		if got := tt.loss.Mean(); abs(got-tt.want) > 1e-12 {
			t.Errorf("%+v.Mean() = %v, want %v", tt.loss, got, tt.want)
		}
	}
}

func TestDirectionOverrides(t *testing.T) {
	f, err := Load("testdata/sites.good.yaml", false)
	if err != nil {
		t.Fatal(err)
	}
	tb := f.Testbed
	cern, _ := tb.Site("cern")
	if cern.Up.Queue.Bytes != 64<<10 || cern.Up.Delay != 24500*time.Microsecond {
		t.Errorf("cern up = %+v, want queue 64KiB and the site's delay", cern.Up)
	}
	if cern.Down.Rate != 1.7e6 || cern.Down.Queue.Bytes != 150000 {
		t.Errorf("cern down = %+v, want 1.7Mbit and the default queue", cern.Down)
	}
	pd, _ := tb.Site("padova")
	if pd.Up.Loss.Gilbert == nil || pd.Up.Loss.Gilbert.BadLoss != 1 {
		t.Errorf("padova up loss = %+v, want gilbert-elliott with bad_loss 100%%", pd.Up.Loss)
	}
	if tb.Seed != 7 {
		t.Errorf("seed = %d, want 7", tb.Seed)
	}
}

// refused says whether Parse refused a file, and fails t unless it did so
// with an *Error.
func refused(t *testing.T, err error) bool {
	var se *Error
	if err != nil && !errors.As(err, &se) {
		t.Fatalf("error of type %T: %v", err, err)
	}
	return err != nil
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range append(files, exampleScenarios(f)...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := Parse("fuzz.yaml", data, false)
		if refused(t, err) {
			return
		}
		tb := sf.Testbed
		if tb.Name == "" || len(tb.Hosts) == 0 {
			t.Fatalf("accepted a test-bed without name or hosts: %+v", tb)
		}
		// An accepted timeline expands, in time order, within its bound.
		for _, events := range append([][]Event{sf.Events}, workloadEvents(sf)...) {
			changes := Expand(events)
			if len(changes) > MaxTimedChanges+1 || !slices.IsSortedFunc(changes, func(a, b TimedChange) int { return cmp.Compare(a.At, b.At) }) {
				t.Fatalf("timeline of %d changes, sorted %v", len(changes), slices.IsSortedFunc(changes, func(a, b TimedChange) int { return cmp.Compare(a.At, b.At) }))
			}
		}
		for _, l := range tb.Links {
			for _, d := range []Direction{l.Forward, l.Reverse} {
				if d.Rate < 0 || d.Delay < 0 || d.MTU < MinMTU || d.Loss.Mean() > 1 {
					t.Fatalf("accepted an impossible direction %+v", d)
				}
				if d.Queue.Packets == 0 && d.Queue.Bytes < int64(d.MTU) {
					t.Fatalf("accepted a queue below one MTU: %+v", d)
				}
			}
		}
		// The workloads: every step of an accepted file is one a run can start.
		for _, quick := range []bool{false, true} {
			f, err := Parse("fuzz.yaml", data, quick)
			if refused(t, err) {
				continue
			}
			for _, w := range f.Workloads {
				if len(w.Steps) == 0 {
					t.Fatalf("workload %s has no steps", w.Name)
				}
				for _, s := range w.Steps {
					if e, ok := s.Spec.(*eventdb.Spec); ok && (e.Store.Validate(limits.Default) != nil || e.Jobs < 1 || e.EventsPerJob > e.Store.Events) {
						t.Fatalf("accepted an impossible eventdb step %+v", e)
					}
					if m, ok := s.Spec.(*mesh.Spec); ok && (len(m.Hosts) < 2 || len(m.Sizes) == 0 || m.Duration <= 0) {
						t.Fatalf("accepted an impossible mesh step %+v", m)
					}
				}
			}
		}
	})
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func workloadEvents(f *File) [][]Event {
	var out [][]Event
	for _, w := range f.Workloads {
		out = append(out, w.Events)
	}
	return out
}
