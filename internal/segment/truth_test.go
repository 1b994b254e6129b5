package segment

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// The test-beds the truth is known on, as the topology names their paths
// and directions (the package itself knows nothing of it).
const (
	// starYAML is the four-site mesh (examples/monitor-sites.yaml):
	// each site's way up and way down, meeting at the core.
	starYAML = `
name: star
hosts: {cern: {site: cern}, cnaf: {site: cnaf}, slac: {site: slac}, taipei: {site: taipei}}
sites:
  cern:   {rate: 100Mbit, delay: 1ms}
  cnaf:   {rate: 50Mbit, delay: 5ms}
  slac:   {rate: 100Mbit, delay: 80ms}
  taipei: {rate: 20Mbit, delay: 150ms}
`
	// p2pYAML joins three hosts by point-to-point links.
	p2pYAML = `
name: p2p
hosts: {a: {}, b: {}, c: {}}
links:
  - {between: [a, b], rate: 100Mbit, delay: 2ms}
  - {between: [b, c], rate: 100Mbit, delay: 2ms}
  - {between: [a, c], rate: 100Mbit, delay: 2ms}
`
	// backboneYAML is a GARR-like backbone of four routers with five
	// sites hanging off it.
	backboneYAML = `
name: backbone
routing: delay
routers: {mi: {}, bo: {}, rm: {}, na: {}}
links:
  - {between: [mi, bo], rate: 155Mbit, delay: 2ms}
  - {between: [bo, rm], rate: 155Mbit, delay: 3ms}
  - {between: [rm, na], rate: 155Mbit, delay: 2ms}
  - {between: [mi, rm], rate: 622Mbit, delay: 6ms}
sites:
  cnaf:     {via: bo, rate: 1Gbit, delay: 1ms}
  torino:   {via: mi, rate: 155Mbit, delay: 2ms}
  padova:   {via: mi, rate: 155Mbit, delay: 2ms}
  bari:     {via: na, rate: 28Mbit, delay: 3ms}
  cagliari: {via: rm, rate: 8Mbit, delay: 4ms}
hosts: {cnaf: {site: cnaf}, torino: {site: torino}, padova: {site: padova}, bari: {site: bari}, cagliari: {site: cagliari}}
`
)

func paths(t *testing.T, name, text string) []topology.Path {
	t.Helper()
	f, err := scenario.Parse(name, []byte(text), false)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.New(f.Testbed)
	if err != nil {
		t.Fatal(err)
	}
	return topo.Paths
}

// inject observes every one-way path's loss: affected when it crosses a
// faulty direction. roundTrip observes the round trip instead (an older
// reflector's loss): a path then crosses its way back too.
func inject(ps []topology.Path, roundTrip bool, faulty ...string) []Observation {
	var out []Observation
	for _, p := range ps {
		dirs := p.Via
		if roundTrip {
			dirs = slices.Concat(p.Via, p.Back)
		}
		hit := slices.ContainsFunc(dirs, func(d string) bool { return slices.Contains(faulty, d) })
		out = append(out, Observation{Path: p.Name(), Dirs: dirs, Figure: "loss", Affected: hit, Source: "expected paths"})
	}
	return out
}

// crossers are, per direction, the paths crossing it, as a key.
func crossers(ps []topology.Path) map[string]string {
	by := map[string][]string{}
	for _, p := range ps {
		for _, d := range p.Via {
			by[d] = append(by[d], p.Name())
		}
	}
	out := map[string]string{}
	for d, l := range by {
		out[d] = strings.Join(l, "|")
	}
	return out
}

