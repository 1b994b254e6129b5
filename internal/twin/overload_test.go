package twin

import (
	"strings"
	"testing"
	"time"
)

// The loads above the capacity, and the loads that were not.
func TestOverloadJudged(t *testing.T) {
	base := truth{seed: 21, mtu: 1500, dir: [2]dirTruth{
		{rate: 50e6, delay: 0.02, jitter: 0.1e-3, queue: 2, loss: 0.01, cross: 0.2},
		{rate: 50e6, delay: 0.02, jitter: 0.1e-3, queue: 1}}}
	for _, tc := range []struct {
		name string
		// change alters the forward load of the synthetic campaign.
		change func(l *LoadTest)
		// atLeast: the queue is a lower bound; trains: the cross traffic
		// comes from the available-bandwidth samples.
		atLeast, trains bool
	}{
		{name: "overloaded"},
		{name: "sender fell short", atLeast: true, trains: true, change: func(l *LoadTest) {
			l.SentBPS = l.ThroughputBPS / (1 - 0.01) * 1.02
		}},
		{name: "still filling", atLeast: true, change: func(l *LoadTest) {
			// The delays grow to the end: a queue filling slower than the load lasted.
			first := l.During.Probes[0].Sent
			for k, p := range l.During.Probes {
				if !p.Lost {
					grow := time.Duration(float64(p.Sent.Sub(first)) * 0.02)
					l.During.Probes[k].RTT += grow
					l.During.Probes[k].Forward += grow
				}
			}
		}},
		{name: "nothing got through", atLeast: true, trains: true, change: func(l *LoadTest) { l.ThroughputBPS = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := campaignOf(base)
			if tc.change != nil {
				for k := range c.Loads {
					if c.Loads[k].LoadFrom == "a" {
						tc.change(&c.Loads[k])
					}
				}
			}
			tw, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			q, x := tw.Forward.Evidence[KeyQueue], tw.Forward.Evidence[KeyCross]
			if q.AtLeast != tc.atLeast {
				t.Errorf("queue %.0f B, at least %v, want %v: %s", q.Value, q.AtLeast, tc.atLeast, q.Evidence)
			}
			if fromTrains := strings.Contains(x.Evidence, "pathload"); fromTrains != tc.trains {
				t.Errorf("cross traffic from the trains %v, want %v: %s", fromTrains, tc.trains, x.Evidence)
			}
			if !tc.atLeast && !within(q.Value, base.queueBytes(0), 0.25, 0) {
				t.Errorf("queue %.0f B, truth %.0f", q.Value, base.queueBytes(0))
			}
			if want := 0.2 * 50e6; !within(tw.Forward.CrossBPS, want, 0, 0.1*50e6) {
				t.Errorf("cross traffic %.4g bit/s, truth %.4g", tw.Forward.CrossBPS, want)
			}
		})
	}
}
