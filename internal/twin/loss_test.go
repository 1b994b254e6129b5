package twin

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestOneWayLosses(t *testing.T) {
	// got builds probes from a pattern: '.' a reply with the count c
	// given in counts, 'x' no reply.
	got := func(pattern string, counts ...uint32) []Probe {
		var ps []Probe
		k := 0
		for _, ch := range pattern {
			if ch == 'x' {
				ps = append(ps, Probe{Lost: true})
				continue
			}
			ps = append(ps, Probe{ReflectorCount: counts[k]})
			k++
		}
		return ps
	}
	for _, tc := range []struct {
		name      string
		probes    []Probe
		out, back string
		ok        bool
	}{
		{"no loss", got("...", 1, 2, 3), "___", "___", true},
		{"lost out", got(".xx.", 1, 2), "_XX_", "__", true},
		{"lost back", got(".xx.", 1, 4), "____", "_XX_", true},
		// Of two lost, one reached the reflector: the one lost on the way
		// out is taken to be the first.
		{"one each", got(".xx.", 1, 3), "_X__", "_X_", true},
		{"trailing unknown", got("..xx", 1, 2), "__", "__", true},
		{"unnumbered", []Probe{{}, {Lost: true}}, "", "", false},
		{"no reply", got("xx"), "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, back, ok := oneWayLosses(tc.probes)
			str := func(bs []bool) string {
				s := ""
				for _, b := range bs {
					s += map[bool]string{true: "X", false: "_"}[b]
				}
				return s
			}
			if ok != tc.ok || ok && (str(out) != tc.out || str(back) != tc.back) {
				t.Errorf("out %q back %q ok %v, want %q %q %v", str(out), str(back), ok, tc.out, tc.back, tc.ok)
			}
		})
	}
}

func TestFitLossRuns(t *testing.T) {
	gen := func(seed uint64, n int, next func(r *rand.Rand, prev bool) bool) [][]bool {
		r := rand.New(rand.NewPCG(seed, 1))
		s := make([]bool, n)
		prev := false
		for i := range s {
			s[i] = next(r, prev)
			prev = s[i]
		}
		return [][]bool{s}
	}
	bern := func(p float64) func(*rand.Rand, bool) bool {
		return func(r *rand.Rand, _ bool) bool { return r.Float64() < p }
	}
	ge := func(p, q float64) func(*rand.Rand, bool) bool {
		return func(r *rand.Rand, bad bool) bool {
			if bad {
				return r.Float64() >= q
			}
			return r.Float64() < p
		}
	}
	for _, tc := range []struct {
		name    string
		seqs    [][]bool
		model   string
		decided bool
		p, r    float64
	}{
		{"bernoulli 2%", gen(1, 5000, bern(0.02)), Bernoulli, true, 0, 0},
		{"gilbert-elliott", gen(2, 5000, ge(0.005, 0.2)), GilbertElliott, true, 0.005, 0.2},
		{"long bursts", gen(3, 5000, ge(0.002, 0.05)), GilbertElliott, true, 0.002, 0.05},
		{"no loss", gen(4, 1000, bern(0)), Bernoulli, false, 0, 0},
		{"few losses", gen(5, 300, bern(0.01)), Bernoulli, false, 0, 0},
		{"none", nil, Bernoulli, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fitLossRuns(tc.seqs)
			if f.model != tc.model || f.decided != tc.decided {
				t.Fatalf("model %s decided %v (%s), want %s %v", f.model, f.decided, f.why, tc.model, tc.decided)
			}
			if tc.model == GilbertElliott && (tc.p < f.pLo || tc.p > f.pHi || tc.r < f.rLo || tc.r > f.rHi) {
				t.Errorf("p %g in %g-%g, r %g in %g-%g: truth %g %g", f.p, f.pLo, f.pHi, f.r, f.rLo, f.rHi, tc.p, tc.r)
			}
			if f.low > f.rate || f.high < f.rate {
				t.Errorf("rate %g outside its interval %g-%g", f.rate, f.low, f.high)
			}
		})
	}
}

