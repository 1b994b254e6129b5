package twin

import (
	"fmt"
	"math"
	"slices"

	"github.com/wanlab/wanlab/internal/binomial"
)

// oneWayLosses splits a round's losses into its two ways with the
// reflector's counts, as probe.Summary's one-way loss does: out has a
// value for every probe up to the last reply (lost on the way to the
// reflector or not), back one for every probe that reached the reflector
// (its reply lost or not). Between two replies the count says how many of
// the probes in between reached the reflector, not which: those lost on
// the way out are taken to be the first ones. ok is false when the
// reflector does not number the probes or no reply came.
func oneWayLosses(probes []Probe) (out, back []bool, ok bool) {
	last, count := -1, 0
	for j, p := range probes {
		if p.Lost {
			continue
		}
		if p.ReflectorCount == 0 {
			return nil, nil, false
		}
		c := int(p.ReflectorCount)
		g := j - last - 1
		reached := min(max(c-count-1, 0), g)
		for i := range g {
			fwdLost := i < g-reached
			out = append(out, fwdLost)
			if !fwdLost {
				back = append(back, true)
			}
		}
		out, back = append(out, false), append(back, false)
		last, count = j, max(count, c)
	}
	return out, back, last >= 0
}

// roundTrip is a round's losses, round trip.
func roundTrip(probes []Probe) []bool {
	out := make([]bool, len(probes))
	for i, p := range probes {
		out[i] = p.Lost
	}
	return out
}

// lossFit is the fit of a direction's loss sequences.
type lossFit struct {
	n, k                 int
	runs                 int
	n00, n01, n10, n11   int
	rate, low, high      float64
	model                string
	p, r                 float64
	pLo, pHi, rLo, rHi   float64
	lr, pValue, deltaBIC float64
	decided              bool
	why                  string
}

// minLosses is how many losses a model choice needs.
const minLosses = 10

// modelAlpha is the likelihood-ratio test's level: Gilbert-Elliott is
// chosen over Bernoulli when Bernoulli would give runs as long less often.
const modelAlpha = 0.01

// fitLossRuns fits Bernoulli and a Gilbert-Elliott chain (bad_loss 100%,
// good_loss 0%: losses in runs) to sequences of losses, and chooses by a
// likelihood-ratio test of the two on the sequences' transitions
// (Bernoulli is the chain whose p is 1 - r: nested, one degree of freedom).
func fitLossRuns(seqs [][]bool) lossFit {
	var f lossFit
	for _, s := range seqs {
		for i, lost := range s {
			f.n++
			if lost {
				f.k++
				if i == 0 || !s[i-1] {
					f.runs++
				}
			}
			if i == 0 {
				continue
			}
			switch {
			case !s[i-1] && !lost:
				f.n00++
			case !s[i-1] && lost:
				f.n01++
			case s[i-1] && !lost:
				f.n10++
			default:
				f.n11++
			}
		}
	}
	f.model = Bernoulli
	if f.n > 0 {
		f.rate = float64(f.k) / float64(f.n)
	}
	f.low, f.high = binomial.WilsonOf(float64(f.k), float64(f.n))
	switch {
	case f.n == 0:
		f.why = "no probe series"
		return f
	case f.k == 0:
		f.why = fmt.Sprintf("no loss in %d probes", f.n)
		return f
	case f.k < minLosses || f.runs < 3:
		f.why = fmt.Sprintf("%d losses in %d runs: too few to tell Bernoulli from Gilbert-Elliott (at least %d losses and 3 runs)", f.k, f.runs, minLosses)
		return f
	}
	f.decided = true
	n0, n1 := float64(f.n00+f.n01), float64(f.n10+f.n11)
	f.p, f.r = float64(f.n01)/max(n0, 1), float64(f.n10)/max(n1, 1)
	f.pLo, f.pHi = binomial.WilsonOf(float64(f.n01), n0)
	f.rLo, f.rHi = binomial.WilsonOf(float64(f.n10), n1)
	lost := float64(f.n01 + f.n11)
	all := n0 + n1
	pb := lost / all
	llB := xlogy(lost, pb) + xlogy(all-lost, 1-pb)
	llG := xlogy(float64(f.n01), f.p) + xlogy(float64(f.n00), 1-f.p) + xlogy(float64(f.n10), f.r) + xlogy(float64(f.n11), 1-f.r)
	f.lr = max(0, 2*(llG-llB))
	f.pValue = chi2p1(f.lr)
	f.deltaBIC = f.lr - math.Log(all)
	// Runs longer than Bernoulli's (losses that follow losses more often
	// than others) make a Gilbert-Elliott path; shorter ones do not.
	if f.pValue < modelAlpha && 1-f.r > f.p {
		f.model = GilbertElliott
		// Correlated losses count for fewer independent trials: the
		// chain's variance of the mean grows by (1+l)/(1-l), l = 1-p-r.
		l := 1 - f.p - f.r
		neff := float64(f.n) * (1 - l) / (1 + l)
		f.rate = f.p / (f.p + f.r)
		f.low, f.high = binomial.WilsonOf(f.rate*neff, neff)
	}
	return f
}

