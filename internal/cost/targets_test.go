package cost

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// Toward a target (a far end that runs no agent): an iperf3 server's
// measured throughput predicts as a host's; a STAMP or ping target gives
// the TCP model of its round trips and loss, and every prediction says
// what it cannot know of the far end.
func TestPredictTargets(t *testing.T) {
	probes := Evidence{RTT: 100 * time.Millisecond, Loss: 0.01, Probes: 1000, ProbesAt: now}
	cases := []struct {
		name      string
		ev        Evidence
		disk      bool
		rate      float64
		certainty string
		cannot    []string
	}{
		{"iperf3, memory to memory: as a host", Evidence{Target: TargetIperf3, Throughput: samples(619e6, 600e6, 630e6), RTT: 170 * time.Millisecond},
			false, 619e6, "high", nil},
		{"iperf3, disk to disk: no far-end disk", Evidence{Target: TargetIperf3, Throughput: samples(619e6, 600e6, 630e6), RTT: 170 * time.Millisecond, SrcRead: samples(900e6)},
			true, 619e6, "medium", []string{"the far end's disk"}},
		{"stamp: the TCP model, no throughput", Evidence{Target: TargetSTAMP, RTT: probes.RTT, Loss: probes.Loss, Probes: probes.Probes, ProbesAt: now},
			false, 1448 * 8 / 0.1 * math.Sqrt(150), "low", []string{"measured throughput", "the far end's CPU"}},
		{"ping, disk to disk", Evidence{Target: TargetPing, RTT: probes.RTT, Loss: probes.Loss, Probes: probes.Probes, ProbesAt: now},
			true, 1448 * 8 / 0.1 * math.Sqrt(150), "low", []string{"measured throughput", "the far end's CPU", "the far end's disk"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.ev.Src, c.ev.Dst = "a", "far"
			p, err := Predict(c.ev, 1e9, c.disk, now)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.RateBitsPerSecond-c.rate)/c.rate > 1e-9 || p.Certainty != c.certainty || !slices.Equal(p.CannotPredict, c.cannot) || p.Target != c.ev.Target {
				t.Errorf("rate %g certainty %s cannot %q target %q; want %g, %s, %q", p.RateBitsPerSecond, p.Certainty, p.CannotPredict, p.Target, c.rate, c.certainty, c.cannot)
			}
			for _, what := range c.cannot {
				if !slices.ContainsFunc(p.Caveats, func(s string) bool { return strings.HasPrefix(s, "cannot predict "+what+": ") }) {
					t.Errorf("caveats %q do not say it cannot predict %s", p.Caveats, what)
				}
			}
			if slices.ContainsFunc(p.Caveats, func(s string) bool { return strings.HasPrefix(s, "no disk test of far") }) {
				t.Errorf("caveats %q: a target's disk is said once", p.Caveats)
			}
		})
	}
}
