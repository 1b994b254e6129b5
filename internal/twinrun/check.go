package twinrun

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/wanlab/wanlab/internal/binomial"
	"github.com/wanlab/wanlab/internal/twin"
	"github.com/wanlab/wanlab/internal/units"
)

// The figures wanlab twin --check compares, each way.
const (
	FigThroughput1 = "throughput, 1 stream"
	FigThroughput8 = "throughput, 8 streams"
	FigRTTLoaded   = "RTT under load"
	FigLoss        = "loss rate"
	FigBurst       = "mean loss burst"
	FigAvailable   = "available bandwidth"
)

// Targets of the replay (issue 35): TCP throughput and RTT under load
// within 10%; a burst length within 25%; available bandwidth within 10%
// of the capacity; a loss rate whose 95% interval meets the path's.
const (
	targetRel       = 0.10
	targetBurst     = 0.25
	targetAvailable = 0.10
	// minRuns is how many runs of losses a burst length needs each side.
	minRuns = 3
)

// Figure is one figure of one way, measured on the path and on its twin.
type Figure struct {
	Name string `json:"name"`
	Way  string `json:"way"`
	Unit string `json:"unit"`
	// Measured is the path's, Twin the twin's; Error is (Twin -
	// Measured) / Measured (for available bandwidth, over the capacity).
	Measured float64 `json:"measured"`
	Twin     float64 `json:"twin"`
	Error    float64 `json:"error"`
	Target   string  `json:"target"`
	Met      bool    `json:"met"`
	// Why names the knob of the model that cannot match a miss.
	Why string `json:"why,omitempty"`
	// Missing says why the figure was not compared (Met is then false).
	Missing string `json:"missing,omitempty"`
}

// Compare compares the path's campaign with its twin's replay of it, each
// way, for every figure: the knobs of tw (the fitted twin) explain a miss.
func Compare(path, replay twin.Campaign, tw *twin.Twin) []Figure {
	var out []Figure
	for _, d := range []struct {
		from, to string
		fit      *twin.Fit
	}{{tw.A, tw.B, &tw.Forward}, {tw.B, tw.A, &tw.Reverse}} {
		way := d.from + "->" + d.to
		rel := func(name, unit string, m, r float64, ok bool, missing string, why func(m, r float64) string) {
			f := Figure{Name: name, Way: way, Unit: unit, Measured: m, Twin: r, Target: "within 10%"}
			switch {
			case !ok:
				f.Missing = missing
			default:
				f.Error = (r - m) / m
				f.Met = math.Abs(f.Error) <= targetRel
				if !f.Met {
					f.Why = why(m, r)
				}
			}
			out = append(out, f)
		}
		for _, n := range []int{1, 8} {
			m, okM := throughputOf(path, d.from, d.to, n)
			r, okR := throughputOf(replay, d.from, d.to, n)
			name := FigThroughput1
			if n == 8 {
				name = FigThroughput8
			}
			rel(name, "bit/s", m, r, okM && okR, missingOf(okM, okR, fmt.Sprintf("no %d-stream TCP test", n)), func(m, r float64) string { return throughputWhy(d.fit, n, m, r) })
		}
		m, okM := loadedRTT(path, d.from, d.to)
		r, okR := loadedRTT(replay, d.from, d.to)
		rel(FigRTTLoaded, "s", m, r, okM && okR, missingOf(okM, okR, "no load test with probes"), func(m, r float64) string { return rttWhy(d.fit, m, r) })
		out = append(out, lossFigures(path.LossRuns(d.from, d.to), replay.LossRuns(d.from, d.to), way, d.fit)...)
		out = append(out, availableFigure(path, replay, d.from, d.to, way, d.fit))
	}
	return out
}

// missingOf says which side lacks a figure.
func missingOf(okM, okR bool, what string) string {
	switch {
	case !okM && !okR:
		return what + " on either"
	case !okM:
		return what + " on the path"
	case !okR:
		return what + " on the twin"
	}
	return ""
}

// throughputOf is the median of a way's TCP tests of n streams.
func throughputOf(c twin.Campaign, from, to string, n int) (float64, bool) {
	var vs []float64
	for _, s := range c.Throughput {
		if s.From == from && s.To == to && s.Streams == n && s.BPS > 0 {
			vs = append(vs, s.BPS)
		}
	}
	return medianOf(vs)
}

