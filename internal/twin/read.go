package twin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
)

// HistoryReader is what a path's history is read through: a wanlab serve
// archive (*archive.Archive) or a stand-in. ReadHistory does no I/O of
// its own: whatever reads, the caller opened.
type HistoryReader interface {
	// Points are a path's metric from one time to another, oldest first.
	Points(ctx context.Context, src, dst, metric string, from, to time.Time) ([]archive.Point, error)
	// Runs are the measure verbs' runs, newest first.
	Runs(ctx context.Context) ([]archive.Run, error)
	// Samples calls fn for every sample of a run.
	Samples(ctx context.Context, run int64, fn func(archive.Sample) error) error
}

// probeMetrics are the series of a path's probe summaries a twin is
// fitted from; rateMetrics those of its rates (TCP tests, and the
// capacity and available-bandwidth estimates a serve archive may hold).
var (
	probeMetrics = []string{metricRTTMin, metricLoss, metricLossForward, metricLossBack, metricJitter, metricOWDForward, metricOWDBack}
	rateMetrics  = []string{metricThroughput, results.BandwidthCapacity, results.BandwidthAvailable}
)

// firstChunk is the span of probe summaries a bounded ReadHistory reads
// first, newest first; each next one is sized by what came before.
const firstChunk = time.Hour

// History is a path's campaign as read from an archive.
type History struct {
	Campaign Campaign
	// From and To are the span read. ProbesFrom is where its probe
	// summaries start: From, or later when the bound on summaries was
	// reached (Cut).
	From, To, ProbesFrom time.Time
	Cut                  bool
	// Points are the points read, Summaries the probe summaries (both
	// ways) among them of the family fitted, Family (Campaign.Family).
	Points, Summaries int
	Family            string
}

// Empty says the history holds nothing a twin rests on.
func (h History) Empty() bool {
	c := h.Campaign
	return len(c.Summaries)+len(c.Throughput)+len(c.Capacity)+len(c.Available) == 0
}

// errEnough stops reading a run's samples at the bound.
var errEnough = errors.New("enough samples")

// ReadHistory reads the history of the path between a and b, both ways,
// from r between o.From and o.To (either zero: unbounded) and builds its
// campaign of one address family (FromHistory, o.Family): the monitoring
// service's series of the path, and the capacity and available-bandwidth
// estimates that measure capacity and measure available --db stored of it.
//
// o.Limit bounds the probe summaries (both ways together; of o.Family if
// given, else of every family) read, whose fit's time grows with their
// number (0: no bound; it needs a From). They are then read newest first,
// a chunk of the span at a time, and the history's probes start at the
// newest Limit summaries'; the rate series, sparse, are read over the
// whole span, and the stored estimates, newest run first, are bounded by
// Limit apart.
func ReadHistory(ctx context.Context, r HistoryReader, a, b string, o HistoryOptions) (History, error) {
	limit := o.Limit
	if limit > 0 && o.From.IsZero() {
		return History{}, errors.New("reading a bounded history needs the time it starts from")
	}
	lo, hi := o.From, o.To
	if lo.IsZero() {
		lo = time.Unix(0, 0)
	}
	if hi.IsZero() {
		hi = time.Now().Add(time.Hour)
	}
	h := History{From: lo, To: hi, ProbesFrom: lo}
	read := func(metrics []string, start, end time.Time) ([]archive.Point, error) {
		var out []archive.Point
		for _, w := range [][2]string{{a, b}, {b, a}} {
			for _, m := range metrics {
				ps, err := r.Points(ctx, w[0], w[1], m, start, end)
				if err != nil {
					return nil, fmt.Errorf("reading the history of %s->%s: %w", w[0], w[1], err)
				}
				// The archive may answer hourly medians past end: each
				// chunk keeps its own points, (start, end] (the span's
				// start too).
				for _, p := range ps {
					if !ofFamily(p, o.Family) {
						continue
					}
					if !p.T.After(end) && (p.T.After(start) || start.Equal(lo) && p.T.Equal(lo)) {
						out = append(out, p)
					}
				}
			}
		}
		return out, nil
	}
	points, err := read(rateMetrics, lo, hi)
	if err != nil {
		return h, err
	}
	probes, err := readProbes(read, lo, hi, limit)
	if err != nil {
		return h, err
	}
	if sums := summaryTimes(probes); limit > 0 && len(sums) > limit {
		// The newest limit summaries: those at or after the limit-th time.
		h.ProbesFrom, h.Cut = sums[limit-1], true
		probes = slices.DeleteFunc(probes, func(p archive.Point) bool { return p.T.Before(h.ProbesFrom) })
	}
	// The estimates are few and give the rate: bounded apart.
	estimates, err := storedEstimates(ctx, r, a, b, lo, hi, limit, limit > 0)
	if err != nil {
		return h, err
	}
	points = slices.Concat(points, probes, estimates)
	slices.SortStableFunc(points, func(x, y archive.Point) int { return x.T.Compare(y.T) })
	h.Points = len(points)
	h.Campaign = FromHistory(a, b, points, o)
	h.Family = h.Campaign.Family
	probes = slices.DeleteFunc(probes, func(p archive.Point) bool { return p.Family != h.Family })
	h.Summaries = len(summaryTimes(probes))
	return h, nil
}