// evidence describes the fit for a scenario comment and the JSON.
func (f lossFit) evidence(source string) (loss, model Estimate) {
	loss = Estimate{Value: f.rate, Low: f.low, High: f.high, Samples: f.n,
		Evidence: fmt.Sprintf("%d of %d %s lost (%d runs), binomial interval", f.k, f.n, source, f.runs)}
	model = Estimate{Samples: f.n}
	switch {
	case !f.decided:
		model.Evidence, model.Default = f.why+": Bernoulli", true
	case f.model == GilbertElliott:
		loss.Evidence += " widened for the runs' correlation"
		model.Value = 1
		model.Evidence = fmt.Sprintf("Gilbert-Elliott: runs of mean %.2f against Bernoulli's %.2f; likelihood ratio %.1f, p=%.2g (BIC %+.1f)",
			float64(f.k)/float64(f.runs), 1/(1-f.rate), f.lr, f.pValue, f.deltaBIC)
	default:
		model.Evidence = fmt.Sprintf("Bernoulli: runs of mean %.2f, as independent losses give (%.2f); likelihood ratio %.1f, p=%.2g",
			float64(f.k)/float64(f.runs), 1/(1-f.rate), f.lr, f.pValue)
	}
	return loss, model
}

// fitLoss fits the direction's loss: the runs of the probes' losses on
// that way, or the archive's summaries' ratios.
func (f *Fit) fitLoss(c Campaign, w way) {
	var oneWay, rt [][]bool
	rounds := slices.Clone(c.Probes)
	for _, l := range c.Loads {
		rounds = append(rounds, l.Before)
	}
	for _, r := range rounds {
		fwd := w.is(r.From, r.To)
		if !fwd && !w.is(r.To, r.From) {
			continue
		}
		out, back, ok := oneWayLosses(r.Probes)
		switch {
		case !ok:
			rt = append(rt, roundTrip(r.Probes))
		case fwd:
			oneWay = append(oneWay, out)
		default:
			oneWay = append(oneWay, back)
		}
	}
	switch {
	case len(oneWay) > 0:
		lf := fitLossRuns(oneWay)
		f.setLoss(lf, "probes on this way", 1)
	case len(rt) > 0:
		lf := fitLossRuns(rt)
		// Half the round trip's loss each way: 1-(1-l)^2 = l_rt.
		f.setLoss(lf, "probes, round trip", 0.5)
		f.unknown(KeyLoss, "the reflector did not number the probes: loss is round trip only", "the round trip's loss split evenly between the ways")
	default:
		f.lossFromSummaries(c, w)
	}
}

// setLoss sets the loss from a fit of runs; share splits a round trip's
// loss (0.5: each way has 1-sqrt(1-l) of it).
func (f *Fit) setLoss(lf lossFit, source string, share float64) {
	each := func(l float64) float64 {
		if share == 1 {
			return l
		}
		return 1 - math.Sqrt(1-l)
	}
	loss, model := lf.evidence(source)
	loss.Value, loss.Low, loss.High = each(loss.Value), each(loss.Low), each(loss.High)
	f.Loss, f.LossModel = loss.Value, lf.model
	if lf.model == GilbertElliott {
		// The same bursts, fewer of them when the loss is shared.
		p := lf.p * loss.Value / lf.rate
		f.GE = &GE{P: p, R: lf.r, BadLoss: 1}
		model.Evidence += fmt.Sprintf("; p=%.3g%% (%.3g-%.3g%%), r=%.3g%% (%.3g-%.3g%%)", 100*p, 100*lf.pLo, 100*lf.pHi, 100*lf.r, 100*lf.rLo, 100*lf.rHi)
	}
	f.set(KeyLoss, loss)
	f.set(KeyModel, model)
	if !lf.decided {
		f.unknown(KeyModel, lf.why, Bernoulli)
	}
}

// lossFromSummaries takes the loss of an archive's summaries: their mean
// ratio, with no runs to choose a model by.
func (f *Fit) lossFromSummaries(c Campaign, w way) {
	var vs []float64
	split := false
	for _, s := range c.Summaries {
		switch {
		case w.is(s.From, s.To) && s.LossForward >= 0:
			vs = append(vs, s.LossForward)
		case w.is(s.To, s.From) && s.LossBack >= 0:
			vs = append(vs, s.LossBack)
		case (w.is(s.From, s.To) || w.is(s.To, s.From)) && s.Loss >= 0:
			vs, split = append(vs, 1-math.Sqrt(1-s.Loss)), true
		}
	}
	f.LossModel = Bernoulli
	if len(vs) == 0 {
		f.set(KeyLoss, Estimate{Default: true, High: 1, Evidence: "no probes: none assumed"})
		f.set(KeyModel, Estimate{Default: true, Evidence: "no probes: Bernoulli"})
		f.unknown(KeyLoss, "no probes", "no loss")
		f.unknown(KeyModel, "no probes", Bernoulli)
		return
	}
	mean, sd := meanSD(vs)
	half := 1.96 * sd / math.Sqrt(float64(len(vs)))
	e := Estimate{Value: mean, Low: max(0, mean-half), High: min(1, mean+half), Samples: len(vs),
		Evidence: fmt.Sprintf("mean loss of %d archived probe summaries (their spread as the interval)", len(vs))}
	if split {
		e.Evidence += "; round trip only in some, split evenly"
	}
	f.Loss = mean
	f.set(KeyLoss, e)
	f.set(KeyModel, Estimate{Default: true, Samples: len(vs), Evidence: "the archive keeps no per-probe series: Bernoulli"})
	f.unknown(KeyModel, "the archive keeps no per-probe series, so no loss runs", Bernoulli)
}
