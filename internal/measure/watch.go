package measure

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/tcpwatch"
	"gonum.org/v1/gonum/stat"
)

// WatchResult is what a watch of one host's TCP connections saw.
type WatchResult struct {
	Host       string           `json:"host"`
	IntervalMS float64          `json:"interval_ms"`
	Spec       tcpwatch.Spec    `json:"select"`
	Start      time.Time        `json:"start"`
	Summary    tcpwatch.Summary `json:"summary"`
	// Connections are every selected connection the watch saw, in the
	// order they appeared.
	Connections []*WatchedConn `json:"connections"`
	Partial     bool           `json:"partial"`
	Error       string         `json:"error,omitempty"`
}

// WatchedConn is one connection over the watch: its figures, and its
// series at the watch's interval, each point over the interval before it.
type WatchedConn struct {
	ID     int    `json:"id"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
	// Sender says the connection mostly sent (bytes acknowledged) rather
	// than received; the shares of time limited are a sender's.
	Sender        bool    `json:"sender"`
	Seconds       float64 `json:"seconds"`
	Bytes         uint64  `json:"bytes"`
	ThroughputBPS float64 `json:"throughput_bps"`
	// PeakBPS is the 95th percentile of its intervals' throughput: a
	// single 10 ms interval can catch a burst of acknowledgements.
	PeakBPS     float64 `json:"peak_bps"`
	RTTms       float64 `json:"rtt_ms"` // mean smoothed round trip
	MaxCwnd     uint64  `json:"max_cwnd_bytes"`
	Retransmits uint32  `json:"retransmits"`
	// Shares of the sender's time (0-1): with nothing to send (the
	// application did not keep the socket fed), and sending but held by
	// the congestion window, the receiver's window or the send buffer.
	Limited Limited      `json:"limited"`
	Series  []WatchPoint `json:"series"`
	// first and last are its first and latest samples; recent those of
	// the last shareWindow.
	first, last *tcpwatch.Sample
	recent      []*tcpwatch.Sample
	rttSum      float64
	rttCount    int
}

// Limited are shares of a sender's time.
type Limited struct {
	App    float64 `json:"application"`
	Cwnd   float64 `json:"cwnd"`
	Rwnd   float64 `json:"rwnd"`
	Sndbuf float64 `json:"sndbuf"`
}

// Name is the connection as reports show it.
func (c *WatchedConn) Name() string { return c.Local + "->" + c.Remote }

// WatchPoint is a connection over one interval.
type WatchPoint struct {
	T             float64 `json:"t"` // seconds from the watch's start, at the interval's end
	ThroughputBPS float64 `json:"throughput_bps"`
	Cwnd          uint64  `json:"cwnd_bytes"`
	Ssthresh      uint64  `json:"ssthresh_bytes,omitempty"`
	RTTms         float64 `json:"rtt_ms"`
	RTTVarMs      float64 `json:"rttvar_ms"`
	Retransmits   uint32  `json:"retransmits"`
	PacingBPS     float64 `json:"pacing_bps"`
	DeliveryBPS   float64 `json:"delivery_bps"`
	InFlight      uint32  `json:"in_flight_segments"`
	NotSent       uint32  `json:"notsent_bytes"`
	Limited       Limited `json:"limited"`
	// RetransmitsTotal counts since the connection began, as TCP_INFO does.
	RetransmitsTotal uint32 `json:"retransmits_total"`
	dt               float64
}

// Watch samples a host's TCP connections (tcpwatch) until the spec's
// duration is over or ctx ends; a watch ended by ctx is stopped, not cut,
// so that its last samples and summary arrive. progress, if set, sees the
// result after each batch of samples (about twice a second).
func Watch(ctx context.Context, ep Endpoint, spec tcpwatch.Spec, progress func(*WatchResult)) (*WatchResult, error) {
	res := &WatchResult{Host: ep.Host, IntervalMS: float64(spec.Interval) / 1e6, Spec: spec, Start: time.Now()}
	call, cancel := context.WithCancel(context.WithoutCancel(AsTest(ctx)))
	defer cancel()
	// Its own id, so that one controller may watch a host twice at once.
	r, err := StartRole(call, ep, datadir.NewName("watch"), agentapi.RoleWatch, spec, false)
	if err != nil {
		return nil, err
	}
	byID := map[int]*WatchedConn{}
	r.OnData = func(b []byte) error {
		var batch tcpwatch.Batch
		if err := json.Unmarshal(b, &batch); err != nil {
			return fmt.Errorf("reading the samples of the watch on %s: %w", ep.Host, err)
		}
		for _, c := range batch.Conns {
			wc := &WatchedConn{ID: c.ID, Local: c.Local, Remote: c.Remote}
			byID[c.ID] = wc
			res.Connections = append(res.Connections, wc)
		}
		for i := range batch.Samples {
			if wc := byID[batch.Samples[i].Conn]; wc != nil {
				wc.add(res.Start, &batch.Samples[i])
			}
		}
		if progress != nil {
			progress(res)
		}
		return nil
	}
	stopped := context.AfterFunc(ctx, func() { r.Stop(call) })
	defer stopped()
	err = r.Summary(nil, &res.Summary)
	for _, c := range res.Connections {
		c.finish()
	}
	if err != nil {
		res.Partial, res.Error = true, err.Error()
		return res, err
	}
	if res.Summary.Error != "" {
		res.Partial, res.Error = true, res.Summary.Error
		return res, fmt.Errorf("the watch on %s: %s", ep.Host, res.Summary.Error)
	}
	return res, nil
}

// add takes one sample: a point over the interval since the last one.
func (c *WatchedConn) add(start time.Time, s *tcpwatch.Sample) {
	if s.RTT > 0 {
		c.rttSum += float64(s.RTT) / 1e3
		c.rttCount++
	}
	c.MaxCwnd = max(c.MaxCwnd, uint64(s.Cwnd)*uint64(s.MSS))
	if c.first == nil {
		c.first = s
	}
	p := c.last
	c.last = s
	c.recent = append(c.recent, s)
	if p == nil {
		return
	}
	dt := float64(s.T-p.T) / 1e9
	if dt <= 0 {
		return
	}
	// A sender's data counts when delivered (cumulative or selective
	// acknowledgement), so that the cumulative ACK that ends a loss
	// recovery does not show as a burst many times the path's rate.
	sent := uint64(s.Delivered-p.Delivered) * uint64(s.MSS)
	if s.Delivered < p.Delivered {
		sent = s.BytesAcked - p.BytesAcked
	}
	received := s.BytesReceived - p.BytesReceived
	pt := WatchPoint{
		T: time.Unix(0, s.T).Sub(start).Seconds(), ThroughputBPS: float64(max(sent, received)) * 8 / dt,
		Cwnd: uint64(s.Cwnd) * uint64(s.MSS), RTTms: float64(s.RTT) / 1e3, RTTVarMs: float64(s.RTTVar) / 1e3,
		Retransmits: s.Retrans - p.Retrans, PacingBPS: float64(s.PacingRate) * 8, DeliveryBPS: float64(s.DeliveryRate) * 8,
		InFlight: s.Unacked, NotSent: s.NotSent, RetransmitsTotal: s.Retrans, dt: dt,
	}
	// An unset slow-start threshold reads as "infinite" (0x7fffffff).
	if s.Ssthresh > 0 && s.Ssthresh < math.MaxInt32 {
		pt.Ssthresh = uint64(s.Ssthresh) * uint64(s.MSS)
	}
	// The kernel counts busy and limited time in jiffies (4 ms at HZ=250):
	// over one 10 ms interval a share is off by up to 40%, so each point's
	// shares cover the last shareWindow.
	k := 0
	for k < len(c.recent)-2 && s.T-c.recent[k+1].T >= int64(shareWindow) {
		k++
	}
	c.recent = c.recent[k:]
	pt.Limited = shares(c.recent[0], s)
	c.Series = append(c.Series, pt)
}

// shareWindow is the span the shares of a point's time cover.
const shareWindow = 100 * time.Millisecond

// shares are the shares of the time from a to b a sender spent with
// nothing to send, and held by each limit.
func shares(a, b *tcpwatch.Sample) Limited {
	us := float64(b.T-a.T) / 1e3
	if us <= 0 {
		return Limited{}
	}
	busy := float64(b.Busy - a.Busy)
	rwnd, sndbuf := float64(b.RwndLimited-a.RwndLimited), float64(b.SndbufLimited-a.SndbufLimited)
	return Limited{
		App:    clamp01(1 - busy/us),
		Cwnd:   clamp01((busy - rwnd - sndbuf) / us),
		Rwnd:   clamp01(rwnd / us),
		Sndbuf: clamp01(sndbuf / us),
	}
}

func clamp01(x float64) float64 { return min(max(x, 0), 1) }

// finish sums the connection up: its bytes and shares of time from its
// first and last samples, so that the kernel's coarse clock does not
// bias them.
func (c *WatchedConn) finish() {
	if c.rttCount > 0 {
		c.RTTms = c.rttSum / float64(c.rttCount)
	}
	c.Sender = c.last != nil && c.last.BytesAcked > c.last.BytesReceived
	for i, p := range c.Series {
		if !c.Sender {
			c.Series[i].Limited = Limited{}
		}
		c.Retransmits += p.Retransmits
	}
	if len(c.Series) > 0 {
		rates := make([]float64, len(c.Series))
		for i, p := range c.Series {
			rates[i] = p.ThroughputBPS
		}
		slices.Sort(rates)
		c.PeakBPS = stat.Quantile(0.95, stat.Empirical, rates, nil)
	}
	if c.first == nil || c.last == c.first {
		return
	}
	c.Seconds = float64(c.last.T-c.first.T) / 1e9
	c.Bytes = max(c.last.BytesAcked-c.first.BytesAcked, c.last.BytesReceived-c.first.BytesReceived)
	c.ThroughputBPS = float64(c.Bytes) * 8 / c.Seconds
	if c.Sender {
		c.Limited = shares(c.first, c.last)
	}
}

// ConnSubject is a watched connection as samples name it.
func ConnSubject(host string, c *WatchedConn) string {
	return results.ConnSubject(host, c.Local, c.Remote)
}

// Samples are the watch's series as archive samples, NMWG-named where a
// name exists.
func (r *WatchResult) Samples() []archive.Sample {
	var out []archive.Sample
	for _, c := range r.Connections {
		sub := ConnSubject(r.Host, c)
		for _, p := range c.Series {
			t := r.Start.Add(time.Duration(p.T * 1e9)).UTC()
			add := func(metric string, v float64, unit string) {
				out = append(out, archive.Sample{T: t, Metric: metric, Subject: sub, Value: v, Unit: unit})
			}
			add(results.BandwidthAchievable, p.ThroughputBPS, "bit/s")
			add(results.TCPCwnd, float64(p.Cwnd), "bytes")
			add(results.DelayRoundtrip, p.RTTms/1e3, "s")
			add(results.TCPRTTVar, p.RTTVarMs/1e3, "s")
			add(results.TCPRetransmitsTotal, float64(p.RetransmitsTotal), "segments")
			add(results.TCPPacingRate, p.PacingBPS, "bit/s")
			add(results.TCPDeliveryRate, p.DeliveryBPS, "bit/s")
			if p.Ssthresh > 0 {
				add(results.TCPSsthresh, float64(p.Ssthresh), "bytes")
			}
			if c.Sender {
				add(results.TCPLimitedApp, p.Limited.App, "ratio")
				add(results.TCPLimitedCwnd, p.Limited.Cwnd, "ratio")
				add(results.TCPLimitedRwnd, p.Limited.Rwnd, "ratio")
				add(results.TCPLimitedSndbuf, p.Limited.Sndbuf, "ratio")
			}
		}
	}
	return out
}
