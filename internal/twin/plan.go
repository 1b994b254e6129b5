package twin

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// Budget bounds a campaign: its time and the bytes it sends.
type Budget struct {
	Duration time.Duration
	Bytes    int64
}

// DefaultDuration is a campaign's default time: under two minutes.
const DefaultDuration = 110 * time.Second

// DefaultBudget is a campaign's default budget under a policy that lets an
// identity move bytesPerDay a day: DefaultDuration, and 1% of the day's bytes.
func DefaultBudget(bytesPerDay int64) Budget {
	return Budget{Duration: DefaultDuration, Bytes: bytesPerDay / 100}
}

// ErrBudget says a campaign does not fit its budget.
var ErrBudget = errors.New("the campaign does not fit the budget")

// The kinds of measurement a campaign runs (the measure verbs').
const (
	StepTrace      = "trace"
	StepProbe      = "probe"
	StepCapacity   = "capacity"
	StepAvailable  = "available"
	StepImpact     = "impact"
	StepThroughput = "throughput"
)

// Step is one measurement of a campaign.
type Step struct {
	Kind     string `json:"kind"`
	From, To string
	// Probes: Count probes Interval apart of Size bytes (Kind probe, and
	// an impact's phases).
	Count    int           `json:"count,omitempty"`
	Interval time.Duration `json:"interval_ns,omitempty"`
	Size     int           `json:"size,omitempty"`
	// Load is a load's (impact) or TCP test's (throughput) length and streams.
	Load    time.Duration `json:"load_ns,omitempty"`
	Streams int           `json:"streams,omitempty"`
	// Overload is an impact's UDP load as a multiple of its direction's
	// capacity (the campaign's estimates, else RateBPS).
	Overload float64 `json:"overload,omitempty"`
	// RateBPS is the rate the plan expects the step's direction to have.
	RateBPS float64 `json:"rate_bps,omitempty"`
	// Phase is an impact's probing before and after its load.
	Phase time.Duration `json:"phase_ns,omitempty"`
	// Time and Bytes are what the step is expected to take and send (at
	// most), setup included.
	Time  time.Duration `json:"time_ns"`
	Bytes int64         `json:"bytes"`
	Why   string        `json:"why"`
}

// Plan is a campaign's measurements in order, and what they take.
type Plan struct {
	RateBPS float64       `json:"rate_bps"`
	Budget  Budget        `json:"budget"`
	Steps   []Step        `json:"steps"`
	Time    time.Duration `json:"time_ns"`
	Bytes   int64         `json:"bytes"`
}

// Overload is the rate of the load that finds the queue and the cross
// traffic, over the direction's capacity: a UDP load above the capacity
// fills the bottleneck queue whatever the path's random loss (which keeps
// TCP from filling a large one), so the delay it adds at its peak is the
// queue; what gets through is the capacity less the cross traffic, which
// does not yield to it. A quarter above fills 4 BDP of a 300 ms path
// within a 6 s load.
const Overload = 1.25

// QueueStreams is how many UDP streams that load runs (a sender's cores
// share the rate).
const QueueStreams = 2

// Costs of the measurements (from internal/measure and the verbs).
const (
	setup         = time.Second // an agent's role started and its summary read
	probeInterval = 10 * time.Millisecond
	probeSize     = 64 // room for the reflector's count (probe.NumberedLen)
	probeWait     = time.Second
	wireBits      = 1500 * 8 // a full packet of the trains
	traceTime     = 3 * time.Second
	settle        = time.Second // impact's pause between phases
)

// shape is what the plan's elastic parts are; NewPlan shrinks it to fit.
type shape struct {
	probe, load, phase, multi time.Duration
	availables                int
}

// The shapes NewPlan tries, in order.
var shapes = []shape{
	{probe: 12 * time.Second, load: 6 * time.Second, phase: 2 * time.Second, multi: 4 * time.Second, availables: 2},
	{probe: 10 * time.Second, load: 5 * time.Second, phase: 2 * time.Second, multi: 3 * time.Second, availables: 2},
	{probe: 5 * time.Second, load: 3 * time.Second, phase: time.Second, multi: 3 * time.Second, availables: 1},
}

// NewPlan lists the campaign of the path between a and b, whose rate is
// about rateBPS, within budget: traces, capacity estimates at its start and
// end, an unloaded round of probes each way, available bandwidth over
// time, a UDP load of Overload times the capacity with probes before and
// during it (the queue and the cross traffic), and 1- and 8-stream tests
// each way. It shortens the probes and the loads (down to a floor) to
// fit, or says by how much it cannot.
func NewPlan(a, b string, budget Budget, rateBPS float64) (*Plan, error) {
	if rateBPS <= 0 {
		return nil, fmt.Errorf("planning a campaign: the path's rough rate must be above 0, not %g", rateBPS)
	}
	var p *Plan
	for _, s := range shapes {
		p = plan(a, b, rateBPS, s)
		p.Budget = budget
		if p.Time <= budget.Duration && p.Bytes <= budget.Bytes {
			return p, nil
		}
	}
	return p, fmt.Errorf("planning a campaign at %s: the least one takes %v and %s, the budget is %v and %s: %w",
		units.Rate(rateBPS), p.Time, units.Size(p.Bytes), budget.Duration, units.Size(budget.Bytes), ErrBudget)
}