func TestSteps(t *testing.T) {
	noisy := func(seed uint64, levels ...float64) []float64 {
		r := rand.New(rand.NewPCG(seed, 2))
		var out []float64
		for _, l := range levels {
			for range 10 {
				out = append(out, l+0.0001*r.NormFloat64())
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		vs   []float64
		sig  func(a, b []float64) bool
		want []int
	}{
		{"flat", noisy(1, 0.05, 0.05), routeStep, nil},
		{"one step", noisy(2, 0.05, 0.07), routeStep, []int{10}},
		{"two steps", noisy(3, 0.05, 0.07, 0.03), routeStep, []int{10, 20}},
		{"small", noisy(4, 0.05, 0.0502), routeStep, nil},
		{"rate step", []float64{100, 101, 99, 50, 51, 49}, rateStep, []int{3}},
		{"rate overlap", []float64{100, 80, 99, 85, 98, 84}, rateStep, nil},
		{"too short", []float64{100, 50}, rateStep, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := steps(tc.vs, tc.sig); !slices.Equal(got, tc.want) {
				t.Errorf("steps at %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTwoLevels(t *testing.T) {
	for _, tc := range []struct {
		name string
		vs   []float64
		ok   bool
		rate float64
	}{
		{"onoff", []float64{0, 60, 1, 59, 0, 61, 2, 60}, true, 60},
		{"one level", []float64{30, 28, 33, 31, 29, 30}, false, 0},
		{"spread", []float64{10, 20, 30, 40, 50, 60}, false, 0},
		{"too few", []float64{0, 60, 0}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rate, ok := twoLevels(tc.vs, 100)
			if ok != tc.ok || ok && !within(rate, tc.rate, 0.05, 0) {
				t.Errorf("two levels %v at %g, want %v at %g", ok, rate, tc.ok, tc.rate)
			}
		})
	}
}

// TestOddCampaigns: campaigns of odd shapes fit without failing, and
// write scenarios that load.
func TestOddCampaigns(t *testing.T) {
	lost := ProbeRound{From: "a", To: "b", Size: 64, Probes: []Probe{{Sent: t0, Lost: true}, {Sent: t0, Lost: true}}}
	one := ProbeRound{From: "b", To: "a", Size: 64, Probes: []Probe{{Sent: t0, RTT: 2e6, Forward: 1e6, Back: 1e6, ReflectorCount: 1}}}
	other := ProbeRound{From: "a", To: "c", Size: 64, Probes: []Probe{{Sent: t0, RTT: 2e6, Forward: 1e6, Back: 1e6, ReflectorCount: 1}}}
	for _, c := range []Campaign{
		{A: "a", B: "b", Probes: []ProbeRound{lost}},
		{A: "a", B: "b", Probes: []ProbeRound{one}},
		{A: "a", B: "b", Probes: []ProbeRound{other}},
		{A: "a", B: "b", Available: []RateSample{{From: "a", To: "b", BPS: 5e6}}},
		{A: "a", B: "b", Loads: []LoadTest{{LoadFrom: "a", LoadTo: "b", Before: one, During: one}}},
		{A: "a", B: "b", MTUs: []MTU{{From: "a", To: "b", Bytes: 100}}},
	} {
		tw, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		loadsScenario(t, tw)
	}
}

func TestHopChanges(t *testing.T) {
	tr := func(at int, hops ...string) Trace {
		return Trace{From: "a", To: "b", At: t0.Add(time.Duration(at) * time.Second), Hops: hops, Reached: true}
	}
	for _, tc := range []struct {
		name   string
		traces []Trace
		notes  int
	}{
		{"same", []Trace{tr(0, "r1", "r2", "b"), tr(60, "r1", "r2", "b")}, 0},
		{"silent hop", []Trace{tr(0, "r1", "*", "b"), tr(60, "r1", "r2", "b")}, 0},
		{"other hop", []Trace{tr(60, "r1", "r3", "b"), tr(0, "r1", "r2", "b")}, 1},
		{"longer", []Trace{tr(0, "r1", "b"), tr(60, "r1", "r2", "b")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hopChanges(Campaign{A: "a", B: "b", Traces: tc.traces}); len(got) != tc.notes {
				t.Errorf("notes %q, want %d", got, tc.notes)
			}
		})
	}
}
