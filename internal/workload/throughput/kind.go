package throughput

import (
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// Kind is the memory-to-memory throughput test as a workload: its
// settings and their checks, its driver (run.go) and what analysis reads
// of it (capabilities.go), one unit (issue 32). It has no agent roles:
// the agents' Send and Receive calls serve it.
var Kind = kind.Kind{Name: results.Throughput, Decode: kind.DecodeWith(Check), Run: kind.RunWith("a throughput step", runStep), Traits: traits, Model: &model}

// Step is one step of a throughput workload: a test from one host to
// another (Spec is the test as the agents run it).
type Step struct {
	From, To   string
	Protocol   string // tcp or udp
	Streams    int
	Window     int64
	Duration   time.Duration
	Congestion string
	UDPRate    units.Rate
}

// Length is the test's duration.
func (t *Step) Length() time.Duration { return t.Duration }

// RoleHosts is none: a test between two hosts has no role figures.
func (t *Step) RoleHosts() map[string][]string { return nil }

// Raw is a throughput step's settings as written.
type Raw struct {
	From       string `yaml:"from"`
	To         string `yaml:"to"`
	Protocol   string `yaml:"protocol"`
	Streams    *int   `yaml:"streams"`
	Window     string `yaml:"window"`
	Duration   string `yaml:"duration"`
	Congestion string `yaml:"congestion"`
	Rate       string `yaml:"rate"`
}

// Check checks a throughput step's settings, reporting every problem to
// c, and returns the step they make.
func Check(c kind.Check, r Raw) *Step {
	t := &Step{
		From: r.From, To: r.To, Protocol: r.Protocol, Congestion: r.Congestion,
		Streams:  c.Count("streams", r.Streams, 1, 1, 256),
		Window:   c.Size("window", r.Window, 0),
		Duration: c.Duration("duration", r.Duration, 10*time.Second),
	}
	kind.Pair(c, r.From, r.To)
	if t.Protocol == "" {
		t.Protocol = "tcp"
	}
	switch t.Protocol {
	case "tcp":
		if r.Rate != "" {
			c.Fail("rate", "rate is for udp tests")
		}
	case "udp":
		if r.Rate == "" {
			c.Fail("rate", "missing: a udp test needs a target rate, such as 10Mbit")
		} else if rate, err := units.ParseRate(r.Rate); err != nil {
			c.Fail("rate", "%v", err)
		} else {
			t.UDPRate = rate
		}
	default:
		c.Fail("protocol", "%q: tcp or udp", t.Protocol)
	}
	if t.Duration <= 0 {
		c.Fail("duration", "must be positive")
	}
	c.Limit("duration", c.Limits().Duration("duration", t.Duration))
	if t.Protocol == "udp" && t.UDPRate > 0 {
		c.Limit("rate", c.Limits().Rate(float64(t.UDPRate)))
	}
	return t
}

// DefaultUDPLength is a UDP test's datagram payload when nothing says
// otherwise (wanlab measure throughput's --length): an Ethernet frame's
// TCP payload with timestamps.
const DefaultUDPLength = 1448

// test is the step's test as the agents run it, reporting every second.
func (t *Step) test() Spec {
	spec := Spec{Protocol: TCP, Streams: t.Streams, Duration: t.Duration, Window: int(t.Window), Congestion: t.Congestion, Interval: time.Second}
	if t.Protocol == "udp" {
		spec.Protocol, spec.UDPRate, spec.UDPLength = UDP, float64(t.UDPRate), DefaultUDPLength
	}
	return spec
}
