package linkemu

import (
	"math"
	"testing"
	"time"
)

// Each pattern offers its configured load: over 200 s of virtual time the
// bytes generated are within 3% of the rate (on/off: of the rate times
// the share of time on).
func TestCrossTrafficOffersItsRate(t *testing.T) {
	base := CrossConfig{Rate: 40e6, Size: 1500, Seed: 3}
	tests := []struct {
		name string
		cfg  CrossConfig
		want float64
	}{
		{"constant", with(base, func(c *CrossConfig) { c.Pattern = CrossConstant }), 40e6},
		{"poisson", with(base, func(c *CrossConfig) { c.Pattern = CrossPoisson }), 40e6},
		{"onoff", with(base, func(c *CrossConfig) { c.Pattern, c.On, c.Off = CrossOnOff, 100*time.Millisecond, 300*time.Millisecond }), 10e6},
		{"flows", with(base, func(c *CrossConfig) {
			c.Pattern, c.FlowMean, c.FlowShape, c.FlowRate = CrossFlows, 100e3, 2.5, 100e6
		}), 40e6},
	}
	const span = int64(200 * time.Second)
	for _, tt := range tests {
		g := newCrossGen(tt.cfg, 0)
		var bytes, packets float64
		last := int64(0)
		for g.at < span {
			if g.at < last {
				t.Fatalf("%s: arrivals out of order: %d after %d", tt.name, g.at, last)
			}
			last = g.at
			bytes += float64(g.size)
			packets++
			g.advance()
		}
		got := bytes * 8 / (float64(span) / 1e9)
		if math.Abs(got-tt.want)/tt.want > 0.03 {
			t.Errorf("%s: offered %.2f Mbit/s over %.0f packets, want %.2f", tt.name, got/1e6, packets, tt.want/1e6)
		}
	}
}

func with(c CrossConfig, f func(*CrossConfig)) CrossConfig { f(&c); return c }

// Cross traffic takes its share of a direction's rate and queue: below
// what is left a sender loses nothing; above it the direction carries its
// rate and no more, and drops the excess of both.
func TestCrossTrafficTakesItsShare(t *testing.T) {
	for _, tt := range []struct {
		name    string
		every   time.Duration // a real 1000-byte packet this often
		lossy   bool
		carried float64 // Mbit/s of real and cross traffic together
	}{
		{"3 Mbit/s beside 6", 2667 * time.Microsecond, false, 9},
		{"8 Mbit/s beside 6", 1000 * time.Microsecond, true, 10},
	} {
		d := newDirection(DirConfig{Rate: 10e6, QueuePackets: 50, Cross: &CrossConfig{Rate: 6e6, Size: 1000, Pattern: CrossPoisson, Seed: 1}}, &DirStats{})
		m := &model{}
		var sent, passed int
		const span = 20 * time.Second
		for t0 := int64(0); t0 < int64(span); t0 += int64(tt.every) {
			m.crossUpTo(&d, t0)
			sent++
			if _, v := d.admit(t0, 1000, nil); v == pass {
				passed++
			}
		}
		carried := (float64(passed) + float64(d.stats.CrossPackets.Load())) * 8000 / span.Seconds() / 1e6
		if dropped := sent - passed; tt.lossy != (dropped > 0) {
			t.Errorf("%s: %d of %d real packets dropped", tt.name, dropped, sent)
		}
		if math.Abs(carried-tt.carried)/tt.carried > 0.02 {
			t.Errorf("%s: the direction carried %.2f Mbit/s, want %.1f", tt.name, carried, tt.carried)
		}
	}
}
