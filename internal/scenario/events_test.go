package scenario

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

func TestExpand(t *testing.T) {
	s := time.Second
	tests := []struct {
		name  string
		event Event
		want  []TimedChange
	}{
		{"once, for good", Event{Link: "a->b", At: 2 * s, Set: []string{"delay=50ms"}},
			[]TimedChange{{At: 2 * s, Link: "a->b", Set: []string{"delay=50ms"}, What: "a->b: delay=50ms"}}},
		{"for a while", Event{Name: "flap", Link: "a<->b", At: s, Set: []string{"down=true"}, For: 3 * s},
			[]TimedChange{
				{At: s, Link: "a<->b", Set: []string{"down=true"}, What: "flap (a<->b: down=true for 3s)"},
				{At: 4 * s, Link: "a<->b", Restore: true, What: "end of flap (a<->b: down=true for 3s)"}}},
		{"every", Event{Link: "a->b", At: s, Set: []string{"loss=5%"}, For: s, Every: 5 * s, Until: 11 * s},
			[]TimedChange{
				{At: s, Link: "a->b", Set: []string{"loss=5%"}, What: "a->b: loss=5% for 1s"},
				{At: 2 * s, Link: "a->b", Restore: true, What: "end of a->b: loss=5% for 1s"},
				{At: 6 * s, Link: "a->b", Set: []string{"loss=5%"}, Occurrence: 1, What: "a->b: loss=5% for 1s"},
				{At: 7 * s, Link: "a->b", Restore: true, Occurrence: 1, What: "end of a->b: loss=5% for 1s"},
				{At: 11 * s, Link: "a->b", Set: []string{"loss=5%"}, Occurrence: 2, What: "a->b: loss=5% for 1s"},
				{At: 12 * s, Link: "a->b", Restore: true, Occurrence: 2, What: "end of a->b: loss=5% for 1s"}}},
		{"ramp", Event{Link: "a->b", At: s, For: 2 * s, Ramp: &Ramp{Key: "rate", From: 10e6, To: 2e6, Step: s}},
			[]TimedChange{
				{At: s, Link: "a->b", Set: []string{"rate=10000000bit"}, What: "a->b: rate=10000000bit (a->b: rate ramp)"},
				{At: 2 * s, Link: "a->b", Set: []string{"rate=6000000bit"}, What: "a->b: rate=6000000bit (a->b: rate ramp)"},
				{At: 3 * s, Link: "a->b", Set: []string{"rate=2000000bit"}, What: "a->b: rate=2000000bit (a->b: rate ramp)"}}},
	}
	for _, tt := range tests {
		if got := Expand([]Event{tt.event}); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

// Random failures are drawn from the seed: the same seed, the same
// outages; each outage is a down and, later, a restore; their mean is
// near the mean times asked for.
func TestExpandFailures(t *testing.T) {
	e := Event{Link: "a<->b", Until: time.Hour, Failures: &Failures{MTBF: 10 * time.Second, MTTR: time.Second, Seed: 7}}
	a, b := Expand([]Event{e}), Expand([]Event{e})
	if !reflect.DeepEqual(a, b) || len(a) < 100 || len(a)%2 != 0 {
		t.Fatalf("failures: %d changes, same for the same seed: %v", len(a), reflect.DeepEqual(a, b))
	}
	var up, down time.Duration
	last := time.Duration(0)
	for i := 0; i < len(a); i += 2 {
		if a[i].Set[0] != "down=true" || !a[i+1].Restore || a[i+1].Occurrence != a[i].Occurrence {
			t.Fatalf("changes %d, %d: %+v %+v: want a down and its restore", i, i+1, a[i], a[i+1])
		}
		up += a[i].At - last
		down += a[i+1].At - a[i].At
		last = a[i+1].At
	}
	n := time.Duration(len(a) / 2)
	if mtbf, mttr := up/n, down/n; mtbf < 8*time.Second || mtbf > 12*time.Second || mttr < 800*time.Millisecond || mttr > 1200*time.Millisecond {
		t.Errorf("mean up %v, mean down %v over %d outages; want about 10s and 1s", mtbf, mttr, n)
	}
	e.Failures.Seed = 8
	if reflect.DeepEqual(Expand([]Event{e}), a) {
		t.Error("another seed gave the same outages")
	}
}

func TestEventsParsed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ok.yaml")
	os.WriteFile(path, []byte(`name: ok
hosts: {a: {site: x}, b: {site: y}}
sites:
  x: {rate: 100Mbit, delay: 10ms}
  y: {rate: 100Mbit, delay: 10ms, hops: [gw.y@192.0.2.1, 192.0.2.2]}
events:
  - {name: route change, at: 30s, link: site y, set: {delay: 40ms, hops: [gw.y@192.0.2.1, 198.51.100.7]}}
workloads:
  - throughput: {from: a, to: b, duration: 20s}
    events:
      - {at: 5s, link: site x up, ramp: {rate: [100Mbit, 10Mbit]}, for: 10s}
      - {at: 16s, link: site x, set: {down: true}, for: 2s}
`), 0o644)
	f, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Events) != 1 || f.Events[0].Line != 7 || f.Events[0].What() != "route change (site y: delay=40ms hops=gw.y@192.0.2.1,198.51.100.7)" {
		t.Errorf("run events %+v", f.Events)
	}
	w := f.Workloads[0]
	if len(w.Events) != 2 || w.Events[0].Ramp == nil || w.Events[0].Ramp.Step != 500*time.Millisecond || w.Events[1].For != 2*time.Second {
		t.Errorf("workload events %+v", w.Events)
	}
	if hops := f.Testbed.Sites[1].Down.Hops; len(hops) != 2 || hops[0].String() != "gw.y@192.0.2.1" || hops[1].String() != "192.0.2.2" {
		t.Errorf("site y's routers %v", hops)
	}
}

