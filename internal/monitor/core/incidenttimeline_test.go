package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// The timing target of issue 37 on synthetic timelines: 10 probes a
// second, 10 s summaries, loss_above 2%, for: 2, 6% loss injected (and
// 0.2% everywhere), each path's summaries ending at its own phase as the
// runner staggers them. The incidents must name every injected direction
// within for + 2 summary periods of the injection, name nothing else, and
// end once it is cleared.

// routersVia are the directions of the e2e tests' routers test-bed
// (e2e's incidentRouters): cern and cnaf behind r1, slac and taipei
// behind r2, r1 and r2 joined by a backbone, and cern and cnaf by a
// point-to-point link of their own.
func routersVia(src, dst string) []string {
	behind := map[string]string{"cern": "r1", "cnaf": "r1", "slac": "r2", "taipei": "r2"}
	switch {
	case behind[src] == "" || behind[dst] == "":
		return nil
	case src+dst == "cerncnaf" || src+dst == "cnafcern":
		return []string{src + "->" + dst}
	case behind[src] == behind[dst]:
		return []string{"site " + src + " up", "site " + dst + " down"}
	}
	return []string{"site " + src + " up", behind[src] + "->" + behind[dst], "site " + dst + " down"}
}

// sitesVia are the directions of the four-site mesh (e2e's incidentSites).
func sitesVia(src, dst string) []string {
	return []string{"site " + src + " up", "site " + dst + " down"}
}

var meshHosts = []string{"cern", "cnaf", "slac", "taipei"}

