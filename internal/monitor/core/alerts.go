package core

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

// Alert rules.
const (
	RuleThroughputBelow = "throughput_below"
	RuleLossAbove       = "loss_above"
	RuleRTTStep         = "rtt_step"
	RuleClock           = "clock_unsynchronised"
	RuleNoData          = "no_data"
	RuleHopChange       = "hop_change"
)

// Unreached ends the hop list of a trace that did not reach its end.
const Unreached = "(unreached)"

// PathKey names one test of one path, and the address family of the
// test's run when it runs once per family ("" for a test's one run).
type PathKey struct{ Src, Dst, Test, Family string }

func (k PathKey) String() string {
	if k.Family != "" {
		return k.Src + "->" + k.Dst + " (" + k.Test + ", " + k.Family + ")"
	}
	return k.Src + "->" + k.Dst + " (" + k.Test + ")"
}

type alertKey struct {
	PathKey
	Rule string
}

// Observation is what one test of a path gave: its points, or why it gave none.
type Observation struct {
	Key    PathKey
	Type   string
	At     time.Time
	Points []Point
	// Failed is why the test gave no result ("" when it did).
	Failed string
	// Busy is why a far end could not take the test now (an iperf3 server
	// running another's test): no result, and no fault of the path, so
	// it is not judged (the service records the test only).
	Busy string
	// ClockProblem says why one-way delays are unreliable on a path whose
	// hosts should give them ("" when they are fine or cannot be).
	ClockProblem string
	// Disturbed says why the results measured more than the path: one of
	// the service's own throughput tests may have filled a queue on the
	// way during Covered of the summary (a share). Such a summary's loss is
	// not judged; its minimum RTT is, unless most of it was covered.
	Disturbed string
	Covered   float64
	// Hops is a trace's hop list ("*" where no router answered).
	Hops []string
	// Family is the address family the test's traffic used, "ipv4" or
	// "ipv6" ("" when unknown).
	Family string
	// Loss is a probe summary's loss counts, by metric: LossRatio, and
	// LossForward and LossBack when the reflector numbered what it
	// received. The loss rule judges them; a summary without them is not
	// judged.
	Loss map[Name]LossCount
}

// LossCount is a loss counted among trials, with its 95% binomial interval.
type LossCount struct {
	Lost, Of  int
	Low, High float64
}

// maxCovered is the share of a probe summary a throughput test may cover
// before its minimum RTT is no longer the path's.
const maxCovered = 0.5

// Detector learns each path's baseline and decides when a path has left it.
// It is not safe for concurrent use.
type Detector struct {
	cfg      *Config
	base     map[PathKey]map[Name]*window
	breaches map[alertKey][]float64
	active   map[alertKey]Alert
	// route is each traced path's known hop list; candidate a new one
	// seen in a row, learnt as the route once seen MinPoints times.
	route     map[PathKey][]string
	candidate map[PathKey]routeSeen
	// gave says of each path seen whether its latest test gave a result
	// (true) or failed: what an alert's Scope reads of the other family.
	gave map[PathKey]bool
}

type routeSeen struct {
	hops []string
	n    int
}

// NewDetector starts with no baselines and no alerts.
func NewDetector(cfg *Config) *Detector {
	return &Detector{cfg: cfg, base: map[PathKey]map[Name]*window{}, breaches: map[alertKey][]float64{}, active: map[alertKey]Alert{},
		route: map[PathKey][]string{}, candidate: map[PathKey]routeSeen{}, gave: map[PathKey]bool{}}
}

// SetConfig takes a reloaded configuration, keeping baselines and alerts.
func (d *Detector) SetConfig(cfg *Config) { d.cfg = cfg }

// Learn adds a stored point to its path's baseline, as a restarted
// service does with its recent history.
func (d *Detector) Learn(p Point) {
	d.window(PathKey{Src: p.Src, Dst: p.Dst, Test: p.Test, Family: p.Family}, Name(p.Metric)).add(p.T, p.Value, d.cfg.Baseline.Window)
}

// Resume takes alerts still active in the archive, so that a restart
// neither forgets nor repeats them.
func (d *Detector) Resume(alerts []Alert) {
	for _, a := range alerts {
		d.active[alertKey{PathKey{Src: a.Src, Dst: a.Dst, Test: a.Test, Family: a.Family}, a.Rule}] = a
	}
}

// Ack marks the active alert of a ref acknowledged; false if none is.
func (d *Detector) Ack(ref, who, note string, at time.Time) bool {
	for k, a := range d.active {
		if a.Ref == ref {
			a.AckedBy, a.AckedAt, a.AckNote = who, at, note
			d.active[k] = a
			return true
		}
	}
	return false
}

// Active lists the active alerts.
func (d *Detector) Active() []Alert {
	out := make([]Alert, 0, len(d.active))
	for _, a := range d.active {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Alert) int { return a.Started.Compare(b.Started) })
	return out
}

