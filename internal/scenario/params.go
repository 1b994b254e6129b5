package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// dirChecker reads a link direction's settings (a site's, a link's, an
// event's or a testbed set's) over what the direction has: rate, delay,
// loss, queue, routers, cross traffic and traces.
type dirChecker struct {
	*fieldChecker
	// dir is the scenario's folder, which files it names are relative to.
	dir string
	// stored says the scenario is a run's copy from the archive: the
	// files it names are not read (they may have gone since).
	stored bool
}

// override applies the per-direction fields in raw over base.
func (v *dirChecker) override(field string, raw *rawParams, base Direction) Direction {
	if raw == nil {
		return v.finish(field, base, false)
	}
	return v.params(field, *raw, base, true)
}

// params reads raw over base. When final is false the queue default is left
// for finish, so that a direction's own rate and delay size it.
func (v *dirChecker) params(field string, raw rawParams, d Direction, final bool) Direction {
	if raw.Rate != "" {
		r, err := units.ParseRate(raw.Rate)
		switch {
		case err != nil:
			v.fail(field+".rate", "%v", err)
		case r < MinRate:
			v.fail(field+".rate", "%s is below the minimum of %s (omit rate for an unlimited link)", raw.Rate, MinRate)
		case r > MaxRate:
			v.fail(field+".rate", "%s is above the maximum of %s", raw.Rate, MaxRate)
		default:
			d.Rate = r
		}
	}
	v.delay(field+".delay", raw.Delay, &d.Delay)
	v.delay(field+".jitter", raw.Jitter, &d.Jitter)
	if raw.MTU != nil {
		if *raw.MTU < MinMTU || *raw.MTU > MaxMTU {
			v.fail(field+".mtu", "%d is outside %d..%d", *raw.MTU, MinMTU, MaxMTU)
		} else {
			d.MTU = *raw.MTU
		}
	}
	if raw.Reorder != nil {
		d.Reorder = *raw.Reorder
	}
	if raw.Down != nil {
		d.Down = *raw.Down
	}
	if raw.Blackhole != nil {
		d.Blackhole = *raw.Blackhole
	}
	if raw.Hops != nil || raw.hopsSet {
		d.Hops = v.hops(field+".hops", raw.Hops)
	}
	if raw.Loss.set {
		d.Loss = v.loss(field+".loss", raw.Loss)
	}
	if raw.Trace != nil {
		d.Trace = v.trace(field+".trace", *raw.Trace, &d)
	}
	switch {
	case raw.crossOff:
		d.Cross = nil
	case raw.Cross != nil:
		d.Cross = v.cross(field+".cross", *raw.Cross, d)
	}
	if raw.Queue != "" {
		d.Queue = v.queue(field+".queue", raw.Queue)
	}
	if !final {
		return d
	}
	return v.finish(field, d, raw.Queue != "")
}

// cross reads a direction's cross traffic over what it has.
func (v *dirChecker) cross(field string, raw rawCross, d Direction) *Cross {
	c := &Cross{Pattern: "poisson", Size: min(d.MTU, DefaultMTU), On: time.Second, Off: time.Second, FlowMean: 1e6, FlowShape: 1.2}
	if d.Cross != nil {
		*c = *d.Cross
	}
	if raw.Rate != "" {
		r, err := units.ParseRate(raw.Rate)
		switch {
		case err != nil:
			v.fail(field+".rate", "%v", err)
		case r < MinRate || r > MaxRate:
			v.fail(field+".rate", "%s: give a rate from %s to %s (cross=none, or no cross:, for none)", raw.Rate, MinRate, MaxRate)
		default:
			c.Rate = r
		}
	}
	if raw.Pattern != "" {
		if !slices.Contains(CrossPatterns, raw.Pattern) {
			v.fail(field+".pattern", "%q: cross traffic arrives as %s", raw.Pattern, strings.Join(CrossPatterns, ", "))
		}
		c.Pattern = raw.Pattern
	}
	if raw.Size != "" {
		z, err := units.ParseSize(raw.Size)
		if err != nil || z < 64 || int(z) > d.MTU {
			v.fail(field+".size", "%q: give a packet size from 64B to the MTU (%d)", raw.Size, d.MTU)
		}
		c.Size = int(z)
	}
	v.delay(field+".on", raw.On, &c.On)
	v.delay(field+".off", raw.Off, &c.Off)
	if raw.FlowMean != "" {
		z, err := units.ParseSize(raw.FlowMean)
		if err != nil || int64(z) < int64(c.Size) {
			v.fail(field+".flow_mean", "%q: give a mean flow size of at least one packet, as 1MB", raw.FlowMean)
		}
		c.FlowMean = int64(z)
	}
	if raw.FlowShape != nil {
		if !(*raw.FlowShape > 1 && *raw.FlowShape <= 10) {
			v.fail(field+".flow_shape", "%v: the Pareto shape of flow sizes is above 1 (1.2 is heavy-tailed, web-like) and at most 10", *raw.FlowShape)
		}
		c.FlowShape = *raw.FlowShape
	}
	if raw.FlowRate != "" {
		r, err := units.ParseRate(raw.FlowRate)
		if err != nil || r < MinRate || r > MaxRate {
			v.fail(field+".flow_rate", "%q: give each flow's rate, as 100Mbit", raw.FlowRate)
		}
		c.FlowRate = r
	}
	switch {
	case c.Rate == 0:
		v.fail(field+".rate", "cross traffic needs its rate, as rate: 40Mbit")
	case d.Rate == 0:
		v.fail(field, "cross traffic shares a link's rate, and this direction has none (give it rate:)")
	case c.Pattern == "onoff" && (c.On <= 0 || c.Off <= 0):
		v.fail(field, "onoff cross traffic needs on and off mean times above 0")
	case c.FlowRate == 0:
		c.FlowRate = d.Rate
	}
	return c
}

