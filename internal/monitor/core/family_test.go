package core

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// families: and family: of a test, as written.
func TestParseFamilies(t *testing.T) {
	for _, tc := range []struct {
		name, test string
		want       []string
		err        string
	}{
		{"none", `{name: lat, type: probe, group: g}`, nil, ""},
		{"both", `{name: lat, type: probe, group: g, families: [ipv4, ipv6]}`, []string{IPv4, IPv6}, ""},
		{"one", `{name: lat, type: probe, group: g, family: ipv6}`, []string{IPv6}, ""},
		{"throughput", `{name: bulk, type: throughput, group: g, every: 1h, families: [ipv6, ipv4]}`, []string{IPv6, IPv4}, ""},
		{"trace", `{name: route, type: trace, group: g, families: [ipv4, ipv6]}`, []string{IPv4, IPv6}, ""},
		{"unknown", `{name: lat, type: probe, group: g, families: [ipv4, ipv5]}`, nil, `tests[0].families: "ipv5": give ipv4 or ipv6`},
		{"twice", `{name: lat, type: probe, group: g, families: [ipv6, ipv6]}`, nil, "ipv6 is listed twice"},
		{"family and families", `{name: lat, type: probe, group: g, family: ipv4, families: [ipv6]}`, nil, "not both"},
		{"empty", `{name: lat, type: probe, group: g, families: []}`, nil, "an empty list"},
		{"bad family", `{name: lat, type: probe, group: g, family: "6"}`, nil, `tests[0].family: "6": give ipv4 or ipv6`},
		{"disk", `{name: d, type: disk, group: g, family: ipv6}`, nil, "no address family"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("f.yaml", []byte("testbed: x\ngroups: {g: [a, b]}\ntests:\n  - "+tc.test+"\n"))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Tests[0].Families; !slices.Equal(got, tc.want) {
				t.Errorf("families %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPathKeyFamily(t *testing.T) {
	for _, tc := range []struct {
		k     PathKey
		text  string
		other string
	}{
		{PathKey{Src: "a", Dst: "b", Test: "lat"}, "a->b (lat)", ""},
		{PathKey{Src: "a", Dst: "b", Test: "lat", Family: IPv6}, "a->b (lat, ipv6)", IPv4},
		{PathKey{Src: "a", Dst: "b", Test: "lat", Family: IPv4}, "a->b (lat, ipv4)", IPv6},
	} {
		if got := tc.k.String(); got != tc.text {
			t.Errorf("%#v.String() = %q, want %q", tc.k, got, tc.text)
		}
		o, ok := tc.k.Other()
		if ok != (tc.other != "") || o.Family != tc.other || (ok && (o.Src != tc.k.Src || o.Dst != tc.k.Dst || o.Test != tc.k.Test)) {
			t.Errorf("%v.Other() = %v, %v; want family %q", tc.k, o, ok, tc.other)
		}
	}
}

const familiesConfig = `testbed: x
targets: {refl: {stamp: "192.0.2.7"}}
groups: {g: [a, b, refl], h: [a, b]}
tests:
  - {name: lat, type: probe, group: g, families: [ipv4, ipv6]}
  - {name: bulk, type: throughput, group: h, every: 1h, family: ipv6}
  - {name: old, type: probe, group: g}
alerts: {loss_above: 1%, for: 1}
baseline: {min_points: 3}
`

// A test of two families has two paths per pair (a target's one), each
// a run of its own; one that names none keeps its keys as they were.
func TestKeysAndRuns(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte(familiesConfig))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range cfg.Keys(cfg.Tests[0]) {
		got = append(got, k.String())
	}
	want := []string{"a->b (lat, ipv4)", "a->b (lat, ipv6)", "a->refl (lat)", "b->a (lat, ipv4)", "b->a (lat, ipv6)", "b->refl (lat)"}
	if !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	if keys := cfg.Keys(cfg.Tests[2]); len(keys) != 4 || keys[0] != (PathKey{Src: "a", Dst: "b", Test: "old"}) {
		t.Errorf("keys of a test without families: %v", keys)
	}
	if run, ok := cfg.Run(PathKey{Src: "a", Dst: "b", Test: "bulk", Family: IPv6}); !ok || run.Family != IPv6 || run.Name != "bulk" {
		t.Errorf("the ipv6 run of bulk: %+v, %v", run, ok)
	}
	for _, k := range []PathKey{{Src: "a", Dst: "b", Test: "bulk"}, {Src: "a", Dst: "b", Test: "bulk", Family: IPv4}, {Src: "a", Dst: "refl", Test: "lat", Family: IPv4}} {
		if _, ok := cfg.Run(k); ok {
			t.Errorf("%v is no path of the configuration", k)
		}
	}
	// Each family's run is a job of its own, and never beside the other
	// on a host.
	s := NewScheduler(cfg, time.Unix(1e9, 0), map[PathKey]time.Time{{Src: "a", Dst: "b", Test: "bulk", Family: IPv6}: time.Unix(1e9, 0)}, 1)
	if s.Len() != 2 {
		t.Fatalf("%d jobs, want 2 (a->b and b->a over ipv6)", s.Len())
	}
	j, ok, _ := s.Next(time.Unix(1e9, 0).Add(time.Hour), nil)
	if !ok || j.Key() != (PathKey{Src: "b", Dst: "a", Test: "bulk", Family: IPv6}) {
		t.Errorf("first job %v; want b->a (the other resumes an hour after its last start)", j.Key())
	}
	if demand := Demand(cfg)["a"]; demand <= 0 {
		t.Errorf("demand %v", demand)
	}
}

func TestCheckFamilies(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte(familiesConfig))
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string][]string{"a": {IPv4, IPv6}, "b": {IPv4}}
	have := func(h string) ([]string, bool) { fs, ok := hosts[h]; return fs, ok }
	err = cfg.CheckFamilies(have)
	if err == nil || !strings.Contains(err.Error(), "test lat runs over ipv6, which host b has no address of") ||
		!strings.Contains(err.Error(), "test bulk runs over ipv6, which host b has no address of") || strings.Contains(err.Error(), "refl") {
		t.Errorf("got %v", err)
	}
	hosts["b"] = []string{IPv6, IPv4}
	if err := cfg.CheckFamilies(have); err != nil {
		t.Errorf("dual-stack hosts: %v", err)
	}
	// A host whose addresses are known only once its agent answers is
	// not judged here: its path fails, naming it.
	delete(hosts, "b")
	if err := cfg.CheckFamilies(have); err != nil {
		t.Errorf("a host of unknown addresses: %v", err)
	}
}

// Scope, as a table: the other family's state.
func TestScope(t *testing.T) {
	v6 := PathKey{Src: "a", Dst: "b", Test: "lat", Family: IPv6}
	v4 := PathKey{Src: "a", Dst: "b", Test: "lat", Family: IPv4}
	for _, tc := range []struct {
		k                    PathKey
		seen, failed, alerts bool
		want                 string
	}{
		{v6, true, false, false, ScopeIPv6Only},
		{v4, true, false, false, ScopeIPv4Only},
		{v6, true, false, true, ScopePath},
		{v6, true, true, true, ScopePath},
		{v6, false, false, false, ""},
		{v6, true, true, false, ""},
		{PathKey{Src: "a", Dst: "b", Test: "lat"}, true, false, true, ""},
	} {
		if got := Scope(tc.k, tc.seen, tc.failed, tc.alerts); got != tc.want {
			t.Errorf("Scope(%v, seen %v, failed %v, alerts %v) = %q, want %q", tc.k, tc.seen, tc.failed, tc.alerts, got, tc.want)
		}
	}
}

// The detector tells an IPv6-only loss from a path-wide one: the ipv6
// run's alert says ipv6-only while the ipv4 run is healthy; once the
// ipv4 run alerts too, its alert says path, and so does the first one.
func TestDetectorScope(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte(familiesConfig))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDetector(cfg)
	t0 := time.Unix(1e9, 0)
	obs := func(family string, i int, loss LossCount) Observation {
		at := t0.Add(time.Duration(i) * time.Minute)
		k := PathKey{Src: "a", Dst: "b", Test: "lat", Family: family}
		return Observation{Key: k, Type: Probe, At: at, Family: family, Loss: map[Name]LossCount{LossRatio: loss},
			Points: []Point{{T: at, Src: "a", Dst: "b", Test: "lat", Family: family, Metric: string(RTTMin), Value: 0.01}}}
	}
	d.Observe(obs(IPv4, 0, lost0))
	fired, _ := d.Observe(obs(IPv6, 1, lost50))
	if len(fired) != 1 || fired[0].Scope != ScopeIPv6Only || fired[0].Family != IPv6 || !strings.HasPrefix(fired[0].Message, "IPv6 only (IPv4 healthy): ") ||
		!strings.Contains(fired[0].Ref, "/lat/ipv6/") {
		t.Fatalf("fired %+v; want one ipv6-only loss alert", fired)
	}
	fired, _ = d.Observe(obs(IPv4, 2, lost50))
	if len(fired) != 1 || fired[0].Scope != ScopePath || fired[0].Family != IPv4 {
		t.Fatalf("fired %+v; want the ipv4 run's alert, scope path", fired)
	}
	for _, a := range d.Active() {
		if a.Scope != ScopePath || !strings.HasPrefix(a.Message, "both IPv4 and IPv6: ") || strings.Contains(a.Message, "healthy") {
			t.Errorf("active %s on %s: scope %q, message %q; want path, said so", a.Rule, a.Family, a.Scope, a.Message)
		}
	}
	// A run without families is judged as before: no scope.
	k := PathKey{Src: "a", Dst: "b", Test: "old"}
	fired, _ = d.Observe(Observation{Key: k, Type: Probe, At: t0.Add(5 * time.Minute), Loss: map[Name]LossCount{LossRatio: lost50}})
	if len(fired) != 1 || fired[0].Scope != "" || fired[0].Family != "" || strings.HasPrefix(fired[0].Message, "IPv") {
		t.Errorf("fired %+v; want an alert without scope", fired)
	}
	// A restart learns each family's baseline from its own points.
	d2 := NewDetector(cfg)
	for i := range 3 {
		d2.Learn(Point{T: t0.Add(time.Duration(i) * time.Minute), Src: "a", Dst: "b", Test: "lat", Family: IPv6, Metric: string(RTTMin), Value: 0.03})
	}
	if med, _, n := d2.Baseline(PathKey{Src: "a", Dst: "b", Test: "lat", Family: IPv6}, RTTMin); n != 3 || med != 0.03 {
		t.Errorf("the ipv6 baseline: %v over %d", med, n)
	}
	if _, _, n := d2.Baseline(PathKey{Src: "a", Dst: "b", Test: "lat", Family: IPv4}, RTTMin); n != 0 {
		t.Errorf("the ipv4 baseline learnt the ipv6 points: %d", n)
	}
}

// A throughput test of two families toward an iperf3 target: each host
// pair's two runs, and one run toward the target (over the family its
// address gives).
func TestSchedulerFamiliesAndTargets(t *testing.T) {
	cfg, err := Parse("f.yaml", []byte(`testbed: x
targets: {srv: {iperf3: "192.0.2.9:5201"}}
groups: {g: [a, b, srv]}
tests:
  - {name: bulk, type: throughput, group: g, every: 1h, families: [ipv4, ipv6]}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(cfg, time.Unix(1e9, 0), nil, 1)
	var got []string
	for now := time.Unix(1e9, 0); s.Len() > 0 && len(got) < 6; now = now.Add(time.Minute) {
		if j, ok, _ := s.Next(now, nil); ok {
			got = append(got, j.Key().String())
			s.Done(j, now.Add(time.Second))
		}
	}
	slices.Sort(got)
	want := []string{"a->b (bulk, ipv4)", "a->b (bulk, ipv6)", "a->srv (bulk)", "b->a (bulk, ipv4)", "b->a (bulk, ipv6)", "b->srv (bulk)"}
	if !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}