// loadedRTT is the median over a way's loads of their probes' median
// round trip during the load.
func loadedRTT(c twin.Campaign, from, to string) (float64, bool) {
	var vs []float64
	for _, l := range c.Loads {
		if l.LoadFrom != from || l.LoadTo != to {
			continue
		}
		var rtts []float64
		for _, p := range l.During.Probes {
			if !p.Lost {
				rtts = append(rtts, p.RTT.Seconds())
			}
		}
		if m, ok := medianOf(rtts); ok {
			vs = append(vs, m)
		}
	}
	return medianOf(vs)
}

func medianOf(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
	return s[len(s)/2], true
}

// lossFigures compare the loss rate (met when the two 95% intervals
// meet) and the mean burst length.
func lossFigures(m, r twin.LossCount, way string, fit *twin.Fit) []Figure {
	rate := Figure{Name: FigLoss, Way: way, Unit: "ratio", Measured: m.Rate(), Twin: r.Rate(), Target: "95% intervals overlap"}
	switch {
	case m.Sent == 0 || r.Sent == 0:
		rate.Missing = missingOf(m.Sent > 0, r.Sent > 0, "no probes")
	default:
		mLo, mHi := binomial.Wilson(m.Lost, m.Sent)
		rLo, rHi := binomial.Wilson(r.Lost, r.Sent)
		if m.Lost > 0 {
			rate.Error = (r.Rate() - m.Rate()) / m.Rate()
		}
		rate.Met = rLo <= mHi && mLo <= rHi
		if !rate.Met {
			rate.Why = fmt.Sprintf("loss (%s, %s): the path's loss varied over the campaign or with the load, which one stationary loss model cannot follow", fit.LossModel, units.FormatPercent(fit.Loss))
		}
	}
	burst := Figure{Name: FigBurst, Way: way, Unit: "packets", Measured: m.MeanBurst(), Twin: r.MeanBurst(), Target: "within 25%"}
	switch {
	case m.Runs < minRuns || r.Runs < minRuns:
		burst.Missing = fmt.Sprintf("too few runs of losses to compare (%d on the path, %d on the twin; %d each needed)", m.Runs, r.Runs, minRuns)
	default:
		burst.Error = (burst.Twin - burst.Measured) / burst.Measured
		burst.Met = math.Abs(burst.Error) <= targetBurst
		if !burst.Met {
			burst.Why = burstWhy(fit)
		}
	}
	return []Figure{rate, burst}
}

// availableFigure compares the mean available bandwidth, its error over
// the fitted capacity.
func availableFigure(path, replay twin.Campaign, from, to, way string, fit *twin.Fit) Figure {
	mean := func(c twin.Campaign) (float64, bool) {
		var sum float64
		n := 0
		for _, s := range c.Available {
			if s.From == from && s.To == to {
				sum, n = sum+s.BPS, n+1
			}
		}
		if n == 0 {
			return 0, false
		}
		return sum / float64(n), true
	}
	m, okM := mean(path)
	r, okR := mean(replay)
	f := Figure{Name: FigAvailable, Way: way, Unit: "bit/s", Measured: m, Twin: r, Target: "within 10% of the capacity"}
	if !okM || !okR || fit.RateBPS <= 0 {
		f.Missing = missingOf(okM, okR, "no available-bandwidth estimate")
		return f
	}
	f.Error = (r - m) / fit.RateBPS
	f.Met = math.Abs(f.Error) <= targetAvailable
	if !f.Met {
		pattern := "none"
		if fit.Cross != nil {
			pattern = fit.Cross.Pattern
		}
		f.Why = fmt.Sprintf("cross traffic (%s, mean %s): the path's varied more, or otherwise, than the available-bandwidth samples resolve; the twin's pattern is stationary", pattern, units.Rate(fit.CrossBPS))
	}
	return f
}

