package monitor

import (
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
)

// Metric is one figure the service keeps of a path, in base units.
type Metric struct {
	Name string // the archive's
	// Series is the Prometheus series it is exposed as, with Labels.
	Series string
	Labels [][2]string
	NMWG   string // the NMWG characteristic, as a label
	Help   string
}

// Metrics are every figure a path can have.
var Metrics = []Metric{
	{"rtt_min_seconds", "wanlab_path_rtt_seconds", [][2]string{{"stat", "min"}}, results.DelayRoundtrip, "Round-trip time of the path's probes over the last summary"},
	{"rtt_median_seconds", "wanlab_path_rtt_seconds", [][2]string{{"stat", "median"}}, results.DelayRoundtrip, ""},
	{"rtt_max_seconds", "wanlab_path_rtt_seconds", [][2]string{{"stat", "max"}}, results.DelayRoundtrip, ""},
	{"loss_ratio", "wanlab_path_loss_ratio", nil, results.LossRoundtrip, "Share of probes with no reply over the last summary"},
	{"jitter_seconds", "wanlab_path_jitter_seconds", nil, results.Jitter, "Mean difference between consecutive round trips (IPDV)"},
	{"owd_forward_seconds", "wanlab_path_one_way_delay_seconds", [][2]string{{"direction", "forward"}}, results.DelayOneway, "Median one-way delay, where the hosts' clocks allow it"},
	{"owd_back_seconds", "wanlab_path_one_way_delay_seconds", [][2]string{{"direction", "back"}}, results.DelayOneway, ""},
	{"duplicates_ratio", "wanlab_path_duplicates_ratio", nil, "duplicates", "Share of probes that came back more than once"},
	{"reordered_ratio", "wanlab_path_reordered_ratio", nil, "reordering", "Share of probes that arrived after a later one (RFC 4737)"},
	{"throughput_bits_per_second", "wanlab_path_throughput_bits_per_second", nil, results.BandwidthAchievable, "Throughput of the path's last test (memory to memory, or disk to disk for transfers)"},
	{"retransmits", "wanlab_path_tcp_retransmits", nil, results.TCPRetransmitsTotal, "TCP segments retransmitted in the path's last test"},
	{"hop_count", "wanlab_path_hops", nil, "hoplist", "Hops of the path's last trace (its end included)"},
	{"disk_read_bits_per_second", "wanlab_host_disk_bits_per_second", [][2]string{{"op", "read"}}, "disk", "A host's sequential disk rate (src and dst are the host), file bytes per second x 8"},
	{"disk_write_bits_per_second", "wanlab_host_disk_bits_per_second", [][2]string{{"op", "write"}}, "disk", ""},
	{"src_cpu_percent", "wanlab_path_host_cpu_percent", [][2]string{{"end", "src"}}, results.CPUUtilization, "CPU of each end host during the path's last test, % of one core"},
	{"dst_cpu_percent", "wanlab_path_host_cpu_percent", [][2]string{{"end", "dst"}}, results.CPUUtilization, ""},
}

// MetricByName finds a metric.
func MetricByName(name string) (Metric, bool) {
	i := slices.IndexFunc(Metrics, func(m Metric) bool { return m.Name == name })
	if i < 0 {
		return Metric{}, false
	}
	return Metrics[i], true
}

// ProbePoints are a probe summary's figures.
func ProbePoints(at time.Time, test string, r *measure.ProbeResult) []archive.Point {
	p := func(metric string, v float64) archive.Point {
		return archive.Point{T: at, Src: r.From, Dst: r.To, Test: test, Metric: metric, Value: v}
	}
	var out []archive.Point
	if r.Sent > 0 {
		out = append(out, p("loss_ratio", float64(r.Sent-r.Received)/float64(r.Sent)),
			p("duplicates_ratio", float64(r.Duplicates)/float64(r.Sent)))
	}
	if r.Received > 0 {
		out = append(out, p("rtt_min_seconds", r.RTTms.Min/1e3), p("rtt_median_seconds", r.RTTms.P50/1e3),
			p("rtt_max_seconds", r.RTTms.Max/1e3), p("jitter_seconds", r.JitterMS/1e3),
			p("reordered_ratio", Reordered(r)))
		if r.OneWay.Reliable {
			out = append(out, p("owd_forward_seconds", r.OneWay.Forward.P50/1e3), p("owd_back_seconds", r.OneWay.Back.P50/1e3))
		}
	}
	return out
}

// Reordered is the share of received probes that reached the reflector
// after a probe sent later (RFC 4737's reordered packets, on the way out).
func Reordered(r *measure.ProbeResult) float64 {
	var got []int
	for i, p := range r.Probes {
		if !p.Lost() {
			got = append(got, i)
		}
	}
	if len(got) == 0 {
		return 0
	}
	slices.SortStableFunc(got, func(a, b int) int {
		x, y := r.Probes[a].ReflectRx, r.Probes[b].ReflectRx
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	late, top := 0, -1
	for _, i := range got {
		if s := r.Probes[i].Seq; s < top {
			late++
		} else {
			top = s
		}
	}
	return float64(late) / float64(len(got))
}

// ThroughputPoints are a throughput test's figures.
func ThroughputPoints(at time.Time, test string, r *measure.ThroughputResult) []archive.Point {
	p := func(metric string, v float64) archive.Point {
		return archive.Point{T: at, Src: r.Start.From, Dst: r.Start.To, Test: test, Metric: metric, Value: v}
	}
	out := []archive.Point{
		p("throughput_bits_per_second", r.End.SumReceived.BitsPerSecond),
		p("src_cpu_percent", r.End.CPU.SenderHost),
		p("dst_cpu_percent", r.End.CPU.ReceiverHost),
	}
	if rt := r.End.SumSent.Retransmits; rt != nil {
		out = append(out, p("retransmits", float64(*rt)))
	}
	return out
}

// TransferPoints are a disk-to-disk transfer's figures.
func TransferPoints(at time.Time, test string, r *measure.TransferResult) []archive.Point {
	l := r.There
	if l == nil {
		return nil
	}
	p := func(metric string, v float64) archive.Point {
		return archive.Point{T: at, Src: l.From, Dst: l.To, Test: test, Metric: metric, Value: v}
	}
	return []archive.Point{
		p("throughput_bits_per_second", l.BitsPerSecond),
		p("src_cpu_percent", l.CPU.SenderHost),
		p("dst_cpu_percent", l.CPU.ReceiverHost),
	}
}

// DiskPoints are a host's disk test's figures, as a path from the host to
// itself.
func DiskPoints(at time.Time, test, host string, r *agentpb.DiskResult) []archive.Point {
	p := func(metric string, v float64) archive.Point {
		return archive.Point{T: at, Src: host, Dst: host, Test: test, Metric: metric, Value: v}
	}
	return []archive.Point{p("disk_read_bits_per_second", r.ReadBytesPerSecond*8), p("disk_write_bits_per_second", r.WriteBytesPerSecond*8)}
}
