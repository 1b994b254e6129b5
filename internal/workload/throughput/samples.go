package throughput

import (
	"fmt"
	"time"

	"github.com/wanlab/wanlab/internal/results"
)

// Samples turns a throughput test into archive samples named after the GGF
// NMWG hierarchy: bandwidth.achievable per stream and in sum for every
// interval, with the TCP state wanlab adds (tcp.cwnd, delay.roundtrip from
// TCP_INFO, tcp.retransmits), and loss.oneway and jitter for UDP.
func (r *Result) Samples(start time.Time) []results.Sample {
	var out []results.Sample
	path := r.Start.From + "->" + r.Start.To
	add := func(t time.Time, metric, subject string, v float64, unit string) {
		out = append(out, results.Sample{T: t, Metric: metric, Subject: subject, Value: v, Unit: unit})
	}
	for _, iv := range r.Intervals {
		t := start.Add(time.Duration(iv.Sum.End * float64(time.Second)))
		add(t, "bandwidth.achievable", path, iv.Sum.BitsPerSecond, "bit/s")
		for _, s := range iv.Streams {
			subject := fmt.Sprintf("%s stream %d", path, s.ID)
			add(t, "bandwidth.achievable", subject, s.BitsPerSecond, "bit/s")
			if s.Retransmits != nil {
				add(t, "tcp.retransmits", subject, float64(*s.Retransmits), "segments")
			}
			if s.RTT > 0 {
				add(t, "delay.roundtrip", subject, float64(s.RTT)/1e6, "s")
				add(t, "tcp.cwnd", subject, float64(s.SndCwnd), "bytes")
			}
			if s.Packets+s.LostPackets > 0 {
				add(t, "loss.oneway", subject, s.LostPercent/100, "ratio")
				add(t, "jitter", subject, s.JitterMS/1000, "s")
			}
		}
	}
	return out
}
