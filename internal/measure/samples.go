package measure

import (
	"fmt"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
)

// Samples turns a throughput test into archive samples named after the GGF
// NMWG hierarchy: bandwidth.achievable per stream and in sum for every
// interval, with the TCP state wanlab adds (tcp.cwnd, delay.roundtrip from
// TCP_INFO, tcp.retransmits), and loss.oneway and jitter for UDP.
func (r *ThroughputResult) Samples(start time.Time) []archive.Sample {
	var out []archive.Sample
	path := r.Start.From + "->" + r.Start.To
	add := func(t time.Time, metric, subject string, v float64, unit string) {
		out = append(out, archive.Sample{T: t, Metric: metric, Subject: subject, Value: v, Unit: unit})
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

// Samples turns a probe run into archive samples: delay.roundtrip and
// delay.oneway of every probe that came back, loss.roundtrip of every one.
func (r *ProbeResult) Samples() []archive.Sample {
	var out []archive.Sample
	path := r.From + "->" + r.To
	back := r.To + "->" + r.From
	for _, p := range r.Probes {
		t := time.Unix(0, p.Sent).UTC()
		lost := 0.0
		if p.Lost() {
			lost = 1
		} else {
			out = append(out,
				archive.Sample{T: t, Metric: "delay.roundtrip", Subject: path, Value: p.RTT().Seconds(), Unit: "s"},
				archive.Sample{T: t, Metric: "delay.oneway", Subject: path, Value: p.Forward().Seconds(), Unit: "s"},
				archive.Sample{T: t, Metric: "delay.oneway", Subject: back, Value: p.Back().Seconds(), Unit: "s"},
			)
		}
		out = append(out, archive.Sample{T: t, Metric: "loss.roundtrip", Subject: path, Value: lost, Unit: "ratio"})
	}
	return out
}
