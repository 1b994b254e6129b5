package measure

import "sort"

// spareRoom reads the available bandwidth from every fleet the search ran,
// not only from the verdicts that moved its bounds: one noisy fleet far
// below the spare room would otherwise bound the search and the answer
// with it. The share of streams that rose at each rate (the fleets' streams
// with a trend, each one a vote) is fitted with a non-decreasing step by
// pool-adjacent-violators, and the estimate is where the fit crosses one
// half, between the fleet rates either side of it (low and high). With no
// crossing among the fleets, the bounds are 0 and the capacity.
func spareRoom(fleets []Fleet, capacity float64) (est, low, high float64) {
	type block struct {
		lo, hi      float64 // the rates it pools
		rose, votes float64
	}
	var bs []block
	for _, f := range fleets {
		if v := f.Increasing + f.NonIncreasing; v > 0 {
			bs = append(bs, block{f.RateBPS, f.RateBPS, float64(f.Increasing), float64(v)})
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].lo < bs[j].lo })
	// Pool adjacent blocks until the share rises with the rate.
	var fit []block
	for _, b := range bs {
		fit = append(fit, b)
		for n := len(fit); n > 1 && fit[n-2].rose*fit[n-1].votes >= fit[n-1].rose*fit[n-2].votes; n = len(fit) {
			a, c := fit[n-2], fit[n-1]
			fit = append(fit[:n-2], block{a.lo, c.hi, a.rose + c.rose, a.votes + c.votes})
		}
	}
	low, high = 0, capacity
	pLow, pHigh := 0.0, 1.0
	for _, b := range fit {
		p := b.rose / b.votes
		if p == 0.5 { // the crossing is inside this block
			return (b.lo + b.hi) / 2, b.lo, b.hi
		}
		if p > 0.5 {
			high, pHigh = b.lo, p
			break
		}
		low, pLow = b.hi, p
	}
	if low == 0 || high == capacity {
		return (low + high) / 2, low, high
	}
	return low + (high-low)*(0.5-pLow)/(pHigh-pLow), low, high
}