// hops reads a direction's routers.
func (v *dirChecker) hops(field string, raw []string) []Hop {
	if len(raw) > MaxHops {
		v.fail(field, "%d routers: at most %d fit in a direction", len(raw), MaxHops)
		return nil
	}
	var out []Hop
	for i, s := range raw {
		h, err := ParseHop(s)
		if err != nil {
			v.fail(fmt.Sprintf("%s[%d]", field, i), "%v", err)
			continue
		}
		out = append(out, h)
	}
	return out
}

// delay parses a delay or jitter into into, if set: at most MaxDelay.
func (v *dirChecker) delay(field, raw string, into *time.Duration) {
	if raw == "" {
		return
	}
	switch x, err := units.ParseDuration(raw); {
	case err != nil:
		v.fail(field, "%v", err)
	case x > MaxDelay:
		v.fail(field, "%s is above the maximum of %v", raw, MaxDelay)
	default:
		*into = x
	}
}

// finish fills the default queue and checks the queue against the MTU.
func (v *dirChecker) finish(field string, d Direction, queueSet bool) Direction {
	if d.Queue == (Queue{}) {
		d.Queue = DefaultQueue(d.Rate, d.Delay, d.MTU)
		return d
	}
	if d.Queue.Bytes > 0 && d.Queue.Bytes < int64(d.MTU) {
		f := field + ".queue"
		if !queueSet {
			f = strings.TrimSuffix(strings.TrimSuffix(field, ".forward"), ".reverse")
			f = strings.TrimSuffix(strings.TrimSuffix(f, ".up"), ".down") + ".queue"
		}
		v.fail(f, "%s is smaller than one packet of MTU %d bytes", units.Size(d.Queue.Bytes), d.MTU)
	}
	return d
}

func (v *dirChecker) queue(field, s string) Queue {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		if n < 1 {
			v.fail(field, "%d packets: a queue holds at least one packet", n)
			return Queue{}
		}
		return Queue{Packets: n}
	}
	z, err := units.ParseSize(s)
	if err != nil {
		v.fail(field, "%v (a bare number is a count of packets)", err)
		return Queue{}
	}
	if z == 0 {
		v.fail(field, "a queue of 0 bytes holds no packet")
		return Queue{}
	}
	return Queue{Bytes: int64(z)}
}

func (v *dirChecker) loss(field string, raw rawLoss) Loss {
	if raw.Gilbert == nil {
		p, err := units.ParsePercent(raw.Random)
		if err != nil {
			v.fail(field, "%v", err)
		}
		return Loss{Random: p}
	}
	if m := raw.Gilbert["model"]; m != "gilbert-elliott" {
		v.fail(field+".model", "%q: the only loss model with parameters is gilbert-elliott", m)
		return Loss{}
	}
	pct := func(key, def string) float64 {
		s, ok := raw.Gilbert[key]
		if !ok {
			if def == "" {
				v.fail(field+"."+key, "missing: gilbert-elliott needs p and r")
				return 0
			}
			s = def
		}
		x, err := units.ParsePercent(s)
		if err != nil {
			v.fail(field+"."+key, "%v", err)
		}
		return x
	}
	g := &GilbertElliott{P: pct("p", ""), R: pct("r", ""), BadLoss: pct("bad_loss", "100%"), GoodLoss: pct("good_loss", "0%")}
	return Loss{Gilbert: g}
}
