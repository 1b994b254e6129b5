package impact

import (
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// Kind is the impact test as a workload: its settings and their checks,
// its driver (run.go) and what analysis reads of it (capabilities.go),
// one unit (issue 32). It has no agent roles: the agents' probe and
// throughput calls serve it.
var Kind = kind.Kind{Name: results.Impact, Decode: kind.DecodeWith(Check), Run: kind.RunWith("an impact step", runStep), Traits: traits}

// Step is one step of an impact workload: what a TCP load from From to
// To does to the round trips and loss of probes from ProbeFrom to
// ProbeTo, probed for Phase before, all through the load, and for Phase
// after (Spec is the test as Measure runs it).
type Step struct {
	ProbeFrom, ProbeTo string
	From, To           string
	Streams            int
	Window             int64
	Duration           time.Duration
	Phase              time.Duration
	Interval           time.Duration
}

// Length is the load's duration.
func (i *Step) Length() time.Duration { return i.Duration }

// RoleHosts is none: the load and the probes have no role figures.
func (i *Step) RoleHosts() map[string][]string { return nil }

// Raw is an impact step's settings as written.
type Raw struct {
	ProbeFrom string `yaml:"probe_from"`
	ProbeTo   string `yaml:"probe_to"`
	From      string `yaml:"from"`
	To        string `yaml:"to"`
	Streams   *int   `yaml:"streams"`
	Window    string `yaml:"window"`
	Duration  string `yaml:"duration"`
	Phase     string `yaml:"phase"`
	Interval  string `yaml:"interval"`
}

// Check checks an impact step's settings, reporting every problem to c,
// and returns the step they make.
func Check(c kind.Check, r Raw) *Step {
	i := &Step{
		ProbeFrom: r.ProbeFrom, ProbeTo: r.ProbeTo, From: r.From, To: r.To,
		Streams:  c.Count("streams", r.Streams, 1, 1, 256),
		Window:   c.Size("window", r.Window, 0),
		Duration: c.Duration("duration", r.Duration, 10*time.Second),
		Phase:    c.Duration("phase", r.Phase, 5*time.Second),
		Interval: c.Duration("interval", r.Interval, 100*time.Millisecond),
	}
	kind.Pair(c, r.From, r.To)
	c.Host("probe_from", r.ProbeFrom)
	c.Host("probe_to", r.ProbeTo)
	if r.ProbeFrom != "" && r.ProbeFrom == r.ProbeTo {
		c.Fail("probe_to", "probe_from and probe_to are the same host %q", r.ProbeFrom)
	}
	c.Reaches("probe_to", r.ProbeFrom, r.ProbeTo)
	if i.Duration <= 0 || i.Phase <= 0 || i.Interval <= 0 {
		c.Fail("", "duration, phase and interval must be positive")
	}
	c.Limit("duration", c.Limits().Duration("duration", i.Duration))
	c.Limit("phase", c.Limits().Duration("phase", i.Phase))
	return i
}

// test is the step's test as Measure runs it: probes of the header's
// size, and a TCP load reporting every second.
func (i *Step) test() Spec {
	return Spec{Phase: i.Phase, Interval: i.Interval, Size: probe.HeaderLen,
		Load: throughput.Spec{Protocol: throughput.TCP, Streams: i.Streams, Duration: i.Duration, Window: int(i.Window), Interval: time.Second}}
}