// Baseline is a path metric's baseline: the median and MAD of its window.
func (d *Detector) Baseline(k PathKey, metric Name) (median, mad float64, n int) {
	w := d.base[k][metric]
	if w == nil {
		return 0, 0, 0
	}
	return w.stats()
}

func (d *Detector) window(k PathKey, metric Name) *window {
	m := d.base[k]
	if m == nil {
		m = map[Name]*window{}
		d.base[k] = m
	}
	w := m[metric]
	if w == nil {
		w = &window{}
		m[metric] = w
	}
	return w
}

// check is one rule's verdict on an observation.
type check struct {
	rule                       string
	applies, breach            bool
	value, baseline, threshold float64
	message                    string
	// learn is the metric whose value joins the baseline when not breached.
	learn Name
	// evidence is more of the alert's evidence.
	evidence map[string]any
}

// lossCheck judges a probe summary's loss against the threshold: the
// one-way loss of the path's own direction (forward: from its source to
// its destination) when the reflector numbered what it received, the
// round-trip loss otherwise, saying which. It breaches when the whole 95%
// interval is above the threshold and clears when the loss is at most
// it; a loss above the threshold that too few probes leave within reach
// of it is no judgement (false), neither a breach nor a clear. So are a
// summary the service's own tests disturbed and one without counts.
func lossCheck(o Observation, threshold float64) (check, bool) {
	if threshold <= 0 || o.Disturbed != "" {
		return check{}, false
	}
	judged, what := LossForward, "forward loss"
	lc, ok := o.Loss[judged]
	if !ok {
		judged, what = LossRatio, "round-trip loss (one-way loss unknown)"
		lc, ok = o.Loss[judged]
	}
	if !ok || lc.Of <= 0 {
		return check{}, false
	}
	v := float64(lc.Lost) / float64(lc.Of)
	c := check{rule: RuleLossAbove, applies: true, value: v, threshold: threshold,
		evidence: map[string]any{"judged": judged, "lost": lc.Lost, "of": lc.Of, "interval_95": []float64{lc.Low, lc.High}}}
	switch {
	case lc.Low > threshold:
		c.breach = true
	case v > threshold:
		return check{}, false
	}
	c.message = fmt.Sprintf("%s %.2f%% (%d of %d, 95%% interval %.2f%% to %.2f%%) is above %.2f%%",
		what, 100*v, lc.Lost, lc.Of, 100*lc.Low, 100*lc.High, 100*threshold)
	return c, true
}

// Observe judges an observation and returns the alerts it fires and those
// it resolves.
func (d *Detector) Observe(o Observation) (fired, resolved []Alert) {
	th := d.cfg.For(o.Key.Src, o.Key.Dst)
	d.gave[o.Key] = o.Failed == ""
	value := func(metric Name) (float64, bool) {
		i := slices.IndexFunc(o.Points, func(p Point) bool { return p.Metric == string(metric) })
		if i < 0 {
			return 0, false
		}
		return o.Points[i].Value, true
	}
	checks := []check{{rule: RuleNoData, applies: true, breach: o.Failed != "", message: "no data: " + o.Failed}}
	if o.Failed == "" {
		switch o.Type {
		case Probe:
			if c, ok := lossCheck(o, th.LossAbove); ok {
				checks = append(checks, c)
			}
			// The minimum round trip is the route's: queues only add to it.
			if v, ok := value(RTTMin); ok && o.Covered <= maxCovered {
				c := check{rule: RuleRTTStep, value: v, learn: RTTMin}
				if med, mad, n := d.Baseline(o.Key, c.learn); n >= d.cfg.Baseline.MinPoints && th.RTTStep > 0 {
					step := math.Max(th.RTTStep.Seconds(), 3*1.4826*mad)
					c.applies, c.baseline, c.threshold = true, med, step
					c.breach = math.Abs(v-med) > step
					c.message = fmt.Sprintf("minimum RTT %s is %s off its baseline %s (more than %s): the route changed?",
						msText(v), msText(math.Abs(v-med)), msText(med), msText(step))
				}
				checks = append(checks, c)
			}
			checks = append(checks, check{rule: RuleClock, applies: true, breach: o.ClockProblem != "",
				message: "one-way delays unreliable: " + o.ClockProblem})
		case Trace:
			checks = append(checks, d.routeCheck(o))
		case Throughput, Transfer:
			if v, ok := value(ThroughputRate); ok {
				c := check{rule: RuleThroughputBelow, value: v, learn: ThroughputRate}
				if med, _, n := d.Baseline(o.Key, c.learn); n >= d.cfg.Baseline.MinPoints && th.ThroughputBelow > 0 {
					c.applies, c.baseline, c.threshold = true, med, th.ThroughputBelow*med
					c.breach = v < c.threshold
					c.message = fmt.Sprintf("throughput %s is below %.0f%% of its baseline %s", units.Rate(v), 100*th.ThroughputBelow, units.Rate(med))
				}
				checks = append(checks, c)
			}
		}
	}
	// A new route seen often enough is the route now: its alert ends.
	if o.Type == Trace && o.Failed == "" && d.learnRoute(o.Key, o.Hops) {
		ak := alertKey{o.Key, RuleHopChange}
		if a, ok := d.active[ak]; ok {
			a.Ended = o.At
			resolved = append(resolved, a)
			delete(d.active, ak)
		}
		delete(d.breaches, ak)
		checks = slices.DeleteFunc(checks, func(c check) bool { return c.rule == RuleHopChange })
	}
	for _, c := range checks {
		ak := alertKey{o.Key, c.rule}
		_, isActive := d.active[ak]
		if !c.breach {
			delete(d.breaches, ak)
			if isActive && c.applies {
				a := d.active[ak]
				a.Ended = o.At
				resolved = append(resolved, a)
				delete(d.active, ak)
			}
			if c.learn != "" && !isActive {
				d.window(o.Key, c.learn).add(o.At, c.value, d.cfg.Baseline.Window)
			}
			continue
		}
		d.breaches[ak] = append(d.breaches[ak], c.value)
		need := th.For
		if c.rule == RuleClock {
			need = 1
		}
		if isActive || len(d.breaches[ak]) < need {
			continue
		}
		_, mad, n := d.Baseline(o.Key, c.learn)
		evidence := map[string]any{"values": d.breaches[ak], "baseline_median": c.baseline, "baseline_mad": mad,
			"baseline_points": n, "baseline_window_seconds": d.cfg.Baseline.Window.Seconds(), "threshold": c.threshold, "results_in_a_row": len(d.breaches[ak])}
		maps.Copy(evidence, c.evidence)
		ev, _ := json.Marshal(evidence)
		scope := d.scope(o.Key, c.rule)
		a := Alert{Ref: alertRef(c.rule, o.Key, o.At),
			Rule: c.rule, Src: o.Key.Src, Dst: o.Key.Dst, Test: o.Key.Test, Started: o.At,
			Value: c.value, Baseline: c.baseline, Threshold: c.threshold, Message: scopeWords(scope) + c.message, Evidence: ev,
			Family: o.Key.Family, Scope: scope}
		d.active[ak] = a
		fired = append(fired, a)
	}
	return fired, resolved
}

