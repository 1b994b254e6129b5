package twin

import (
	"testing"
	"time"
)

func TestLossRuns(t *testing.T) {
	// lost marks the probes whose reply never came; reflected says the
	// reflector numbered the ones that came back.
	round := func(from, to string, lost string, numbered bool) ProbeRound {
		r := ProbeRound{From: from, To: to}
		count := uint32(0)
		for i, c := range lost {
			p := Probe{Sent: t0.Add(time.Duration(i) * 10 * time.Millisecond), Lost: c == 'x'}
			if !p.Lost {
				count++
				if numbered {
					p.ReflectorCount = count
				}
			}
			r.Probes = append(r.Probes, p)
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		c        Campaign
		from, to string
		want     LossCount
	}{
		{"one way, forward", Campaign{Probes: []ProbeRound{round("a", "b", "..xx..x...", true)}}, "a", "b", LossCount{Lost: 3, Sent: 10, Runs: 2, OneWay: true}},
		{"one way, the other way sees none", Campaign{Probes: []ProbeRound{round("a", "b", "..xx..x...", true)}}, "b", "a", LossCount{Lost: 0, Sent: 7, Runs: 0, OneWay: true}},
		{"round trip", Campaign{Probes: []ProbeRound{round("a", "b", "x.xxx.", false)}}, "b", "a", LossCount{Lost: 4, Sent: 6, Runs: 2}},
		{"loads' before rounds count", Campaign{Loads: []LoadTest{{Before: round("a", "b", "xx..", true)}}}, "a", "b", LossCount{Lost: 2, Sent: 4, Runs: 1, OneWay: true}},
		{"other hosts", Campaign{Probes: []ProbeRound{round("a", "c", "xx..", true)}}, "a", "b", LossCount{OneWay: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.LossRuns(tc.from, tc.to); got != tc.want {
				t.Errorf("LossRuns = %+v, want %+v", got, tc.want)
			}
		})
	}
	if l := (LossCount{Lost: 6, Sent: 100, Runs: 2}); l.Rate() != 0.06 || l.MeanBurst() != 3 {
		t.Errorf("rate %g, burst %g; want 0.06 and 3", l.Rate(), l.MeanBurst())
	}
	if l := (LossCount{}); l.Rate() != 0 || l.MeanBurst() != 0 {
		t.Errorf("none: rate %g, burst %g; want 0", l.Rate(), l.MeanBurst())
	}
}
