package run

import (
	"math"
	"strings"
)

// Column is one figure of a run's summary table.
type Column struct {
	Head string
	// Metric names the step metric shown; "a|b" shows a, or b where the step
	// has no a (a host's CPU as a share of its quota, or of one core when it
	// has none).
	Metric string
	Format string // for fmt
}

// Columns are the figures the summary tables (wanlab run, the report) show
// for each kind of workload.
var Columns = map[string][]Column{
	"eventdb": {
		{"JOBS", "jobs", "%.0f"}, {"OK", "jobs_ok", "%.0f"}, {"TIMEOUT", "jobs_timeout", "%.0f"}, {"FAILED", "jobs_failed", "%.0f"},
		{"MBIT/S", "throughput_mbps", "%.1f"}, {"SERVER CPU%", "server_cpu_quota_pct|server_cpu_pct", "%.0f"}, {"CLIENT CPU%", "client_cpu_quota_pct|client_cpu_pct", "%.0f"},
		{"MEAN WCT s", "mean_wallclock_s", "%.1f"},
	},
	"taskfarm": {
		{"WORKERS", "workers", "%.0f"}, {"TASKS", "tasks_done", "%.0f"}, {"TIME s", "seconds", "%.1f"}, {"IDEAL s", "ideal_seconds", "%.1f"},
		{"TASKS/s", "task_rate_hz", "%.1f"}, {"RTT p50 ms", "roundtrip_p50_ms", "%.1f"}, {"IDLE", "worker_idle_share", "%.2f"},
		{"MASTER CPU%", "master_cpu_quota_pct|master_cpu_pct", "%.0f"},
	},
	"mesh": {
		{"TRANSFERS", "transfers", "%.0f"}, {"OK", "jobs_ok", "%.0f"}, {"CORRUPT", "jobs_corrupt", "%.0f"}, {"FAILED", "jobs_failed", "%.0f"},
		{"MBIT/S", "aggregate_mbps", "%.1f"}, {"MEAN s", "mean_wallclock_s", "%.1f"},
	},
	"throughput": {
		{"STREAMS", "streams", "%.0f"}, {"MBIT/S", "throughput_mbps", "%.2f"}, {"RETRANS", "retransmits", "%.0f"},
		{"SND CPU%", "sender_cpu_pct", "%.0f"}, {"RCV CPU%", "receiver_cpu_pct", "%.0f"},
	},
	"transfer": {
		{"STREAMS", "streams", "%.0f"}, {"MBIT/S", "there_mbps", "%.2f"}, {"BACK", "back_mbps", "%.2f"},
		{"RATIO", "there_compression_ratio", "%.2f"}, {"SND CPU%", "there_sender_cpu_pct", "%.0f"}, {"CHECKSUM", "checksum_ok", "%.0f"},
	},
	"probe": {
		{"RTT p50 ms", "rtt_p50_ms", "%.2f"}, {"RTT p99 ms", "rtt_p99_ms", "%.2f"}, {"JITTER ms", "jitter_ms", "%.3f"}, {"LOSS%", "lost_percent", "%.2f"},
	},
	"impact": {
		{"IDLE RTT ms", "idle_rtt_p50_ms", "%.1f"}, {"LOADED RTT ms", "loaded_rtt_p50_ms", "%.1f"}, {"LOSS pts", "loss_increase_points", "%.2f"},
		{"LOAD MBIT/S", "load_mbps", "%.2f"},
	},
}

// Lookup returns metric names ("a|b": a, else b) of a step's metrics, or
// NaN when the step has none of them.
func Lookup(m map[string]float64, names string) float64 {
	for _, k := range strings.Split(names, "|") {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return math.NaN()
}
