package core

import (
	"slices"

	"github.com/wanlab/wanlab/internal/results"
)

// Name is a monitoring metric's name as the archive keeps it (a point's
// Metric), in base units: the one place these names are written.
type Name string

// The figures of a path (src -> dst), and of a host's disk (src = dst).
const (
	RTTMin          Name = "rtt_min_seconds"
	RTTMedian       Name = "rtt_median_seconds"
	RTTMax          Name = "rtt_max_seconds"
	LossRatio       Name = "loss_ratio"
	LossForward     Name = "loss_forward_ratio"
	LossBack        Name = "loss_back_ratio"
	Jitter          Name = "jitter_seconds"
	OWDForward      Name = "owd_forward_seconds"
	OWDBack         Name = "owd_back_seconds"
	DuplicatesRatio Name = "duplicates_ratio"
	ReorderedRatio  Name = "reordered_ratio"
	ThroughputRate  Name = "throughput_bits_per_second"
	Retransmits     Name = "retransmits"
	HopCount        Name = "hop_count"
	DiskRead        Name = "disk_read_bits_per_second"
	DiskWrite       Name = "disk_write_bits_per_second"
	SrcCPU          Name = "src_cpu_percent"
	DstCPU          Name = "dst_cpu_percent"
)

// The one-way figures of a probed path that hold without synchronised
// clocks (package owd), while a direction is tracked: each direction's
// change of delay since its window started (the sum of its steps, the
// clocks' offset unknown) and how far that may be off, and the drift of
// dst's clock against src's.
const (
	OWDForwardChange      Name = "owd_forward_change_seconds"
	OWDBackChange         Name = "owd_back_change_seconds"
	OWDForwardUncertainty Name = "owd_forward_change_uncertainty_seconds"
	OWDBackUncertainty    Name = "owd_back_change_uncertainty_seconds"
	ClockSkew             Name = "clock_skew_ppm"
)

// The figures of an interface: its points have the device (or host) as
// src and the interface as dst, of test "snmp" (or "agent").
const (
	IfaceIn    Name = "in_bits_per_second"
	IfaceOut   Name = "out_bits_per_second"
	IfaceSpeed Name = "speed_bits_per_second"
)

// Unit is what a metric's value counts, as its name ends.
type Unit string

// Units.
const (
	Seconds       Unit = "seconds"
	Ratio         Unit = "ratio"
	BitsPerSecond Unit = "bits_per_second"
	Percent       Unit = "percent"
	PPM           Unit = "ppm" // parts per million
	Count         Unit = ""
)

// Metric is one figure the service keeps, in base units.
type Metric struct {
	Name Name
	// Series is the Prometheus series it is exposed as, with Labels.
	Series string
	Labels [][2]string
	NMWG   string // the NMWG characteristic, as a label
	Help   string
	Unit   Unit
}

// Metrics are every figure a path can have.
var Metrics = []Metric{
	{RTTMin, "wanlab_path_rtt_seconds", [][2]string{{"stat", "min"}}, results.DelayRoundtrip, "Round-trip time of the path's probes over the last summary", Seconds},
	{RTTMedian, "wanlab_path_rtt_seconds", [][2]string{{"stat", "median"}}, results.DelayRoundtrip, "", Seconds},
	{RTTMax, "wanlab_path_rtt_seconds", [][2]string{{"stat", "max"}}, results.DelayRoundtrip, "", Seconds},
	{LossRatio, "wanlab_path_loss_ratio", nil, results.LossRoundtrip, "Share of probes with no reply over the last summary", Ratio},
	{LossForward, "wanlab_path_one_way_loss_ratio", [][2]string{{"direction", "forward"}}, results.LossOneway, "Share of probes lost on the way from src to dst (forward) or of replies lost on the way back (back) over the last summary, where the reflector numbers what it receives", Ratio},
	{LossBack, "wanlab_path_one_way_loss_ratio", [][2]string{{"direction", "back"}}, results.LossOneway, "", Ratio},
	{Jitter, "wanlab_path_jitter_seconds", nil, results.Jitter, "Mean difference between consecutive round trips (IPDV)", Seconds},
	{OWDForward, "wanlab_path_one_way_delay_seconds", [][2]string{{"direction", "forward"}}, results.DelayOneway, "Median one-way delay, where the hosts' clocks allow it", Seconds},
	{OWDBack, "wanlab_path_one_way_delay_seconds", [][2]string{{"direction", "back"}}, results.DelayOneway, "", Seconds},
	{OWDForwardChange, "wanlab_path_one_way_delay_change_seconds", [][2]string{{"direction", "forward"}}, results.DelayOneway, "Change of the one-way delay since the direction's tracking (re)started, the clocks' offset unknown: the sum of the steps found (owd_step); absent while it learns", Seconds},
	{OWDBackChange, "wanlab_path_one_way_delay_change_seconds", [][2]string{{"direction", "back"}}, results.DelayOneway, "", Seconds},
	{OWDForwardUncertainty, "wanlab_path_one_way_delay_change_uncertainty_seconds", [][2]string{{"direction", "forward"}}, results.DelayOneway, "How far the one-way delay change may be off: the window's uncertainty now (\"changes reliable to ±this\") and its steps', combined", Seconds},
	{OWDBackUncertainty, "wanlab_path_one_way_delay_change_uncertainty_seconds", [][2]string{{"direction", "back"}}, results.DelayOneway, "", Seconds},
	{ClockSkew, "wanlab_path_clock_skew_ppm", nil, "clock.skew", "Drift of dst's clock against src's, in parts per million (positive: dst's gains), from the one-way delays' lower envelope where the clocks are not synchronised", PPM},
	{DuplicatesRatio, "wanlab_path_duplicates_ratio", nil, "duplicates", "Share of probes that came back more than once", Ratio},
	{ReorderedRatio, "wanlab_path_reordered_ratio", nil, "reordering", "Share of probes that arrived after a later one (RFC 4737)", Ratio},
	{ThroughputRate, "wanlab_path_throughput_bits_per_second", nil, results.BandwidthAchievable, "Throughput of the path's last test (memory to memory, or disk to disk for transfers)", BitsPerSecond},
	{Retransmits, "wanlab_path_tcp_retransmits", nil, results.TCPRetransmitsTotal, "TCP segments retransmitted in the path's last test", Count},
	{HopCount, "wanlab_path_hops", nil, "hoplist", "Hops of the path's last trace (its end included)", Count},
	{DiskRead, "wanlab_host_disk_bits_per_second", [][2]string{{"op", "read"}}, "disk", "A host's sequential disk rate (src and dst are the host), file bytes per second x 8", BitsPerSecond},
	{DiskWrite, "wanlab_host_disk_bits_per_second", [][2]string{{"op", "write"}}, "disk", "", BitsPerSecond},
	{SrcCPU, "wanlab_path_host_cpu_percent", [][2]string{{"end", "src"}}, results.CPUUtilization, "CPU of each end host during the path's last test, % of one core", Percent},
	{DstCPU, "wanlab_path_host_cpu_percent", [][2]string{{"end", "dst"}}, results.CPUUtilization, "", Percent},
}

