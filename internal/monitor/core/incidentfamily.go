package core

import (
	"slices"

	"github.com/wanlab/wanlab/internal/segment"
)

// Incidents of one address family. A test run once per family (issue 36)
// gives each pair an IPv4 and an IPv6 path over the same directions as
// the topology knows them; a fault that only one family's traffic meets
// (its route or a filter of its own) leaves the other family's paths
// healthy across the very segment at fault, and an inference over both
// rules the segment out. InferFamilies then infers each family's paths
// alone as well, and names a segment that only one family's inference
// finds, and that no incident of both overlaps, with that family.

// InferFamilies is Infer over all the paths, with the one-way delays'
// observations of ow (OneWay.Segments) of the paths usable says, and,
// where both address families' runs of a test are usable
// (PathKey.Family), over each family's alone. Inference.Family then says
// what is known of each incident's family, by its key: f for one only
// family f's inference finds (added to the result: the inference over
// all ruled it out, so the other family's paths cross it healthy); ""
// for one each family's inference finds as well. An incident of neither
// kind (the other family's paths cross it, but none has been judged)
// is not in the map: its family is not known.
func (d *Detector) InferFamilies(paths []PathStatus, via func(src, dst string) []string, source string, ow *OneWay, usable func(PathKey) bool) (Inference, error) {
	more := func(family string) []segment.Observation {
		return ow.Segments(func(k PathKey) bool { return usable(k) && (family == "" || k.Family == family) }, via, source)
	}
	res, err := d.Infer(paths, via, source, more("")...)
	if err != nil {
		return res, err
	}
	// Only where both families' runs are usable does one family's
	// inference tell a fault the other's traffic does not meet.
	groups := map[string]bool{}
	for _, p := range paths {
		if p.Usable {
			groups[p.Key.Family] = true
		}
	}
	if !groups[IPv4] || !groups[IPv6] {
		return res, nil
	}
	all := len(res.Incidents)
	res.Family = map[string]string{}
	seen := make([]int, all) // which families' inferences found each of all's (bits)
	for bit, f := range []string{IPv4, IPv6} {
		var own []PathStatus
		for _, p := range paths {
			if p.Key.Family == f {
				own = append(own, p)
			}
		}
		fr, err := d.Infer(own, via, source, more(f)...)
		if err != nil {
			return res, err
		}
		for _, inc := range fr.Incidents {
			i := slices.IndexFunc(res.Incidents, func(o segment.Incident) bool { return overlaps(o.Segment, inc.Segment) })
			switch {
			case i < 0:
				res.Incidents = append(res.Incidents, inc)
				res.Family[inc.Key()] = f
			case i < all:
				seen[i] |= 1 << bit
			}
		}
		res.Lingering = append(res.Lingering, fr.Lingering...)
	}
	for i, inc := range res.Incidents[:all] {
		if seen[i] == 3 {
			res.Family[inc.Key()] = ""
		}
	}
	return res, nil
}

// overlaps says whether two segments share a direction.
func overlaps(a, b []string) bool {
	return slices.ContainsFunc(a, func(d string) bool { return slices.Contains(b, d) })
}

// familyScope is the scope of an incident that only family's paths show
// ("" for one both show).
func familyScope(family string) string {
	switch family {
	case IPv4:
		return ScopeIPv4Only
	case IPv6:
		return ScopeIPv6Only
	}
	return ""
}