// ofFamily says p is of the family read ("": of every one): a probe
// point of it, a rate of it or of none (FromHistory's rule).
func ofFamily(p archive.Point, family string) bool {
	return family == "" || p.Family == family || p.Family == "" && slices.Contains(rateMetrics, p.Metric)
}

// maxChunk is the longest chunk readProbes reads at once: a gap in the
// history doubles the chunks up to it, and no further.
const maxChunk = 6 * time.Hour

// readProbes reads the probe series between lo and hi: at once if limit
// is 0, else newest first, a chunk at a time, until they hold more than
// limit summaries. A chunk is firstChunk, then as long as the summaries
// so far say the rest needs (twice the last if there were none, at most
// maxChunk).
func readProbes(read func([]string, time.Time, time.Time) ([]archive.Point, error), lo, hi time.Time, limit int) ([]archive.Point, error) {
	if limit <= 0 {
		return read(probeMetrics, lo, hi)
	}
	var out []archive.Point
	chunk := firstChunk
	for end := hi; ; {
		start := end.Add(-chunk)
		if start.Before(lo) {
			start = lo
		}
		ps, err := read(probeMetrics, start, end)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
		n := len(summaryTimes(out))
		if n > limit || !start.After(lo) {
			return out, nil
		}
		// Doubling over a gap must not land a chunk of days on dense data.
		chunk = min(2*chunk, maxChunk)
		if n > 0 {
			// At the density so far, the rest of the limit and a little more.
			chunk = min(chunk, time.Duration(float64(hi.Sub(start))*float64(limit+1-n)/float64(n))+time.Minute)
		}
		end = start
	}
}

// summaryTimes are the times of the probe summaries among points (a
// summary is a test's points of one way and family at one time), newest
// first.
func summaryTimes(points []archive.Point) []time.Time {
	type key struct {
		src, dst, test, family string
		t                      time.Time
	}
	seen := map[key]bool{}
	var out []time.Time
	for _, p := range points {
		k := key{p.Src, p.Dst, p.Test, p.Family, p.T}
		if !seen[k] {
			seen[k] = true
			out = append(out, p.T)
		}
	}
	slices.SortFunc(out, func(x, y time.Time) int { return y.Compare(x) })
	return out
}

// storedEstimates are the capacity and available-bandwidth estimates that
// measure capacity and measure available --db stored of the path between
// a and b, from the newest run, as points between from and to; at most
// most when bounded.
func storedEstimates(ctx context.Context, r HistoryReader, a, b string, from, to time.Time, most int, bounded bool) ([]archive.Point, error) {
	runs, err := r.Runs(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the archive's runs: %w", err)
	}
	var out []archive.Point
	for _, run := range runs {
		if run.Kind != "measure capacity" && run.Kind != "measure available" || run.Name != a+"->"+b && run.Name != b+"->"+a {
			continue
		}
		if bounded && len(out) >= most {
			break
		}
		err := r.Samples(ctx, run.ID, func(s archive.Sample) error {
			src, dst, ok := strings.Cut(s.Subject, "->")
			if !ok || s.Metric != results.BandwidthCapacity && s.Metric != results.BandwidthAvailable || s.T.Before(from) || s.T.After(to) {
				return nil
			}
			if bounded && len(out) >= most {
				return errEnough
			}
			out = append(out, archive.Point{T: s.T, Src: src, Dst: dst, Metric: s.Metric, Value: s.Value})
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return nil, fmt.Errorf("reading the samples of run %d (%s %s): %w", run.ID, run.Kind, run.Name, err)
		}
	}
	return out, nil
}
