package linkemu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Cross traffic is background load made inside the engine: virtual packets
// that arrive at a direction, take their share of its rate and its queue
// like real ones, and are then forgotten. It stands for what other users'
// flows carried, so it neither backs off nor is dropped by the queue (see
// admitCross): a test flow through a direction carrying cross traffic at
// X% of its rate gets the rest. Virtual arrivals are generated lazily, in time order, before
// each real packet the direction admits (and every few milliseconds when
// none comes), which gives the queue exactly the state it would have had.

// CrossPattern is how cross traffic's packets arrive.
type CrossPattern uint8

// Cross traffic patterns.
const (
	// Poisson arrivals at the mean rate.
	CrossPoisson CrossPattern = iota
	// Constant spacing at the rate.
	CrossConstant
	// OnOff sends at the rate during on periods and nothing during off
	// periods, each of exponential length with the given means.
	CrossOnOff
	// Flows arrive as a Poisson process, each of a Pareto-distributed size
	// (heavy-tailed: most are small, a few carry most bytes), sent at
	// FlowRate; the mean offered load is the rate.
	CrossFlows
)

// CrossPatterns names the patterns as scenarios write them.
var CrossPatterns = map[string]CrossPattern{"poisson": CrossPoisson, "constant": CrossConstant, "onoff": CrossOnOff, "flows": CrossFlows}

// CrossConfig is a direction's cross traffic.
type CrossConfig struct {
	Rate    float64 // bit/s: the mean, or the rate while on
	Pattern CrossPattern
	Size    int // bytes per packet
	// On and Off are the mean lengths of the on/off periods.
	On, Off time.Duration
	// FlowMean is the mean flow size in bytes and FlowShape the Pareto
	// shape (above 1; 1.2 is web-like); FlowRate is each flow's rate.
	FlowMean, FlowShape, FlowRate float64
	Seed                          uint64
}

func (c *CrossConfig) check() error {
	switch {
	case c == nil:
		return nil
	case !(c.Rate > 0 && c.Rate <= MaxRate) || c.Size < 20 || c.Size > 65535:
		return fmt.Errorf("cross traffic: rate %v and packet size %d", c.Rate, c.Size)
	case c.Pattern == CrossOnOff && (c.On <= 0 || c.Off <= 0):
		return fmt.Errorf("cross traffic: on/off needs both mean times")
	case c.Pattern == CrossFlows && (!(c.FlowShape > 1) || !(c.FlowMean >= float64(c.Size)) || !(c.FlowRate > 0 && c.FlowRate <= MaxRate)):
		return fmt.Errorf("cross traffic: flows need a shape above 1, a mean of at least a packet and a rate")
	}
	return nil
}

// crossGen makes a direction's virtual arrivals.
type crossGen struct {
	cfg  CrossConfig
	rng  *rand.Rand
	at   int64 // the next arrival
	size int
	// on/off: when the current period ends, and whether it is on.
	switchAt int64
	on       bool
	// flows: the next flow's arrival, and those sending.
	nextFlow int64
	flows    []crossFlow
}

type crossFlow struct {
	next int64
	left float64 // bytes
}

// gap is the time to send n bytes at rate bit/s.
func gap(n int, rate float64) int64 { return int64(float64(n) * 8e9 / rate) }

func newCrossGen(c CrossConfig, now int64) *crossGen {
	g := &crossGen{cfg: c, rng: rand.New(rand.NewPCG(c.Seed, c.Seed^0x2545f4914f6cdd1d)), size: c.Size}
	mean := float64(gap(c.Size, c.Rate))
	switch c.Pattern {
	case CrossConstant:
		g.at = now + g.rng.Int64N(max(1, int64(mean)))
	case CrossPoisson:
		g.at = now + int64(g.rng.ExpFloat64()*mean)
	case CrossOnOff:
		g.on = true
		g.switchAt = now + g.exp(c.On)
		g.at = now
	case CrossFlows:
		g.nextFlow = now + g.flowGap()
		g.at = g.nextFlow
		g.advance()
	}
	return g
}

func (g *crossGen) exp(mean time.Duration) int64 {
	return max(1, int64(g.rng.ExpFloat64()*float64(mean)))
}

// flowGap is the time to the next flow: flows of the mean size arriving at
// this rate offer the configured load.
func (g *crossGen) flowGap() int64 {
	perFlow := g.cfg.FlowMean * 8e9 / g.cfg.Rate
	return max(1, int64(g.rng.ExpFloat64()*perFlow))
}

// pareto draws a flow size of the configured mean and shape.
func (g *crossGen) pareto() float64 {
	a := g.cfg.FlowShape
	xm := g.cfg.FlowMean * (a - 1) / a
	return xm / math.Pow(1-g.rng.Float64(), 1/a)
}

// advance moves to the next virtual arrival.
func (g *crossGen) advance() {
	c := &g.cfg
	switch c.Pattern {
	case CrossConstant:
		g.at += gap(g.size, c.Rate)
	case CrossPoisson:
		g.at += max(1, int64(g.rng.ExpFloat64()*float64(gap(g.size, c.Rate))))
	case CrossOnOff:
		g.at += gap(g.size, c.Rate)
		for g.at >= g.switchAt {
			if g.on {
				// Off until the next on period, which starts sending at once.
				g.at = g.switchAt + g.exp(c.Off)
				g.switchAt = g.at + g.exp(c.On)
			} else {
				g.switchAt += g.exp(c.On)
			}
		}
	case CrossFlows:
		g.nextFlowPacket()
	}
}

// nextFlowPacket picks the earliest packet among the flows sending and the
// next flow to arrive.
func (g *crossGen) nextFlowPacket() {
	for {
		first := -1
		for i, f := range g.flows {
			if first < 0 || f.next < g.flows[first].next {
				first = i
			}
		}
		if first < 0 || g.nextFlow <= g.flows[first].next {
			g.flows = append(g.flows, crossFlow{next: g.nextFlow, left: g.pareto()})
			g.nextFlow += g.flowGap()
			continue
		}
		f := &g.flows[first]
		g.at = f.next
		g.size = int(min(float64(g.cfg.Size), math.Ceil(f.left)))
		f.left -= float64(g.size)
		f.next += gap(g.size, g.cfg.FlowRate)
		if f.left <= 0 {
			g.flows[first] = g.flows[len(g.flows)-1]
			g.flows = g.flows[:len(g.flows)-1]
		}
		return
	}
}

// crossUpTo admits direction d's virtual arrivals until t.
func (m *model) crossUpTo(d *direction, t int64) {
	g := d.cross
	for g.at <= t {
		if d.admitCross(g.at, g.size) {
			d.stats.CrossPackets.Add(1)
			d.stats.CrossBytes.Add(uint64(g.size))
		} else {
			d.stats.CrossDrops.Add(1)
		}
		g.advance()
	}
}
