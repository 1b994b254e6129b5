package twin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
)

// fakeHistory is an archive's points and runs in memory, counting reads.
type fakeHistory struct {
	points []archive.Point
	// hourlyPast answers, as the archive does before its raw points, with
	// every point from the start of the range on, past its end.
	hourlyPast bool
	runs       []archive.Run
	samples    map[int64][]archive.Sample
	reads      int
	fail       error
}

func (f *fakeHistory) Points(_ context.Context, src, dst, metric string, from, to time.Time) ([]archive.Point, error) {
	f.reads++
	if f.fail != nil {
		return nil, f.fail
	}
	var out []archive.Point
	for _, p := range f.points {
		if p.Src == src && p.Dst == dst && p.Metric == metric && !p.T.Before(from) && (f.hourlyPast || !p.T.After(to)) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeHistory) Runs(context.Context) ([]archive.Run, error) { return f.runs, nil }

func (f *fakeHistory) Samples(_ context.Context, run int64, fn func(archive.Sample) error) error {
	for _, s := range f.samples[run] {
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// TestReadHistory: the history read is the points' (each once, whatever
// the chunks), the stored estimates of the path's runs only, and a bound
// cuts the oldest probe summaries, saying so, and keeps the rates.
func TestReadHistory(t *testing.T) {
	points := historyOf(campaignOf(knownTruth[0].tr))
	first, last := points[0].T, points[0].T
	ours := 0 // the points of a<->b
	for _, p := range points {
		if p.T.Before(first) {
			first = p.T
		}
		if p.T.After(last) {
			last = p.T
		}
		if p.Src+p.Dst == "ab" || p.Src+p.Dst == "ba" {
			ours++
		}
	}
	// The capacity estimates come from measure runs instead of series.
	var series []archive.Point
	var caps []archive.Sample
	for _, p := range points {
		if p.Metric == results.BandwidthCapacity {
			caps = append(caps, archive.Sample{T: p.T, Metric: p.Metric, Subject: p.Src + "->" + p.Dst, Value: p.Value})
		} else {
			series = append(series, p)
		}
	}
	runs := []archive.Run{{ID: 2, Kind: "measure capacity", Name: "a->c"}, {ID: 1, Kind: "measure capacity", Name: "a->b"}}
	samples := map[int64][]archive.Sample{1: caps, 2: {{T: first, Metric: results.BandwidthCapacity, Subject: "a->c", Value: 1}}}
	want := FromHistory("a", "b", points, HistoryOptions{})
	for _, tc := range []struct {
		name       string
		hourlyPast bool
		from       time.Time
		limit      int
	}{
		{"unbounded", false, time.Time{}, 0},
		{"chunked", false, first.Add(-48 * time.Hour), 1 << 20},
		{"chunked, answers past the chunk", true, first.Add(-48 * time.Hour), 1 << 20},
		{"chunked, the bound just reached", false, first.Add(-48 * time.Hour), len(want.Summaries)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeHistory{points: series, hourlyPast: tc.hourlyPast, runs: runs, samples: samples}
			h, err := ReadHistory(context.Background(), f, "a", "b", HistoryOptions{From: tc.from, To: last.Add(time.Minute), Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			if h.Cut || h.Empty() || h.Points != ours {
				t.Errorf("cut %v, empty %v, %d points, want %d", h.Cut, h.Empty(), h.Points, ours)
			}
			c := h.Campaign
			if len(c.Summaries) != len(want.Summaries) || len(c.Capacity) != len(want.Capacity) || len(c.Available) != len(want.Available) || len(c.Throughput) != len(want.Throughput) {
				t.Errorf("read %d summaries, %d capacity, %d available, %d throughput; want %d, %d, %d, %d", len(c.Summaries), len(c.Capacity), len(c.Available), len(c.Throughput),
					len(want.Summaries), len(want.Capacity), len(want.Available), len(want.Throughput))
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		// Points a day apart over ten days: a bound of 5 points reads the
		// newest chunks only.
		var pts []archive.Point
		for i := range 10 {
			pts = append(pts, archive.Point{T: last.Add(-time.Duration(i) * 24 * time.Hour), Src: "a", Dst: "b", Test: "probes", Metric: metricRTTMin, Value: 0.01})
		}
		// Stored estimates, bounded apart: the newest run's, within the span read.
		var caps []archive.Sample
		for i := range 10 {
			caps = append(caps, archive.Sample{T: last.Add(-time.Duration(i) * time.Hour), Metric: results.BandwidthCapacity, Subject: "a->b", Value: 20e6})
		}
		caps = append(caps, archive.Sample{T: last.Add(-20 * 24 * time.Hour), Metric: results.BandwidthCapacity, Subject: "a->b", Value: 1e6})
		f := &fakeHistory{points: pts, runs: []archive.Run{{ID: 1, Kind: "measure capacity", Name: "b->a"}}, samples: map[int64][]archive.Sample{1: caps}}
		h, err := ReadHistory(context.Background(), f, "a", "b", HistoryOptions{From: last.Add(-30 * 24 * time.Hour), To: last, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !h.Cut || h.Summaries != 5 || h.Points != 10 || len(h.Campaign.Summaries) != 5 || len(h.Campaign.Capacity) != 5 {
			t.Errorf("cut %v, %d summaries, %d points, %d fitted, %d capacity: want the 5 newest of each", h.Cut, h.Summaries, h.Points, len(h.Campaign.Summaries), len(h.Campaign.Capacity))
		}
		if !h.ProbesFrom.Equal(last.Add(-4*24*time.Hour)) || !h.From.Equal(last.Add(-30*24*time.Hour)) {
			t.Errorf("probes from %s, history from %s; want 4 days and 30 days before %s", h.ProbesFrom, h.From, last)
		}
		// Chunks of 1 h, doubling up to maxChunk (6 h): about 20 reads of
		// the probe series over the 4 days the 5 newest need.
		if most := 2*len(probeMetrics)*24 + 2*len(rateMetrics); f.reads > most {
			t.Errorf("%d reads, want at most %d", f.reads, most)
		}
	})
	t.Run("errors", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := ReadHistory(context.Background(), &fakeHistory{fail: boom}, "a", "b", HistoryOptions{}); !errors.Is(err, boom) {
			t.Errorf("a failing read: %v", err)
		}
		if _, err := ReadHistory(context.Background(), &fakeHistory{}, "a", "b", HistoryOptions{Limit: 10}); err == nil {
			t.Error("a bounded read without its start: no error")
		}
		h, err := ReadHistory(context.Background(), &fakeHistory{}, "a", "b", HistoryOptions{})
		if err != nil || !h.Empty() {
			t.Errorf("nothing: %v, empty %v", err, h.Empty())
		}
	})
}

// TestHistoryFamilies: the points of each address family taken at one
// time are summaries of their own; one family is fitted, the one asked
// for or the one with the most summaries, with the rates of it or of none.
func TestHistoryFamilies(t *testing.T) {
	var points []archive.Point
	add := func(family string, n int, rtt, bps float64) {
		for i := range n {
			at := t0.Add(time.Duration(i) * 30 * time.Second)
			for _, w := range [][2]string{{"a", "b"}, {"b", "a"}} {
				pt := func(m string, v float64) archive.Point {
					return archive.Point{T: at, Src: w[0], Dst: w[1], Test: "probes", Metric: m, Value: v, Family: family}
				}
				points = append(points, pt(metricRTTMin, rtt), pt(metricLoss, 0))
			}
		}
		points = append(points, archive.Point{T: t0, Src: "a", Dst: "b", Test: "bulk", Metric: metricThroughput, Value: bps, Family: family})
	}
	add("ipv4", 10, 0.020, 10e6)
	add("ipv6", 15, 0.030, 20e6)
	// A rate known of no family: a test run once.
	points = append(points, archive.Point{T: t0, Src: "b", Dst: "a", Test: "bulk", Metric: metricThroughput, Value: 30e6})
	for _, tc := range []struct {
		name, family, want string
		summaries          int
		rtt                time.Duration
		rates              []float64
	}{
		{"most summaries", "", "ipv6", 30, 30 * time.Millisecond, []float64{20e6, 30e6}},
		{"ipv6", "ipv6", "ipv6", 30, 30 * time.Millisecond, []float64{20e6, 30e6}},
		{"ipv4", "ipv4", "ipv4", 20, 20 * time.Millisecond, []float64{10e6, 30e6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := FromHistory("a", "b", points, HistoryOptions{Family: tc.family})
			if c.Family != tc.want || len(c.Summaries) != tc.summaries {
				t.Fatalf("family %q, %d summaries; want %q, %d", c.Family, len(c.Summaries), tc.want, tc.summaries)
			}
			for _, s := range c.Summaries {
				if s.MinRTT != tc.rtt {
					t.Fatalf("a summary of %v: the families' points merged", s.MinRTT)
				}
			}
			var rates []float64
			for _, s := range c.Throughput {
				rates = append(rates, s.BPS)
			}
			if slices.Sort(rates); !slices.Equal(rates, tc.rates) {
				t.Errorf("rates %v, want %v", rates, tc.rates)
			}
			h, err := ReadHistory(context.Background(), &fakeHistory{points: points}, "a", "b", HistoryOptions{From: t0, To: t0.Add(time.Hour), Limit: 100, Family: tc.family})
			if err != nil {
				t.Fatal(err)
			}
			if h.Family != tc.want || h.Summaries != tc.summaries || len(h.Campaign.Summaries) != tc.summaries || h.Cut {
				t.Errorf("read: family %q, %d summaries (%d fitted), cut %v; want %q, %d", h.Family, h.Summaries, len(h.Campaign.Summaries), h.Cut, tc.want, tc.summaries)
			}
			tw, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(tw.Notes, func(n string) bool { return strings.Contains(n, tc.want) }) {
				t.Errorf("notes %q do not name the family %s", tw.Notes, tc.want)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		c := FromHistory("a", "b", historyOf(campaignOf(knownTruth[0].tr)), HistoryOptions{})
		if c.Family != "" || len(c.Summaries) == 0 {
			t.Errorf("family %q, %d summaries: want the tests run once's", c.Family, len(c.Summaries))
		}
		if c := FromHistory("a", "b", points, HistoryOptions{Family: "ipv5"}); len(c.Summaries)+len(c.Throughput) != 1 {
			t.Errorf("a family of no point: %d summaries, %d throughput; want the rate of no family only", len(c.Summaries), len(c.Throughput))
		}
	})
}
