package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/mesh"
)

// dumbbellYAML is two hosts on each side of one 100 Mbit/s backbone
// between two routers.
const dumbbellYAML = `
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

// starYAML is hosts joined by links to one host: no direction is crossed
// by two paths.
const starYAML = `
name: star
hosts: {a: {}, b: {}, c: {}}
links:
  - {between: [a, b], rate: 100Mbit, delay: 1ms}
  - {between: [a, c], rate: 100Mbit, delay: 1ms}
`

// endsSpec is a step from servers to clients (kind.Ended).
type endsSpec struct{ servers, clients []string }

func (s *endsSpec) Length() time.Duration          { return 0 }
func (s *endsSpec) RoleHosts() map[string][]string { return nil }
func (s *endsSpec) Ends() (servers, clients []string, singleThreaded bool) {
	return s.servers, s.clients, false
}

func TestSharedBottleneck(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		spec       kind.Spec
		busiest    string
		why        string // the verdict's
		paths      string // the shared_bottleneck finding's list; "" none
	}{
		{"dumbbell, two senders", dumbbellYAML, &endsSpec{[]string{"a", "b"}, []string{"c"}}, "r1->r2",
			"link r1->r2 (shared by a->c, b->c) was 97% busy", "a->c, b->c"},
		{"dumbbell, a mesh", dumbbellYAML, &mesh.Spec{Hosts: []string{"a", "b", "c", "d"}}, "r1->r2",
			"link r1->r2 (shared by a->c, a->d, b->c, b->d) was 97% busy", "a->c, a->d, b->c, b->d"},
		{"dumbbell, one path", dumbbellYAML, &endsSpec{[]string{"a"}, []string{"c"}}, "r1->r2",
			"link r1->r2 was 97% busy", ""},
		{"star, a mesh", starYAML, &mesh.Spec{Hosts: []string{"a", "b", "c"}}, "a->b",
			"link a->b was 97% busy", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workload{Name: "w", Kind: "mesh", Testbed: testbedOf(t, tc.yaml)}
			for i, util := range []float64{50, 97} {
				w.Steps = append(w.Steps, Step{Index: i, Status: "done", Config: scenario.Step{Spec: tc.spec},
					Metrics: map[string]float64{"aggregate_mbps": util, "link_utilization_pct." + tc.busiest: util, "link_utilization_pct.x->y": 10}})
			}
			r := Of([]Workload{w}, DefaultOptions)
			v := r.Workloads[0].Steps
			if v[1].Bottleneck != Network || v[1].Why != tc.why {
				t.Errorf("the full step's verdict: %s (%s), want network (%s)", v[1].Bottleneck, v[1].Why, tc.why)
			}
			if strings.Contains(v[0].Why, "shared") {
				t.Errorf("a step whose busiest link was not full says it was shared: %s", v[0].Why)
			}
			var shared []Finding
			for _, f := range r.Findings {
				if f.Kind == SharedBottleneck {
					shared = append(shared, f)
				}
			}
			if tc.paths == "" {
				if len(shared) > 0 {
					t.Errorf("a shared bottleneck where no direction is shared: %+v", shared)
				}
				return
			}
			if len(shared) != 1 {
				t.Fatalf("%d shared bottleneck findings, want 1: %+v", len(shared), r.Findings)
			}
			f := shared[0]
			if !strings.Contains(f.Text, "ink "+tc.busiest+", shared by") || !strings.Contains(f.Text, ": "+tc.paths+" loaded it during step 2.") ||
				f.Values["utilization_pct"] != 97 || f.Values["limiting_steps"] != 1 {
				t.Errorf("the finding: %s %v", f.Text, f.Values)
			}
		})
	}
}

// TestSharedBackboneBesideAccess: a backbone direction full beside a
// fuller access link is named too, though the verdict names the busiest.
func TestSharedBackboneBesideAccess(t *testing.T) {
	w := Workload{Name: "w", Kind: "mesh", Testbed: testbedOf(t, dumbbellYAML)}
	w.Steps = []Step{{Index: 0, Label: "all", Status: "done", Config: scenario.Step{Spec: &mesh.Spec{Hosts: []string{"a", "b", "c", "d"}}},
		Metrics: map[string]float64{"aggregate_mbps": 90, "link_utilization_pct.r2->c": 99, "link_utilization_pct.r1->r2": 93, "link_utilization_pct.c->r2": 95}}}
	r := Of([]Workload{w}, DefaultOptions)
	if v := r.Workloads[0].Steps[0]; v.Why != "link r2->c (shared by a->c, b->c, d->c) was 99% busy" {
		t.Errorf("the verdict: %s", v.Why)
	}
	var texts []string
	for _, f := range r.Findings {
		if f.Kind == SharedBottleneck {
			texts = append(texts, f.Text)
		}
	}
	want := []string{
		"Link r2->c, shared by 3 paths of the workload's traffic, was full (99% busy at most, in step all): a->c, b->c, d->c loaded it during step all. It was the bottleneck of those paths in 1 step.",
		"Link c->r2, shared by 3 paths of the workload's traffic, was full (95% busy at most, in step all): c->a, c->b, c->d loaded it during step all.",
		"Backbone link r1->r2, shared by 4 paths of the workload's traffic, was full (93% busy at most, in step all): a->c, a->d, b->c, b->d loaded it during step all.",
	}
	if strings.Join(texts, "\n") != strings.Join(want, "\n") {
		t.Errorf("the shared bottleneck findings:\n%s\nwant\n%s", strings.Join(texts, "\n"), strings.Join(want, "\n"))
	}
}

// TestSharedBackboneInBursts: a backbone direction full in bursts (a quarter
// of the step or more at 90% and above) is named, though its mean is not; one
// full for less of the step is not.
func TestSharedBackboneInBursts(t *testing.T) {
	for _, tc := range []struct {
		fullTime float64
		want     string
	}{
		{58, "Backbone link r1->r2, shared by 4 paths of the workload's traffic, was full (in bursts: 49% busy on average at most, in step all, but at least 90% busy for 58% of it): a->c, a->d, b->c, b->d loaded it during step all."},
		{20, ""},
	} {
		w := Workload{Name: "w", Kind: "mesh", Testbed: testbedOf(t, dumbbellYAML)}
		w.Steps = []Step{{Index: 0, Label: "all", Status: "done", Config: scenario.Step{Spec: &mesh.Spec{Hosts: []string{"a", "b", "c", "d"}}},
			Metrics: map[string]float64{"aggregate_mbps": 50, "link_utilization_pct.r1->r2": 49, "link_full_pct.r1->r2": tc.fullTime, "link_utilization_pct.r2->c": 30, "link_full_pct.r2->c": 10}}}
		r := Of([]Workload{w}, DefaultOptions)
		var texts []string
		for _, f := range r.Findings {
			if f.Kind == SharedBottleneck {
				texts = append(texts, f.Text)
				if f.Values["full_time_pct"] != tc.fullTime {
					t.Errorf("full_time_pct %v, want %v", f.Values["full_time_pct"], tc.fullTime)
				}
			}
		}
		if got := strings.Join(texts, "\n"); got != tc.want {
			t.Errorf("full %.0f%% of the step: findings\n%s\nwant\n%s", tc.fullTime, got, tc.want)
		}
	}
}

func TestPathList(t *testing.T) {
	var paths []string
	for _, h := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		paths = append(paths, h+"->z")
	}
	if got, want := pathList(paths), "a->z, b->z, c->z, d->z, e->z, f->z and 2 more"; got != want {
		t.Errorf("pathList = %q, want %q", got, want)
	}
	if got := pathList(paths[:2]); got != "a->z, b->z" {
		t.Errorf("pathList of two = %q", got)
	}
}