func meshConfig(t *testing.T) *Config {
	t.Helper()
	cfg, err := Parse("mesh.yaml", []byte(`testbed: x
groups: {sites: [cern, cnaf, slac, taipei]}
tests:
  - {name: lat, type: probe, group: sites, rate: 10, summary: 10s}
alerts: {loss_above: 2%, for: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// timeline is one run of the mesh: the injection from its start for its
// length, seeded.
type timeline struct {
	via    func(src, dst string) []string
	inject []string
	seed   uint64
}

// outcome is what a timeline's incidents did: how long after the
// injection they named every injected direction (-1: never) and how long
// after its end none was open (-1: never), and the wrong segments named.
type outcome struct {
	named, ended time.Duration
	wrong        []string
}

const (
	simPeriod     = 10 * time.Second
	simProbes     = 100
	simLoss       = 0.06
	simBackground = 0.002
)

// run plays the timeline as the service does: each path's summary is
// observed as it ends, and the incidents inferred again whenever an alert
// changes, one is held or the summary's loss is above the threshold.
func (tl timeline) run(t *testing.T) outcome {
	cfg := meshConfig(t)
	d := NewDetector(cfg)
	var inc Incidents
	rng := rand.New(rand.NewPCG(tl.seed, 37))
	var paths []PathStatus
	for _, s := range meshHosts {
		for _, dst := range meshHosts {
			if s != dst {
				paths = append(paths, PathStatus{Key: PathKey{Src: s, Dst: dst, Test: "lat"}, Type: Probe, OneWayLoss: true})
			}
		}
	}
	t0 := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	from := t0.Add(6*simPeriod + time.Duration(rng.Int64N(int64(simPeriod))))
	until := from.Add(8 * simPeriod)
	lossy := func(src, dst string, at time.Time) float64 {
		p := simBackground
		if !at.Before(from) && at.Before(until) {
			for _, dir := range tl.via(src, dst) {
				if slices.Contains(tl.inject, dir) {
					p = 1 - (1-p)*(1-simLoss)
				}
			}
		}
		return p
	}
	out := outcome{named: -1, ended: -1}
	interval := simPeriod / simProbes
	for round := 1; round < 20; round++ {
		for i := range paths {
			p := &paths[i]
			end := t0.Add(time.Duration(round)*simPeriod + time.Duration(i)*simPeriod/time.Duration(len(paths)))
			var fwd, back int
			for j := range simProbes {
				sent := end.Add(-simPeriod + time.Duration(j)*interval)
				switch {
				case rng.Float64() < lossy(p.Key.Src, p.Key.Dst, sent):
					fwd++
				case rng.Float64() < lossy(p.Key.Dst, p.Key.Src, sent):
					back++
				}
			}
			p.At, p.Usable = end, true
			p.Loss = map[Name]LossCount{LossRatio: {Lost: fwd + back, Of: simProbes}, LossForward: {Lost: fwd, Of: simProbes}, LossBack: {Lost: back, Of: simProbes - fwd}}
			o := Observation{Key: p.Key, Type: Probe, At: end, Loss: p.Loss}
			fired, resolved := d.Observe(o)
			if len(fired)+len(resolved) == 0 && !inc.Pending() && !LossSuspect(o, cfg.For(p.Key.Src, p.Key.Dst).LossAbove) {
				continue
			}
			res, err := d.Infer(paths, tl.via, SourceExpected)
			if err != nil {
				t.Fatal(err)
			}
			inc.Update(res, end, cfg.Alerts.For, simPeriod)
			open := inc.Active()
			var segs [][]string
			for _, a := range open {
				segs = append(segs, a.Segment)
				if !slices.ContainsFunc(a.Segment, func(d string) bool { return slices.Contains(tl.inject, d) }) && !slices.Contains(out.wrong, a.Key) {
					out.wrong = append(out.wrong, a.Key)
				}
			}
			named := !end.Before(from) && end.Before(until) && !slices.ContainsFunc(tl.inject, func(dir string) bool {
				return !slices.ContainsFunc(segs, func(s []string) bool { return slices.Equal(s, []string{dir}) })
			})
			if named && out.named < 0 {
				out.named = end.Sub(from)
			}
			if !end.Before(until) && len(open) == 0 && out.ended < 0 {
				out.ended = end.Sub(until)
			}
		}
	}
	return out
}

// timelineCase is an injection on a mesh (none: a quiet one).
type timelineCase struct {
	mesh   string
	via    func(src, dst string) []string
	inject []string
}

func TestIncidentTimelines(t *testing.T) {
	const seeds = 8
	// Within for + 2 summary periods of the injection.
	target := time.Duration(2+2) * simPeriod
	cases := []timelineCase{
		{"sites", sitesVia, nil},
		{"routers", routersVia, nil},
	}
	for _, h := range meshHosts {
		cases = append(cases, timelineCase{"sites", sitesVia, []string{"site " + h + " down"}}, timelineCase{"sites", sitesVia, []string{"site " + h + " up"}})
	}
	for _, inj := range [][]string{
		{"site cnaf down", "site taipei down"},
		{"site cern up", "site slac down"},
		{"site cern down", "site cern up"},
	} {
		cases = append(cases, timelineCase{"sites", sitesVia, inj})
	}
	for _, inj := range [][]string{
		{"r1->r2"}, {"r2->r1"}, {"cern->cnaf"}, {"cnaf->cern"}, {"site slac down"},
		{"r1->r2", "cnaf->cern"}, {"r2->r1", "site taipei down"},
	} {
		cases = append(cases, timelineCase{"routers", routersVia, inj})
	}
	for _, c := range cases {
		name := c.mesh + ": " + strings.Join(c.inject, " + ")
		if c.inject == nil {
			name = c.mesh + ": quiet"
		}
		t.Run(name, func(t *testing.T) {
			var took []string
			for seed := range uint64(seeds) {
				o := timeline{via: c.via, inject: c.inject, seed: seed}.run(t)
				if len(o.wrong) > 0 {
					t.Errorf("seed %d: wrong segments named: %v", seed, o.wrong)
				}
				if c.inject == nil {
					continue
				}
				took = append(took, fmt.Sprintf("%.1f", o.named.Seconds()/simPeriod.Seconds()))
				if o.named < 0 || o.named > target {
					t.Errorf("seed %d: named after %v, want within %v", seed, o.named, target)
				}
				if o.ended < 0 || o.ended > target {
					t.Errorf("seed %d: every incident ended %v after the injection did, want within %v", seed, o.ended, target)
				}
			}
			t.Logf("named after %s summary periods", strings.Join(took, ", "))
		})
	}
}