func TestTraceParsed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bw.csv"), []byte("time,rate\n0,20Mbit\n1.5s,4Mbit\n2500ms,10Mbit\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cell.down"), []byte("0\n1\n1\n3\n4\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "d.csv"), []byte("0,20ms\n1,80ms\n"), 0o644)
	path := filepath.Join(dir, "s.yaml")
	text := []byte(`name: tr
hosts: {a: {site: x}, b: {site: y}}
sites:
  x: {delay: 5ms, trace: {rate: bw.csv, delay: d.csv, loop: false}}
  y: {delay: 5ms, trace: {mahimahi: cell.down}}
`)
	os.WriteFile(path, text, 0o644)
	f, err := Load(path, false)
	if err != nil {
		t.Fatal(err)
	}
	up := f.Testbed.Sites[0].Up
	if tr := up.Trace; tr == nil || len(tr.Rate) != 3 || tr.Rate[1].At != 1500*time.Millisecond || tr.Rate[1].Value != 4e6 || tr.Loop || len(tr.Delay) != 2 {
		t.Fatalf("rate trace %+v", up.Trace)
	}
	// The direction's rate is the trace's mean over its steps, its delay the first.
	if want := (20e6*1.5 + 4e6*1) / 2.5; math.Abs(float64(up.Rate)-want) > 1 || up.Delay != 20*time.Millisecond {
		t.Errorf("rate %v (want %v), delay %v", up.Rate, want, up.Delay)
	}
	down := f.Testbed.Sites[1].Down
	if tr := down.Trace; tr == nil || len(tr.Deliveries) != 5 || tr.Period != 4*time.Millisecond || !tr.Loop {
		t.Fatalf("mahimahi trace %+v", down.Trace)
	}
	if want := 5 * 1504 * 8 / 0.004; math.Abs(float64(down.Rate)-want) > 1 {
		t.Errorf("mahimahi rate %v, want %v", down.Rate, want)
	}
	// A run's stored copy parses without its files.
	os.Remove(filepath.Join(dir, "bw.csv"))
	if _, err := ParseStored(path, text, false); err != nil {
		t.Errorf("a stored scenario whose trace is gone: %v", err)
	}
	if _, err := Parse(path, text, false); err == nil {
		t.Error("a scenario whose trace is gone was accepted")
	}
}

// FuzzTrace reads any trace file, both ways: it is refused with a message
// or gives steps whose times increase and values are in bounds.
func FuzzTrace(f *testing.F) {
	for _, s := range []string{"0,10Mbit\n1,5Mbit\n", "time,rate\n0.5,1Gbit\n", "1\n1\n2\n", "0,25ms\n", "x\n", "0,10Mbit\n0,5Mbit\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "t")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		v := &fieldChecker{Checker: &yamlfile.Checker{File: "fuzz"}}
		steps := readSteps(v, "rate", path, func(s string) (units.Rate, error) { return units.ParseRate(s) })
		for i, s := range steps {
			if s.At < 0 || i > 0 && s.At <= steps[i-1].At {
				t.Fatalf("accepted steps out of order: %+v", steps)
			}
		}
		if steps == nil && v.Count() == 0 {
			t.Fatal("no steps and no problem")
		}
		opps, period := readMahimahi(v, "mahimahi", path)
		if opps != nil && (period <= 0 || period != opps[len(opps)-1]) {
			t.Fatalf("accepted opportunities %v with period %v", opps, period)
		}
	})
}
