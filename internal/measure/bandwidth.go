package measure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/workload/token"
	"github.com/wanlab/wanlab/internal/workload/train"
)

// udpIPv4Overhead is what a UDP payload carries on the IP layer, where a
// link's rate is counted: the IPv4 and UDP headers.
const udpIPv4Overhead = 28

// BandwidthSpec is what the capacity and available-bandwidth estimates
// send: UDP packets of Size bytes of payload.
type BandwidthSpec struct {
	Size int `json:"size"`
}

// Validate checks the packet size.
func (s BandwidthSpec) Validate() error {
	if s.Size < train.HeaderLen || s.Size > train.MaxSize {
		return fmt.Errorf("size %d: give %d to %d bytes of UDP payload", s.Size, train.HeaderLen, train.MaxSize)
	}
	return nil
}

// wireBits is a packet's size on the IP layer, in bits.
func (s BandwidthSpec) wireBits() float64 { return float64(s.Size+udpIPv4Overhead) * 8 }

// CapacityResult is the estimate of a path's capacity (NMWG
// bandwidth.capacity): the rate of its narrowest link, from the dispersion
// of back-to-back packet trains.
type CapacityResult struct {
	From        string  `json:"from"`
	To          string  `json:"to"`
	CapacityBPS float64 `json:"capacity_bps"`
	// The interquartile range of the trains' estimates.
	LowBPS  float64 `json:"p25_bps"`
	HighBPS float64 `json:"p75_bps"`
	// PairModeBPS is the most common estimate of single packet pairs
	// (pathrate's), which timer resolution blurs at high rates.
	PairModeBPS float64 `json:"pair_mode_bps"`
	Size        int     `json:"size"`
	TrainLength int     `json:"train_length"`
	Trains      int     `json:"trains"`
	Lost        int     `json:"lost"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
}

// AvailableResult is the estimate of a path's available bandwidth (NMWG
// bandwidth.available): the highest rate a periodic stream can send
// without its one-way delays growing (pathload's self-loading streams).
type AvailableResult struct {
	From         string  `json:"from"`
	To           string  `json:"to"`
	AvailableBPS float64 `json:"available_bps"`
	// The fleet rates either side of the estimate: the highest where
	// most streams did not rise and the lowest where most did (0 and the
	// capacity when no fleet ran on that side).
	LowBPS      float64 `json:"low_bps"`
	HighBPS     float64 `json:"high_bps"`
	CapacityBPS float64 `json:"capacity_bps"`
	Size        int     `json:"size"`
	Fleets      []Fleet `json:"fleets"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
}

// Fleet is one rate the search tried, and what its streams said.
type Fleet struct {
	RateBPS float64 `json:"rate_bps"`
	// Size is the UDP payload of its packets: smaller at low rates.
	Size int `json:"size"`
	// Verdict is increasing (the rate is above the available bandwidth),
	// non-increasing (below it) or grey (it varies around the rate).
	Verdict       string  `json:"verdict"`
	Increasing    int     `json:"increasing"`
	NonIncreasing int     `json:"non_increasing"`
	Lost          float64 `json:"lost_ratio"`
}

// A stream's verdicts.
const (
	Increasing    = "increasing"
	NonIncreasing = "non-increasing"
	Grey          = "grey"
)

// runTrains sends streams from one host to another and returns what
// arrived.
func runTrains(ctx context.Context, from, to Endpoint, streams []train.Stream) (train.Received, error) {
	t := token.New()
	total := 0
	var lasts time.Duration
	for _, s := range streams {
		total += s.Count
		lasts += time.Duration(s.Count)*s.Gap + s.Pause
	}
	rctx, cancel := context.WithCancel(AsTest(ctx))
	defer cancel()
	recv, err := StartRole(rctx, to, "trains", agentapi.RoleTrainReceiver, train.ReceiverSpec{Token: t, Expect: total, Timeout: lasts + 5*time.Second}, true)
	if err != nil {
		return train.Received{}, err
	}
	send, err := StartRole(rctx, from, "trains", agentapi.RoleTrainSender, train.SenderSpec{Token: t, Address: recv.Address(), Streams: streams}, false)
	if err != nil {
		return train.Received{}, err
	}
	var sent train.Sent
	if err := send.Summary(nil, &sent); err != nil {
		return train.Received{}, err
	}
	var got train.Received
	if err := recv.Summary(nil, &got); err != nil {
		return train.Received{}, err
	}
	if len(got.Arrivals) == 0 {
		return got, fmt.Errorf("none of the %d packets from %s reached %s", total, from.Host, to.Host)
	}
	return got, nil
}

