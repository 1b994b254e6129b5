package segment

import (
	"slices"
	"strconv"
	"testing"
)

// FuzzInfer checks what any input gives: every incident's evidence
// crosses its whole segment and was judged as the incident says, its
// confidence is within (0, 1], and every affected path is explained or
// listed as unexplained.
func FuzzInfer(f *testing.F) {
	f.Add([]byte{1, 3, 1, 6, 0, 2, 0x81, 1, 0x80, 1}, uint8(1))
	f.Add([]byte{1, 1, 1, 2, 1, 4, 0, 7}, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, faults uint8) {
		// Two bytes a path: its figure (top bit) and verdict (low bit),
		// then which of eight directions it crosses.
		var obs []Observation
		for i := 0; i+1 < len(data) && len(obs) < 64; i += 2 {
			var dirs []string
			for d := range 8 {
				if data[i+1]&(1<<d) != 0 {
					dirs = append(dirs, string(rune('a'+d)))
				}
			}
			obs = append(obs, Observation{Path: strconv.Itoa(len(obs)), Dirs: dirs, Figure: []string{"loss", "delay"}[data[i]>>7],
				Affected: data[i]&1 == 1, Source: "fuzz"})
		}
		res, err := Infer(obs, Options{MaxFaults: int(faults%3) + 1, MaxSearch: 1000})
		if err != nil {
			t.Fatal(err)
		}
		find := func(e Evidence) Observation {
			i := slices.IndexFunc(obs, func(o Observation) bool { return o.Path == e.Path && o.Figure == e.Figure })
			if i < 0 {
				t.Fatalf("evidence %v is no observation", e)
			}
			return obs[i]
		}
		explained := map[Evidence]bool{}
		for _, inc := range res.Incidents {
			if len(inc.Segment) == 0 || inc.Confidence <= 0 || inc.Confidence > 1 {
				t.Errorf("incident %+v", inc)
			}
			for _, e := range inc.Paths {
				o := find(e)
				if !o.Affected || slices.ContainsFunc(inc.Segment, func(d string) bool { return !slices.Contains(o.Dirs, d) }) {
					t.Errorf("incident %v: evidence %+v does not fit", inc.Segment, o)
				}
				explained[e] = true
			}
			for _, e := range inc.Healthy {
				if o := find(e); o.Affected {
					t.Errorf("incident %v: healthy %+v is affected", inc.Segment, o)
				}
			}
		}
		for _, e := range res.Unexplained {
			explained[e] = true
		}
		for _, o := range obs {
			if o.Affected && !explained[Evidence{o.Path, o.Figure}] {
				t.Errorf("affected %+v neither explained nor unexplained", o)
			}
		}
	})
}