// plan is the campaign of one shape.
func plan(a, b string, rate float64, s shape) *Plan {
	p := &Plan{RateBPS: rate}
	bytesIn := func(d time.Duration) int64 { return int64(rate / 8 * d.Seconds()) }
	add := func(st Step) { p.Steps = append(p.Steps, st); p.Time += st.Time; p.Bytes += st.Bytes }
	both := func(f func(from, to string)) { f(a, b); f(b, a) }
	probes := func(from, to string, d time.Duration, why string) {
		n := int(d / probeInterval)
		add(Step{Kind: StepProbe, From: from, To: to, Count: n, Interval: probeInterval, Size: probeSize,
			Time: d + probeWait + setup, Bytes: int64(2 * n * (probeSize + headerBytes)), Why: why})
	}
	// measure capacity: a pilot of 5 trains of 8, then 30 trains about
	// 3 ms long at the rate (8-256 packets), twice as long apart.
	n := min(max(int(rate*3e-3/wireBits), 8), 256)
	train := time.Duration(float64(n*wireBits) / rate * 1e9)
	capTime := setup + 30*(train+max(2*train, 5*time.Millisecond)) + 5*20*time.Millisecond
	capBytes := int64((5*8 + 30*n) * wireBits / 8)
	capacity := func(why string) func(from, to string) {
		return func(from, to string) {
			add(Step{Kind: StepCapacity, From: from, To: to, Time: capTime, Bytes: capBytes, Why: why})
		}
	}
	// measure available: the capacity, then at most 10 fleets of six
	// streams of 20 ms (20-1000 packets) at up to the rate.
	count := min(max(int(0.02*rate/wireBits), 20), 1000)
	streamTime := max(time.Duration(float64(count*wireBits)/rate*1e9), 20*time.Millisecond)
	available := func(from, to string) {
		add(Step{Kind: StepAvailable, From: from, To: to, Time: capTime + 10*(setup/4+12*streamTime), Bytes: capBytes + int64(10*6*count*wireBits/8),
			Why: "available bandwidth against capacity, over time: the cross traffic's mean and pattern"})
	}
	both(func(from, to string) {
		add(Step{Kind: StepTrace, From: from, To: to, Time: traceTime, Why: "the hops; a route change shows as another list"})
	})
	both(capacity("the bottleneck's rate (packet-train dispersion); again at the end to see a rate step"))
	probes(a, b, s.probe, "unloaded delay, jitter and each way's loss runs (the loss model)")
	both(available)
	both(func(from, to string) {
		pn := int(s.phase / probeInterval)
		add(Step{Kind: StepImpact, From: from, To: to, Count: pn, Interval: probeInterval, Size: probeSize, Load: s.load, Streams: QueueStreams, Overload: Overload, RateBPS: rate, Phase: s.phase,
			Time: 2*s.phase + s.load + 2*settle + 3*setup, Bytes: int64(Overload*float64(bytesIn(s.load))) + int64(4*pn*(probeSize+headerBytes)),
			Why: fmt.Sprintf("a UDP load at %gx the capacity: the delay it adds with the queue full (the queue), what gets through (the cross traffic)", Overload)})
	})
	for _, n := range []int{1, 8} {
		both(func(from, to string) {
			add(Step{Kind: StepThroughput, From: from, To: to, Load: s.multi, Streams: n, Time: s.multi + setup, Bytes: bytesIn(s.multi),
				Why: fmt.Sprintf("%d-stream throughput, which the twin's check replays", n)})
		})
	}
	for range s.availables - 1 {
		both(available)
	}
	both(capacity("the rate again: a step between the two is a change the twin describes the end of"))
	probes(b, a, s.probe/2, "the delays again, from the other end: a step is a route change")
	return p
}

// WritePlan prints the plan as a table, then its totals against the budget.
func WritePlan(w io.Writer, p *Plan) error {
	t := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(t, "#\tMEASUREMENT\tPATH\tTIME\tBYTES\tWHY")
	for i, s := range p.Steps {
		what := s.Kind
		switch {
		case s.Kind == StepProbe:
			what = fmt.Sprintf("probe %d x %v", s.Count, s.Interval)
		case s.Streams > 0:
			what = fmt.Sprintf("%s %d stream(s) %v", s.Kind, s.Streams, s.Load)
		}
		fmt.Fprintf(t, "%d\t%s\t%s->%s\t%.1fs\t%s\t%s\n", i+1, what, s.From, s.To, s.Time.Seconds(), units.Size(s.Bytes), s.Why)
	}
	if err := t.Flush(); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	_, err := fmt.Fprintf(w, "total %.0fs of %v, %s of %s, at about %s\n", p.Time.Seconds(), p.Budget.Duration, units.Size(p.Bytes), units.Size(p.Budget.Bytes), units.Rate(p.RateBPS))
	if err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	return nil
}

// ForCheck is the part of the plan that --check replays on the twin: what
// its figures compare (probes, the loads, the TCP tests, an available
// bandwidth each way). Traces and the capacity estimates, which the
// twin's scenario fixes, and the later available-bandwidth rounds are left
// out.
func (p *Plan) ForCheck() *Plan {
	out := &Plan{RateBPS: p.RateBPS, Budget: p.Budget}
	seen := map[string]bool{}
	for _, s := range p.Steps {
		switch s.Kind {
		case StepTrace, StepCapacity:
			continue
		case StepAvailable:
			way := s.From + ">" + s.To
			if seen[way] {
				continue
			}
			seen[way] = true
		}
		out.Steps = append(out.Steps, s)
		out.Time += s.Time
		out.Bytes += s.Bytes
	}
	return out
}
