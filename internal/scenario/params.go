package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/units"
)

// A link direction's settings: rate, delay, jitter, loss, queue, cross
// traffic, routers, and their defaults.

// rawLoss is either a percentage ("0.1%") or a Gilbert-Elliott mapping.
type rawLoss struct {
	Random  string
	Gilbert map[string]string
	set     bool
}

var gilbertKeys = map[string]bool{"model": true, "p": true, "r": true, "bad_loss": true, "good_loss": true}

func (l *rawLoss) UnmarshalYAML(n *yaml.Node) error {
	l.set = true
	switch n.Kind {
	case yaml.ScalarNode:
		l.Random = n.Value
		return nil
	case yaml.MappingNode:
		l.Gilbert = map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if !gilbertKeys[k.Value] {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: field %s not found in type loss", k.Line, k.Value)}}
			}
			if v.Kind != yaml.ScalarNode {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: loss.%s must be a single value", v.Line, k.Value)}}
			}
			l.Gilbert[k.Value] = v.Value
		}
		return nil
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: loss must be a percentage or a gilbert-elliott mapping", n.Line)}}
}

// override applies the per-direction fields in raw over base.
func (v *validator) override(field string, raw *rawParams, base Direction) Direction {
	if raw == nil {
		return v.finish(field, base, false)
	}
	return v.params(field, *raw, base, true)
}

// params reads raw over base. When final is false the queue default is left
// for finish, so that a direction's own rate and delay size it.
func (v *validator) params(field string, raw rawParams, d Direction, final bool) Direction {
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

// routersOutside refuses routers with addresses in the hosts' subnet:
// an ICMP error from one would seem to come from a host.
func (v *validator) routersOutside(tb *Testbed) {
	check := func(field string, dirs ...Direction) {
		for _, d := range dirs {
			for _, h := range d.Hops {
				if tb.Subnet.Contains(h.Addr) {
					v.fail(field+".hops", "router %s is in the hosts' subnet %s: give routers addresses outside it (as 192.0.2.0/24)", h, tb.Subnet)
					return
				}
			}
		}
	}
	for _, s := range tb.Sites {
		check("sites."+s.Name, s.Up, s.Down, s.LAN)
	}
	for i, l := range tb.Links {
		check(fmt.Sprintf("links[%d]", i), l.Forward, l.Reverse)
	}
}

// cross reads a direction's cross traffic over what it has.
func (v *validator) cross(field string, raw rawCross, d Direction) *Cross {
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
func (v *validator) hops(field string, raw []string) []Hop {
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
func (v *validator) delay(field, raw string, into *time.Duration) {
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
func (v *validator) finish(field string, d Direction, queueSet bool) Direction {
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

func (v *validator) queue(field, s string) Queue {
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

func (v *validator) loss(field string, raw rawLoss) Loss {
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
