package analysis

// Whether one direction of a path is slower than the other.

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// asymmetry compares repeated throughput runs A->B with B->A.
func asymmetry(workloads []Workload) []Finding {
	type series struct {
		name     string
		from, to string
		setting  any // kind.Reversible's
		values   []float64
	}
	var all []series
	for _, w := range workloads {
		if !w.Traits().Has(kind.Asymmetry) {
			continue
		}
		var s series
		same := true
		for i, st := range w.Steps {
			t, ok := spec[kind.Reversible](st)
			if !ok || st.Status != "done" {
				continue
			}
			setting := t.Setting()
			if i > 0 && setting != s.setting {
				same = false // a sweep, not repeats of one test
			}
			s.name, s.setting = w.Name, setting
			s.from, s.to = t.Path()
			s.values = append(s.values, st.value(results.ThroughputMbps))
		}
		if same && len(s.values) >= 2 {
			all = append(all, s)
		}
	}
	var out []Finding
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.from != b.to || a.to != b.from || a.setting != b.setting {
				continue
			}
			ma, mb := stat.Mean(a.values, nil), stat.Mean(b.values, nil)
			slow, fast := a, b
			if ma > mb {
				slow, fast = b, a
			}
			ms, mf := stat.Mean(slow.values, nil), stat.Mean(fast.values, nil)
			p, d := welch(slow.values, fast.values)
			conf := "low"
			switch {
			case p < 0.01:
				conf = "high"
			case p < 0.05:
				conf = "medium"
			}
			out = append(out, Finding{Kind: "asymmetry", Workload: a.name + "," + b.name, Confidence: conf,
				Values: map[string]float64{"slow_mbps": ms, "fast_mbps": mf, "slower_by": 1 - ms/mf, "p_value": p, "cohens_d": d,
					"runs_slow": float64(len(slow.values)), "runs_fast": float64(len(fast.values))},
				Text: fmt.Sprintf("%s->%s is %.0f%% slower than %s->%s (%.2f against %.2f Mbit/s over %d and %d runs; Welch's t-test p = %.2g, Cohen's d = %.1f: confidence %s).",
					slow.from, slow.to, 100*(1-ms/mf), fast.from, fast.to, ms, mf, len(slow.values), len(fast.values), p, d, conf)})
		}
	}
	return out
}

// welch returns the two-sided p-value of Welch's t-test and Cohen's d
// (pooled standard deviation) for two samples.
func welch(a, b []float64) (p, d float64) {
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	na, nb := float64(len(a)), float64(len(b))
	se := math.Sqrt(va/na + vb/nb)
	pooled := math.Sqrt(((na-1)*va + (nb-1)*vb) / (na + nb - 2))
	if pooled > 0 {
		d = math.Abs(ma-mb) / pooled
	} else if ma != mb {
		d = math.Inf(1)
	}
	if se == 0 {
		if ma == mb {
			return 1, 0
		}
		return 0, d
	}
	t := math.Abs(ma-mb) / se
	df := math.Pow(va/na+vb/nb, 2) / (math.Pow(va/na, 2)/(na-1) + math.Pow(vb/nb, 2)/(nb-1))
	return 2 * (1 - distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(t)), d
}
