package analysis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/units"
	"gonum.org/v1/gonum/stat"
)

// WatchedConn is one connection a workload's watch saw during one step, as
// its samples sum it up: a sender's shares of time and how its throughput
// alternated.
type WatchedConn struct {
	Step     int    `json:"step"` // from 1, in the run
	Workload string `json:"workload"`
	Label    string `json:"label,omitempty"`
	// Conn is "HOST LOCAL->REMOTE".
	Conn    string  `json:"connection"`
	Seconds float64 `json:"seconds"`
	MeanBPS float64 `json:"mean_bps"`
	// PeakBPS is the 95th percentile of the intervals' throughput.
	PeakBPS float64 `json:"peak_bps"`
	// Sender says the watch saw the sender's side (the shares of time are
	// a sender's); a receiver's are zero.
	Sender bool `json:"sender"`
	// Shares of the sender's time: nothing to send, held by the congestion
	// window, by the receiver's window, by the send buffer.
	App, Cwnd, Rwnd, Sndbuf float64
	// Stalled is the share of intervals that moved under a tenth of the
	// connection's peak; BusyBPS the mean over the others.
	Stalled float64 `json:"stalled"`
	BusyBPS float64 `json:"busy_bps"`
	// The series, for plots: seconds from the step's start.
	T, BPS, App1, Cwnd1 []float64 `json:"-"`
}

// Idle thresholds: a sender application-limited this share of its time
// left the path idle; an interval under this share of the peak stalled.
const (
	appLimitedShare = 0.2
	stallShare      = 0.1
)

// LoadWatched reads the watched connections of a run, per step.
func LoadWatched(ctx context.Context, a *archive.Archive, id int64) ([]*WatchedConn, error) {
	steps, err := a.Steps(ctx, id)
	if err != nil {
		return nil, err
	}
	type span struct {
		start    time.Time
		workload string
		label    string
	}
	var spans []span
	for _, s := range steps {
		if t, err := time.Parse(time.RFC3339Nano, s.StartedAt); err == nil {
			spans = append(spans, span{t, s.Workload, s.Label})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
	byKey := map[string]*WatchedConn{}
	var out []*WatchedConn
	err = a.Samples(ctx, id, func(s archive.Sample) error {
		sub, ok := results.ParseSubject(s.Subject)
		if !ok || sub.Kind != results.OfConn {
			return nil
		}
		i, _ := slices.BinarySearchFunc(spans, s.T, func(sp span, t time.Time) int { return sp.start.Compare(t) })
		if i < len(spans) && spans[i].start.Equal(s.T) {
			i++
		}
		if i == 0 {
			return nil
		}
		sp := spans[i-1]
		key := fmt.Sprintf("%d %s", i, sub.Name)
		c := byKey[key]
		if c == nil {
			c = &WatchedConn{Step: i, Workload: sp.workload, Label: sp.label, Conn: sub.Name}
			byKey[key] = c
			out = append(out, c)
		}
		t := s.T.Sub(sp.start).Seconds()
		switch s.Metric {
		case results.BandwidthAchievable:
			c.T, c.BPS = append(c.T, t), append(c.BPS, s.Value)
		case results.TCPLimitedApp:
			c.Sender = true
			c.App1 = append(c.App1, s.Value)
		case results.TCPLimitedCwnd:
			c.Cwnd1 = append(c.Cwnd1, s.Value)
		case results.TCPLimitedRwnd:
			c.Rwnd += s.Value
		case results.TCPLimitedSndbuf:
			c.Sndbuf += s.Value
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, c := range out {
		c.sum()
	}
	return out, nil
}

// sum turns a connection's series into its figures. Points are taken at
// the watch's interval, so means over points are means over time.
func (c *WatchedConn) sum() {
	n := len(c.BPS)
	if n == 0 {
		return
	}
	var total float64
	for _, b := range c.BPS {
		total += b
	}
	sorted := slices.Clone(c.BPS)
	slices.Sort(sorted)
	c.PeakBPS = stat.Quantile(0.95, stat.Empirical, sorted, nil)
	c.MeanBPS = total / float64(n)
	if n > 1 {
		c.Seconds = c.T[n-1] - c.T[0] + (c.T[n-1]-c.T[0])/float64(n-1)
	}
	var busy float64
	stalled := 0
	for _, b := range c.BPS {
		if b < stallShare*c.PeakBPS {
			stalled++
		} else {
			busy += b
		}
	}
	c.Stalled = float64(stalled) / float64(n)
	if n > stalled {
		c.BusyBPS = busy / float64(n-stalled)
	}
	if m := float64(len(c.App1)); m > 0 {
		var app, cwnd float64
		for _, v := range c.App1 {
			app += v
		}
		for _, v := range c.Cwnd1 {
			cwnd += v
		}
		c.App, c.Cwnd, c.Rwnd, c.Sndbuf = app/m, cwnd/m, c.Rwnd/m, c.Sndbuf/m
	}
}

// InsideTCP finds, for each watched sender, whether the application or the
// path set its rate: an application that left the socket empty a fifth of
// the time or more left the path idle (the GridFTP pattern of
// ../shared/seeds/004, alternating between full rate and nothing); one
// that kept it fed was held by the congestion window, the receiver or its
// send buffer instead.
func InsideTCP(conns []*WatchedConn) []Finding {
	var out []Finding
	for _, c := range conns {
		if !c.Sender || c.Seconds <= 0 || c.PeakBPS == 0 {
			continue
		}
		where := fmt.Sprintf("step %d", c.Step)
		if c.Label != "" {
			where += " (" + c.Label + ")"
		}
		values := map[string]float64{"step": float64(c.Step), "mean_bps": c.MeanBPS, "peak_bps": c.PeakBPS, "busy_bps": c.BusyBPS,
			"application_limited": c.App, "cwnd_limited": c.Cwnd, "rwnd_limited": c.Rwnd, "sndbuf_limited": c.Sndbuf, "stalled": c.Stalled}
		var text string
		if c.App >= appLimitedShare {
			text = fmt.Sprintf("In %s, the application behind %s left the path idle: its sender had nothing to send %.0f%% of the time (application-limited, from TCP_INFO), and its throughput alternated between %s and under %s (%.0f%% of the intervals), averaging %s: the application's design, not the network, set the rate.",
				where, c.Conn, 100*c.App, units.Rate(c.BusyBPS), units.Rate(stallShare*c.PeakBPS), 100*c.Stalled, units.Rate(c.MeanBPS))
		} else {
			held := "the congestion window"
			share := c.Cwnd
			if c.Rwnd > share {
				held, share = "the receiver's window", c.Rwnd
			}
			if c.Sndbuf > share {
				held, share = "its send buffer", c.Sndbuf
			}
			text = fmt.Sprintf("In %s, the application behind %s kept the socket fed: its sender was idle %.0f%% of the time and held by %s %.0f%%, averaging %s (peak %s): the network path and TCP, not the application, set the rate.",
				where, c.Conn, 100*c.App, held, 100*share, units.Rate(c.MeanBPS), units.Rate(c.PeakBPS))
		}
		out = append(out, Finding{Kind: "application_limited", Workload: c.Workload, Text: text, Values: values})
	}
	return out
}