// routeCheck compares a trace's hops with the path's known route.
func (d *Detector) routeCheck(o Observation) check {
	known, ok := d.route[o.Key]
	if !ok {
		return check{rule: RuleHopChange, applies: true}
	}
	c := check{rule: RuleHopChange, applies: true, value: float64(len(o.Hops)), baseline: float64(len(known)), breach: !sameRoute(known, o.Hops)}
	c.message = fmt.Sprintf("the route changed: %s, was %s", strings.Join(o.Hops, " "), strings.Join(known, " "))
	return c
}

// learnRoute takes a trace's hops toward the path's route and says
// whether they became its route in place of another one.
func (d *Detector) learnRoute(k PathKey, hops []string) bool {
	known, ok := d.route[k]
	if !ok {
		d.route[k] = hops
		return false
	}
	if sameRoute(known, hops) {
		delete(d.candidate, k)
		return false
	}
	c := d.candidate[k]
	if sameRoute(c.hops, hops) {
		c.n++
	} else {
		c = routeSeen{hops: hops, n: 1}
	}
	d.candidate[k] = c
	if c.n < max(d.cfg.Baseline.MinPoints, d.cfg.For(k.Src, k.Dst).For+1) {
		return false
	}
	d.route[k] = hops
	delete(d.candidate, k)
	return true
}

// sameRoute compares hop lists; a hop that did not answer ("*") matches any.
func sameRoute(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && a[i] != "*" && b[i] != "*" {
			return false
		}
	}
	return true
}

func msText(s float64) string {
	return units.FormatDuration(time.Duration(math.Round(s*1e6)) * time.Microsecond)
}

// window is a metric's recent values, oldest first.
type window struct {
	t []time.Time
	v []float64
}

// maxWindow bounds a window's points (a day of per-minute results).
const maxWindow = 1440

func (w *window) add(t time.Time, v float64, span time.Duration) {
	w.t, w.v = append(w.t, t), append(w.v, v)
	cut := 0
	for cut < len(w.t) && (w.t[cut].Before(t.Add(-span)) || len(w.t)-cut > maxWindow) {
		cut++
	}
	if cut > 0 {
		w.t, w.v = slices.Delete(w.t, 0, cut), slices.Delete(w.v, 0, cut)
	}
}

func (w *window) stats() (median, mad float64, n int) {
	if len(w.v) == 0 {
		return 0, 0, 0
	}
	med := middle(w.v)
	dev := make([]float64, len(w.v))
	for i, v := range w.v {
		dev[i] = math.Abs(v - med)
	}
	return med, middle(dev), len(w.v)
}

// middle is the median of vs (not empty): the middle value, or the point
// halfway between the two middle ones.
func middle(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return s[m-1] + 0.5*(s[m]-s[m-1])
}