// Interface are the figures of an interface; /metrics exposes them from
// the interfaces' state (the Series below), not from these points.
var Interface = []Metric{
	{Name: IfaceIn, Series: SeriesIfaceRate, Labels: [][2]string{{"direction", "in"}}, Unit: BitsPerSecond},
	{Name: IfaceOut, Series: SeriesIfaceRate, Labels: [][2]string{{"direction", "out"}}, Unit: BitsPerSecond},
	{Name: IfaceSpeed, Series: SeriesIfaceSpeed, Unit: BitsPerSecond},
}

// The series /metrics exposes besides the path figures': the service's
// own state and the interfaces'.
const (
	SeriesPathUp        = "wanlab_path_up"
	SeriesAlertActive   = "wanlab_alert_active"
	SeriesTests         = "wanlab_monitor_tests_total"
	SeriesTestsLate     = "wanlab_monitor_tests_late_total"
	SeriesTestsRunning  = "wanlab_monitor_tests_running"
	SeriesQueueDepth    = "wanlab_monitor_queue_depth"
	SeriesArchiveUp     = "wanlab_monitor_archive_up"
	SeriesArchiveLag    = "wanlab_monitor_archive_lag_seconds"
	SeriesBufferBytes   = "wanlab_monitor_buffer_bytes"
	SeriesBufferDropped = "wanlab_monitor_buffer_dropped_total"
	SeriesHostDown      = "wanlab_host_down"
	SeriesIfaceRate     = "wanlab_interface_bits_per_second"
	SeriesIfaceUse      = "wanlab_interface_utilisation_ratio"
	SeriesIfaceSpeed    = "wanlab_interface_speed_bits_per_second"
	SeriesSNMPUp        = "wanlab_snmp_up"
	// An open incident's segment and figures, and its confidence.
	SeriesIncidentActive     = "wanlab_incident_active"
	SeriesIncidentConfidence = "wanlab_incident_confidence"
)

// Series are every series name /metrics may expose.
func Series() []string {
	out := []string{SeriesPathUp, SeriesAlertActive, SeriesTests, SeriesTestsLate, SeriesTestsRunning, SeriesQueueDepth,
		SeriesArchiveUp, SeriesArchiveLag, SeriesBufferBytes, SeriesBufferDropped, SeriesHostDown,
		SeriesIfaceRate, SeriesIfaceUse, SeriesIfaceSpeed, SeriesSNMPUp, SeriesIncidentActive, SeriesIncidentConfidence}
	for _, m := range Metrics {
		if !slices.Contains(out, m.Series) {
			out = append(out, m.Series)
		}
	}
	return out
}

// ByName finds a metric of a path or of an interface by its archive name.
func ByName(name string) (Metric, bool) {
	for _, table := range [][]Metric{Metrics, Interface} {
		if i := slices.IndexFunc(table, func(m Metric) bool { return string(m.Name) == name }); i >= 0 {
			return table[i], true
		}
	}
	return Metric{}, false
}

// PathMetric finds a metric of a path (not of an interface).
func PathMetric(name string) (Metric, bool) {
	m, ok := ByName(name)
	return m, ok && !slices.ContainsFunc(Interface, func(i Metric) bool { return i.Name == m.Name })
}

// Of are the metrics a test type's results have, the one shown by default
// first.
func Of(testType string) []Name {
	switch testType {
	case Probe:
		return []Name{RTTMedian, RTTMin, LossRatio, LossForward, LossBack, Jitter, OWDForward, OWDBack, ReorderedRatio, DuplicatesRatio,
			OWDForwardChange, OWDBackChange, OWDForwardUncertainty, OWDBackUncertainty, ClockSkew}
	case Throughput, Transfer:
		return []Name{ThroughputRate, Retransmits, SrcCPU, DstCPU}
	case Trace:
		return []Name{HopCount}
	case Disk:
		return []Name{DiskRead, DiskWrite}
	}
	return nil
}