// TestFourSiteWayIn is the acceptance case: loss on the way into
// one site raises one incident naming that direction, with its three
// paths as the evidence.
func TestFourSiteWayIn(t *testing.T) {
	ps := paths(t, "star", starYAML)
	res, err := Infer(inject(ps, false, "site cern down"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Incidents) != 1 {
		t.Fatalf("incidents %+v: want one", res.Incidents)
	}
	inc := res.Incidents[0]
	var evidence []string
	for _, e := range inc.Paths {
		evidence = append(evidence, e.Path)
	}
	slices.Sort(evidence)
	if !slices.Equal(inc.Segment, []string{"site cern down"}) || inc.Confidence != 1 ||
		!slices.Equal(evidence, []string{"cnaf -> cern", "slac -> cern", "taipei -> cern"}) {
		t.Errorf("incident %+v: want site cern down, on the three paths into cern", inc)
	}
	// With round-trip loss only, the six paths to and from cern are hit,
	// and the way in cannot be told from the way out: both are named.
	res, err = Infer(inject(ps, true, "site cern down"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Incidents) != 1 || !slices.Equal(res.Incidents[0].Segment, []string{"site cern down", "site cern up"}) || len(res.Incidents[0].Paths) != 6 {
		t.Errorf("round trip: incidents %+v: want cern's two ways named together, on six paths", res.Incidents)
	}
}

// TestMisjudgedPaths: a path misjudged healthy leaves the best fit; a path
// misjudged affected elsewhere is left unexplained.
func TestMisjudgedPaths(t *testing.T) {
	ps := paths(t, "star", starYAML)
	o := inject(ps, false, "site cnaf down")
	for i := range o {
		switch o[i].Path {
		case "slac -> cnaf":
			o[i].Affected = false
		case "slac -> taipei":
			o[i].Affected = true
		}
	}
	res, err := Infer(o, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Incidents) != 1 || !slices.Equal(res.Incidents[0].Segment, []string{"site cnaf down"}) ||
		len(res.Incidents[0].Healthy) != 1 || res.Incidents[0].Confidence < 0.6 || res.Incidents[0].Confidence >= 1 {
		t.Errorf("incidents %+v: want site cnaf down, with one healthy crossing", res.Incidents)
	}
	if !slices.Equal(res.Unexplained, []Evidence{{"slac -> taipei", "loss"}}) {
		t.Errorf("unexplained %v: want slac -> taipei", res.Unexplained)
	}
}

// TestInjectedDirections injects loss on every direction of each test-bed
// (a site's way in and way out, a point-to-point link's one direction, a
// backbone direction), one at a time and two at once: a single injection
// is named (with the directions no path tells from it); two are both
// named whenever the paths tell them apart from every other explanation.
func TestInjectedDirections(t *testing.T) {
	for _, tb := range []struct{ name, yaml string }{{"star", starYAML}, {"p2p", p2pYAML}, {"backbone", backboneYAML}} {
		t.Run(tb.name, func(t *testing.T) {
			ps := paths(t, tb.name, tb.yaml)
			sig := crossers(ps)
			dirs := slices.Sorted(maps.Keys(sig))
			same := func(d string) []string {
				return slices.DeleteFunc(slices.Clone(dirs), func(x string) bool { return sig[x] != sig[d] })
			}
			for _, d := range dirs {
				res, err := Infer(inject(ps, false, d), Options{})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Incidents) != 1 || !slices.Equal(res.Incidents[0].Segment, same(d)) || res.Incidents[0].Confidence != 1 {
					t.Errorf("%s injected: incidents %+v, want %v", d, res.Incidents, same(d))
				}
			}
			told, pairs := 0, 0
			for i, d1 := range dirs {
				for _, d2 := range dirs[i+1:] {
					if sig[d1] == sig[d2] {
						continue
					}
					pairs++
					res, err := Infer(inject(ps, false, d1, d2), Options{})
					if err != nil {
						t.Fatal(err)
					}
					if !distinct(ps, sig, d1, d2) {
						if len(res.Incidents) == 0 || len(res.Unexplained) != 0 {
							t.Errorf("%s and %s injected: incidents %+v, unexplained %v", d1, d2, res.Incidents, res.Unexplained)
						}
						continue
					}
					told++
					var named [][]string
					for _, inc := range res.Incidents {
						named = append(named, inc.Segment)
					}
					slices.SortFunc(named, slices.Compare)
					want := [][]string{same(d1), same(d2)}
					slices.SortFunc(want, slices.Compare)
					if !slices.EqualFunc(named, want, slices.Equal) {
						t.Errorf("%s and %s injected: named %v, want %v", d1, d2, named, want)
					}
				}
			}
			t.Logf("%d directions, %d segments; %d of %d pairs of segments told apart", len(dirs), len(slices.Compact(slices.Sorted(maps.Values(sig)))), told, pairs)
		})
	}
}

// distinct says whether two faults on d1 and d2 have one explanation
// only, by brute force over the directions: no single direction crossed by
// no healthy path explains the affected paths, and no other pair does.
func distinct(ps []topology.Path, sig map[string]string, d1, d2 string) bool {
	affected := map[string]bool{}
	for _, p := range ps {
		if slices.Contains(p.Via, d1) || slices.Contains(p.Via, d2) {
			affected[p.Name()] = true
		}
	}
	covers := func(ds ...string) (all, clean bool) {
		got := map[string]bool{}
		for _, d := range ds {
			for _, p := range strings.Split(sig[d], "|") {
				if !affected[p] {
					return false, false
				}
				got[p] = true
			}
		}
		return len(got) == len(affected), true
	}
	segments := map[string]string{} // one direction per segment
	for d, s := range sig {
		if cur, ok := segments[s]; !ok || d < cur {
			segments[s] = d
		}
	}
	var reps []string
	for _, d := range segments {
		reps = append(reps, d)
	}
	n := 0
	for i, a := range reps {
		if all, clean := covers(a); all && clean {
			return false
		}
		for _, b := range reps[i+1:] {
			if all, clean := covers(a, b); all && clean {
				n++
			}
		}
	}
	return n == 1
}
