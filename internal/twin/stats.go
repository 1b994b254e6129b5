package twin

import (
	"cmp"
	"math"
	"slices"

	"github.com/wanlab/wanlab/internal/delay"
)

// quantile is the q-quantile of vs (which it does not change); 0 of none.
func quantile(vs []float64, q float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return delay.Quantile(s, q)
}

func median(vs []float64) float64 { return quantile(vs, 0.5) }

// meanSD is the mean of vs and its standard deviation (0 of fewer than two).
func meanSD(vs []float64) (mean, sd float64) {
	if len(vs) == 0 {
		return 0, 0
	}
	for _, v := range vs {
		mean += v
	}
	mean /= float64(len(vs))
	if len(vs) < 2 {
		return mean, 0
	}
	for _, v := range vs {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(vs)-1))
}

// z95 is the standard normal's 97.5th percentile: a two-sided 95% interval.
const z95 = 1.959963984540054

// chi2p1 is the probability that a chi-squared variable of one degree of
// freedom is at least x: a likelihood-ratio test's p-value.
func chi2p1(x float64) float64 {
	if x <= 0 {
		return 1
	}
	return math.Erfc(math.Sqrt(x / 2))
}

// xlogy is x log y, 0 when x is.
func xlogy(x, y float64) float64 {
	if x == 0 {
		return 0
	}
	return x * math.Log(y)
}

// weighted is a value with a weight.
type weighted struct{ v, w float64 }

// weightedMedian is the value below and above which half the weight lies.
func weightedMedian(ws []weighted) float64 {
	if len(ws) == 0 {
		return 0
	}
	s := slices.Clone(ws)
	slices.SortFunc(s, func(a, b weighted) int { return cmp.Compare(a.v, b.v) })
	var total, acc float64
	for _, x := range s {
		total += x.w
	}
	for _, x := range s {
		acc += x.w
		if acc >= total/2 {
			return x.v
		}
	}
	return s[len(s)-1].v
}