// byStream groups arrivals by stream, each in sequence order.
func byStream(got train.Received) map[int][]train.Arrival {
	out := map[int][]train.Arrival{}
	for _, a := range got.Arrivals {
		out[a.Stream] = append(out[a.Stream], a)
	}
	for _, s := range out {
		slices.SortFunc(s, func(a, b train.Arrival) int { return a.Seq - b.Seq })
	}
	return out
}

// trainEstimates are the rates each train's dispersion says, and those of
// its consecutive pairs.
func trainEstimates(got train.Received, bits float64) (trains, pairs []float64) {
	for _, s := range byStream(got) {
		if len(s) < 2 {
			continue
		}
		first, last := s[0], s[len(s)-1]
		if d := last.Recv - first.Recv; d > 0 {
			// Only the packets that arrived crossed the narrow link.
			trains = append(trains, float64(len(s)-1)*bits/(float64(d)/1e9))
		}
		for i := 1; i < len(s); i++ {
			if d := s[i].Recv - s[i-1].Recv; d > 0 && s[i].Seq == s[i-1].Seq+1 {
				pairs = append(pairs, bits/(float64(d)/1e9))
			}
		}
	}
	return trains, pairs
}

// Capacity estimates the capacity of the path from one host to another
// from the dispersion of back-to-back trains: a pilot of short trains
// gives a first figure, from which the trains are made long enough (about
// 3 ms at that rate) that the hosts' timer and interrupt resolution is a
// small part of their spread.
func Capacity(ctx context.Context, from, to Endpoint, spec BandwidthSpec) (*CapacityResult, error) {
	ctx = AsTest(ctx)
	start := time.Now()
	res := &CapacityResult{From: from.Host, To: to.Host, Size: spec.Size}
	bits := spec.wireBits()
	pilot := make([]train.Stream, 5)
	for i := range pilot {
		pilot[i] = train.Stream{Count: 8, Size: spec.Size, Pause: 20 * time.Millisecond}
	}
	got, err := runTrains(ctx, from, to, pilot)
	if err != nil {
		return nil, err
	}
	res.Bytes += int64(len(pilot) * 8 * spec.Size)
	est, _ := trainEstimates(got, bits)
	if len(est) == 0 {
		return nil, fmt.Errorf("no pilot train from %s reached %s whole enough to measure", from.Host, to.Host)
	}
	c0 := median(est)
	n := int(min(max(c0*3e-3/bits, 8), 256))
	trainTime := time.Duration(float64(n) * bits / c0 * 1e9)
	pause := max(2*trainTime, 5*time.Millisecond)
	k := int(min(max(3*time.Second/(trainTime+pause), 10), 30))
	streams := make([]train.Stream, k)
	for i := range streams {
		streams[i] = train.Stream{Count: n, Size: spec.Size, Pause: pause}
	}
	got, err = runTrains(ctx, from, to, streams)
	if err != nil {
		return nil, err
	}
	res.Bytes += int64(k * n * spec.Size)
	res.TrainLength, res.Trains, res.Lost = n, k, k*n-len(got.Arrivals)
	trains, pairs := trainEstimates(got, bits)
	if len(trains) == 0 {
		return nil, fmt.Errorf("no train from %s reached %s whole enough to measure", from.Host, to.Host)
	}
	slices.Sort(trains)
	// Trains that cross traffic joined on the way read below the capacity,
	// in clusters (one cross packet joined, two, ...) that can outnumber
	// the untouched trains; those cluster at the capacity, the highest.
	res.CapacityBPS = highestCluster(trains, 0.02, max(3, len(trains)/10))
	res.LowBPS, res.HighBPS = trains[len(trains)/4], trains[len(trains)*3/4]
	res.PairModeBPS = mode(pairs, 0.02)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// Available estimates the available bandwidth of the path from one host to
// another with pathload's method: fleets of periodic streams at a rate,
// each stream judged by the trend of its one-way delays, the rate moved by
// binary search between what the path carries (the capacity, measured
// first) and nothing, until the bounds are within 4% of the capacity or
// ten fleets have run.
func Available(ctx context.Context, from, to Endpoint, spec BandwidthSpec) (*AvailableResult, error) {
	ctx = AsTest(ctx)
	start := time.Now()
	capRes, err := Capacity(ctx, from, to, spec)
	if err != nil {
		return nil, fmt.Errorf("measuring the capacity first: %w", err)
	}
	res := &AvailableResult{From: from.Host, To: to.Host, Size: spec.Size, CapacityBPS: capRes.CapacityBPS, Bytes: capRes.Bytes}
	lo, hi := 0.0, capRes.CapacityBPS
	greyLo, greyHi := math.Inf(1), math.Inf(-1)
	resolution := 0.04 * capRes.CapacityBPS
	for len(res.Fleets) < 10 {
		rate := (lo + hi) / 2
		if greyLo <= greyHi {
			// Probe the wider of the two gaps beside the grey region.
			if greyLo-lo >= hi-greyHi {
				rate = (lo + greyLo) / 2
			} else {
				rate = (greyHi + hi) / 2
			}
			if greyLo-lo < resolution && hi-greyHi < resolution {
				break
			}
		} else if hi-lo < resolution {
			break
		}
		f, sent, err := fleet(ctx, from, to, spec.Size, rate)
		if errors.Is(err, errTooSlow) {
			break // the bounds so far are the answer
		}
		if err != nil {
			return nil, err
		}
		res.Bytes += sent
		res.Fleets = append(res.Fleets, f)
		switch f.Verdict {
		case Increasing:
			hi = rate
		case NonIncreasing:
			lo = rate
		default:
			greyLo, greyHi = min(greyLo, rate), max(greyHi, rate)
		}
		// A grey region is inside the bounds by construction.
		if greyLo < lo || greyHi > hi {
			greyLo, greyHi = math.Inf(1), math.Inf(-1)
		}
	}
	res.AvailableBPS, res.LowBPS, res.HighBPS = spareRoom(res.Fleets, capRes.CapacityBPS)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// errTooSlow says a rate is below what periodic streams can probe.
var errTooSlow = errors.New("a rate too low to probe")

// minFleetSize is the smallest UDP payload a fleet shrinks its packets to.
const minFleetSize = 100

// fleet sends six periodic streams at rate and judges them. At low rates
// its packets shrink (down to minFleetSize) so that a stream of 20 lasts
// about 100 ms, not seconds.
func fleet(ctx context.Context, from, to Endpoint, size int, rate float64) (Fleet, int64, error) {
	f := Fleet{RateBPS: rate}
	size = max(min(size, int(rate*0.1/20/8)-udpIPv4Overhead), min(size, minFleetSize))
	f.Size = size
	bits := BandwidthSpec{Size: size}.wireBits()
	gap := time.Duration(bits / rate * 1e9)
	if gap > train.MaxGap {
		return f, 0, errTooSlow
	}
	// About 20 ms of stream, 20-1000 packets: long enough for a queue
	// that a rate a few % above the spare room fills to rise above the
	// hosts' timer noise, short enough that the cross traffic's own
	// swings do not pass for a trend (longer streams measured worse).
	count := int(min(max(0.02*rate/bits, 20), 1000))
	lasts := time.Duration(count) * gap
	streams := make([]train.Stream, 6)
	for i := range streams {
		streams[i] = train.Stream{Count: count, Size: size, Gap: gap, Pause: max(lasts, 20*time.Millisecond)}
	}
	got, err := runTrains(ctx, from, to, streams)
	if err != nil && !errors.Is(err, context.Canceled) && len(got.Arrivals) == 0 {
		// Nothing arrived: every stream overflowed or the path is down.
		f.Verdict, f.Increasing, f.Lost = Increasing, len(streams), 1
		return f, int64(len(streams) * count * size), nil
	}
	if err != nil {
		return f, 0, err
	}
	per := byStream(got)
	f.Lost = 1 - float64(len(got.Arrivals))/float64(len(streams)*count)
	for i := range streams {
		s := per[i]
		switch {
		case len(s) < count*9/10: // more than 10% lost: the queue overflowed
			f.Increasing++
		default:
			switch trend(s) {
			case Increasing:
				f.Increasing++
			case NonIncreasing:
				f.NonIncreasing++
			}
		}
	}
	f.Verdict = fleetVerdict(f.Increasing, f.NonIncreasing, len(streams))
	return f, int64(len(streams) * count * size), nil
}

// fleetVerdict judges a fleet of n streams, inc of them with a rising
// trend and non with none: 70% of the streams that have a trend must
// agree, and at least two thirds of the fleet must have one. A stream with
// no clear trend says nothing about the rate, so it does not count against
// the others (counting it turned fleets of four non-increasing streams and
// two undecided ones grey, which let one noisy fleet far below the spare
// room bound the search).
func fleetVerdict(inc, non, n int) string {
	decided := inc + non
	switch {
	case decided*3 < n*2:
		return Grey
	case inc*10 >= decided*7:
		return Increasing
	case non*10 >= decided*7:
		return NonIncreasing
	}
	return Grey
}

// trend judges a stream's one-way delays with pathload's two statistics
// on the medians of sqrt(n) groups: the pairwise comparison test (the share
// of rises) and the pairwise difference test (the net rise over the total
// movement).
func trend(s []train.Arrival) string {
	g := int(math.Sqrt(float64(len(s))))
	if g < 3 {
		return Grey
	}
	per := len(s) / g
	meds := make([]float64, g)
	for i := range meds {
		owd := make([]float64, 0, per)
		for _, a := range s[i*per : (i+1)*per] {
			owd = append(owd, float64(a.Recv-a.Sent))
		}
		meds[i] = median(owd)
	}
	// A flat series rises half the time by chance: a net rise within the
	// noise of the delays around their groups' medians is no trend.
	var dev []float64
	for i := range meds {
		for _, a := range s[i*per : (i+1)*per] {
			dev = append(dev, math.Abs(float64(a.Recv-a.Sent)-meds[i]))
		}
	}
	if meds[g-1]-meds[0] <= max(3*median(dev), float64(20*time.Microsecond)) {
		return NonIncreasing
	}
	rises, moved := 0, 0.0
	for i := 1; i < g; i++ {
		if meds[i] > meds[i-1] {
			rises++
		}
		moved += math.Abs(meds[i] - meds[i-1])
	}
	pct := float64(rises) / float64(g-1)
	pdt := 0.0
	if moved > 0 {
		pdt = (meds[g-1] - meds[0]) / moved
	}
	switch {
	case pct > 0.66 || pdt > 0.55:
		return Increasing
	case pct < 0.54 && pdt < 0.45:
		return NonIncreasing
	}
	return Grey
}

// median of xs (sorted in place).
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// highestCluster is the median of the highest window of sorted xs that
// spans width (a ratio of its lower end) and holds at least n of them; the
// densest window where none does.
func highestCluster(xs []float64, width float64, n int) float64 {
	sort.Float64s(xs)
	for i, j := len(xs)-1, len(xs)-1; i >= 0; i-- {
		for j > i && xs[j] > xs[i]*(1+width) {
			j--
		}
		if j-i+1 >= n {
			return median(slices.Clone(xs[i : j+1]))
		}
	}
	return mode(xs, width)
}

// mode is the median of the densest window of xs that spans width (a
// ratio of its lower end): where most estimates agree.
func mode(xs []float64, width float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	best, bestN := 0, 0
	for i, j := 0, 0; i < len(xs); i++ {
		for j < len(xs) && xs[j] <= xs[i]*(1+width) {
			j++
		}
		if j-i > bestN {
			best, bestN = i, j-i
		}
	}
	return median(slices.Clone(xs[best : best+bestN]))
}
