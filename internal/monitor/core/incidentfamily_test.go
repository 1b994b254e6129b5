package core

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// familyPaths are the star's probe paths run once per family, each
// family's summaries of 100 probes losing what lost[family] says.
func familyPaths(lost map[string]func(from, to string) int) []PathStatus {
	var out []PathStatus
	for _, f := range []string{IPv4, IPv6} {
		ps := starPaths(true)
		for i := range ps {
			ps[i].Key.Family = f
		}
		l := lost[f]
		if l == nil {
			l = lossOn(0)
		}
		out = append(out, withLoss(ps, 100, l)...)
	}
	return out
}

// noOneWay follows no one-way delay: InferFamilies' loss alone.
func noOneWay() (*OneWay, func(PathKey) bool) { return NewOneWay(), func(PathKey) bool { return true } }

// unjudged leaves the IPv4 paths' latest summaries without loss counts
// (read back from an archive after a restart): usable, but no verdict.
func unjudged(paths []PathStatus) []PathStatus {
	for i := range paths {
		if paths[i].Key.Family == IPv4 {
			paths[i].Loss = nil
		}
	}
	return paths
}

// A fault only one family's traffic meets is named with that family; one
// both meet is the one incident of the segment, with none; one the other
// family's paths have not judged has no family known.
func TestInferFamilies(t *testing.T) {
	for _, c := range []struct {
		name   string
		lost   map[string]func(from, to string) int
		prep   func([]PathStatus) []PathStatus
		want   []string
		family string
		known  bool
	}{
		{"IPv6 loss into d", map[string]func(from, to string) int{IPv6: lossOn(6, "d.in")}, nil, []string{"d.in"}, IPv6, true},
		{"IPv4 loss out of a", map[string]func(from, to string) int{IPv4: lossOn(6, "a.out")}, nil, []string{"a.out"}, IPv4, true},
		{"both families' loss into d", map[string]func(from, to string) int{IPv4: lossOn(6, "d.in"), IPv6: lossOn(6, "d.in")}, nil, []string{"d.in"}, "", true},
		{"IPv6 loss into d, IPv4 not judged", map[string]func(from, to string) int{IPv6: lossOn(6, "d.in")}, unjudged, []string{"d.in"}, "", false},
		{"quiet", nil, nil, nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewDetector(starConfig(t))
			ow, usable := noOneWay()
			paths := familyPaths(c.lost)
			if c.prep != nil {
				paths = c.prep(paths)
			}
			// Infer over both families pools them apart too: an IPv6
			// fault is no fault of both.
			both, err := d.Infer(paths, starVia, SourceExpected)
			if err != nil {
				t.Fatal(err)
			}
			res, err := d.InferFamilies(paths, starVia, SourceExpected, ow, usable)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, inc := range res.Incidents {
				got = append(got, inc.Key())
				if f, known := res.Family[inc.Key()]; f != c.family || known != c.known {
					t.Errorf("%s: family %q (known %v), want %q (known %v)", inc.Key(), f, known, c.family, c.known)
				}
				for _, e := range inc.Paths {
					if c.family != "" && !strings.HasSuffix(e.Path, ", "+c.family+")") {
						t.Errorf("%s: evidence %s is not of %s", inc.Key(), e.Path, c.family)
					}
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("incidents %v, want %v (unexplained %v)", got, c.want, res.Unexplained)
			}
			if c.family != "" && c.prep == nil && len(both.Incidents) > 0 {
				t.Errorf("both families' inference named %s for a fault of %s alone", both.Incidents[0].Key(), c.family)
			}
		})
	}
}

// An incident only IPv6 shows opens so; IPv4 paths not judged leave it so;
// once both families show it, it widens to both, and does not narrow back
// while open.
func TestIncidentsFamilyWidens(t *testing.T) {
	d := NewDetector(starConfig(t))
	ow, usable := noOneWay()
	var tr Incidents
	v6 := familyPaths(map[string]func(from, to string) int{IPv6: lossOn(6, "d.in")})
	bothLossy := familyPaths(map[string]func(from, to string) int{IPv4: lossOn(6, "d.in"), IPv6: lossOn(6, "d.in")})
	var opened []Alert
	v6Unjudged := unjudged(familyPaths(map[string]func(from, to string) int{IPv6: lossOn(6, "d.in")}))
	for i, paths := range [][]PathStatus{v6, v6, v6Unjudged, bothLossy, v6} {
		res, err := d.InferFamilies(paths, starVia, SourceExpected, ow, usable)
		if err != nil {
			t.Fatal(err)
		}
		o, closed := tr.Update(res, summaryAt.Add(time.Duration(i)*10*time.Second), 2, 10*time.Second)
		opened = append(opened, o...)
		if len(closed) > 0 {
			t.Fatalf("inference %d closed %+v", i, closed)
		}
		act := tr.Active()
		switch {
		case i == 1:
			if len(opened) != 1 || opened[0].Family != IPv6 || opened[0].Scope != ScopeIPv6Only || !strings.HasPrefix(opened[0].Message, "IPv6 only") {
				t.Fatalf("opened %+v, want one IPv6-only incident", opened)
			}
			if len(act) != 1 || act[0].Family != IPv6 {
				t.Errorf("active %+v", act)
			}
		case i == 2:
			if len(act) != 1 || act[0].Family != IPv6 || act[0].Scope != ScopeIPv6Only {
				t.Errorf("inference %d: active %+v, want it still IPv6-only", i, act)
			}
		case i >= 3:
			if len(act) != 1 || act[0].Family != "" || act[0].Scope != ScopePath {
				t.Errorf("inference %d: active %+v, want the incident widened to both families", i, act)
			}
		}
	}
	if len(opened) != 1 {
		t.Errorf("opened %d incidents, want 1", len(opened))
	}
}