// throughputWhy names the knob a TCP throughput miss rests on.
func throughputWhy(fit *twin.Fit, streams int, m, r float64) string {
	q := fit.Evidence[twin.KeyQueue]
	switch {
	case r > m && streams > 1:
		return "cross traffic: the path's gave way less than the twin's (an unresponsive pattern of mean " + units.Rate(fit.CrossBPS).String() + "), or hosts or a policer held the streams back: the model has no knob for either"
	case streams > 1:
		return "rate and cross traffic: the twin leaves the streams less room than the path did (its cross traffic does not yield to TCP as the path's did)"
	case q.Default:
		return "queue: no loaded test, so the twin has the default queue, which TCP fills otherwise than the path's"
	case q.AtLeast:
		return "queue: a lower bound (no load reached loss), so the twin's buffer may be smaller than the path's"
	case r > m:
		return fmt.Sprintf("none of rate, queue (%.2f BDP) and loss: one stream got less on the path than they allow (a host's window or CPU, a policer, cross traffic that competes as TCP does)", fit.QueueBDP)
	}
	return fmt.Sprintf("loss (%s, %s) and queue (%.2f BDP): they cost one TCP stream more on the twin than on the path (losses that come with load on the path, not at random)", fit.LossModel, units.FormatPercent(fit.Loss), fit.QueueBDP)
}

// rttWhy names the knob an RTT-under-load miss rests on.
func rttWhy(fit *twin.Fit, m, r float64) string {
	q := fit.Evidence[twin.KeyQueue]
	switch {
	case q.Default:
		return "queue: no loaded test, so the twin has the default queue"
	case q.AtLeast && r < m:
		return "queue: a lower bound (no load filled it: no loss under load, or a sender that could not send above the capacity), and the path's filled further"
	case r < m:
		return "queue: the path's delay under load grew past what the fitted drop-tail queue holds (a queue in packets, or delay added elsewhere under load)"
	}
	return "queue: the twin's drop-tail queue fills where the path's did not (an AQM, or a load that did not fill it on the path)"
}

// burstWhy names the knob a burst-length miss rests on.
func burstWhy(fit *twin.Fit) string {
	if fit.LossModel == twin.GilbertElliott {
		return "loss model: Gilbert-Elliott's one bad state gives bursts of geometric length (mean 1/r); the path's lengths are not geometric"
	}
	return "loss model: the twin's losses are independent (Bernoulli" + map[bool]string{true: ", as too few losses could not choose another", false: ""}[fit.Evidence[twin.KeyModel].Default] + "), the path's come in runs"
}

// Met counts the figures compared and those within their target.
func Met(fs []Figure) (met, compared int) {
	for _, f := range fs {
		if f.Missing == "" {
			compared++
			if f.Met {
				met++
			}
		}
	}
	return met, compared
}

// WriteCheck prints the comparison as a table, then each miss's knob.
func WriteCheck(w io.Writer, fs []Figure) error {
	t := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(t, "FIGURE\tWAY\tMEASURED\tTWIN\tERROR\tTARGET\t")
	for _, f := range fs {
		if f.Missing != "" {
			fmt.Fprintf(t, "%s\t%s\t%s\t%s\t-\t%s\tnot compared: %s\n", f.Name, f.Way, value(f, f.Measured), value(f, f.Twin), f.Target, f.Missing)
			continue
		}
		verdict := "ok"
		if !f.Met {
			verdict = "MISS"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%+.1f%%\t%s\t%s\n", f.Name, f.Way, value(f, f.Measured), value(f, f.Twin), 100*f.Error, f.Target, verdict)
	}
	if err := t.Flush(); err != nil {
		return fmt.Errorf("writing the check: %w", err)
	}
	met, compared := Met(fs)
	fmt.Fprintf(w, "%d of %d figures within their targets\n", met, compared)
	for _, f := range fs {
		if f.Missing == "" && !f.Met {
			fmt.Fprintf(w, "miss: %s %s: %s\n", f.Name, f.Way, f.Why)
		}
	}
	return nil
}

// value prints a figure's value in its unit.
func value(f Figure, v float64) string {
	if f.Missing != "" && v == 0 {
		return "-"
	}
	switch f.Unit {
	case "bit/s":
		return units.Rate(v).String()
	case "s":
		return fmt.Sprintf("%.2fms", v*1e3)
	case "ratio":
		return units.FormatPercent(v)
	}
	return fmt.Sprintf("%.2f", v)
}
