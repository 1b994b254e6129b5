package results

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
var Columns = map[Kind][]Column{
	EventDB: {
		{"JOBS", Jobs, "%.0f"}, {"OK", JobsEnded("ok"), "%.0f"}, {"TIMEOUT", JobsEnded("timeout"), "%.0f"}, {"FAILED", JobsEnded("failed"), "%.0f"},
		{"MBIT/S", ThroughputMbps, "%.1f"}, {"SERVER CPU%", RoleCPU("server"), "%.0f"},
		{"CLIENT CPU%", RoleCPU("client"), "%.0f"},
		{"MEAN WCT s", MeanWallclockS, "%.1f"},
	},
	TaskFarm: {
		{"WORKERS", Workers, "%.0f"}, {"TASKS", TasksDone, "%.0f"}, {"TIME s", Seconds, "%.1f"}, {"IDEAL s", IdealSeconds, "%.1f"},
		{"TASKS/s", TaskRateHz, "%.1f"}, {"RTT p50 ms", RoundtripP50Ms, "%.1f"}, {"IDLE", WorkerIdleShare, "%.2f"},
		{"MASTER CPU%", RoleCPU("master"), "%.0f"},
	},
	Mesh: {
		{"TRANSFERS", Transfers, "%.0f"}, {"OK", JobsEnded("ok"), "%.0f"}, {"CORRUPT", JobsEnded("corrupt"), "%.0f"}, {"FAILED", JobsEnded("failed"), "%.0f"},
		{"MBIT/S", AggregateMbps, "%.1f"}, {"MEAN s", MeanWallclockS, "%.1f"},
	},
	Throughput: {
		{"STREAMS", Streams, "%.0f"}, {"MBIT/S", ThroughputMbps, "%.2f"}, {"RETRANS", Retransmits, "%.0f"},
		{"SND CPU%", SenderCPUPct, "%.0f"}, {"RCV CPU%", ReceiverCPUPct, "%.0f"},
	},
	Transfer: {
		{"STREAMS", Streams, "%.0f"}, {"MBIT/S", Leg(There, "mbps"), "%.2f"}, {"BACK", Leg(Back, "mbps"), "%.2f"},
		{"RATIO", Leg(There, "compression_ratio"), "%.2f"}, {"SND CPU%", Leg(There, SenderCPUPct), "%.0f"}, {"CHECKSUM", ChecksumOK, "%.0f"},
	},
	Probe: {
		{"RTT p50 ms", RTTP50Ms, "%.2f"}, {"RTT p99 ms", RTTP99Ms, "%.2f"}, {"JITTER ms", JitterMs, "%.3f"}, {"LOSS%", LostPercent, "%.2f"},
	},
	Command: {
		{"CLIENTS", Jobs, "%.0f"}, {"OK", JobsEnded("ok"), "%.0f"}, {"TIMEOUT", JobsEnded("timeout"), "%.0f"}, {"FAILED", JobsEnded("failed"), "%.0f"},
		{"MEAN WCT s", MeanWallclockS, "%.2f"}, {"SERVER CPU%", RoleCPU("server"), "%.0f"}, {"CLIENT CPU%", RoleCPU("client"), "%.0f"},
	},
	Impact: {
		{"IDLE RTT ms", Phase("idle", RTTP50Ms), "%.1f"}, {"LOADED RTT ms", Phase("loaded", RTTP50Ms), "%.1f"}, {"LOSS pts", LossIncreasePts, "%.2f"},
		{"LOAD MBIT/S", LoadMbps, "%.2f"},
	},
}

// RoleCPU looks up a role's CPU as a share of its hosts' quota, or of one
// core where they have none.
func RoleCPU(role string) string { return Role(role, CPUQuotaPct) + "|" + Role(role, CPUPct) }

// Lookup returns metric names ("a|b": a, else b) of a step's metrics, or
// NaN when the step has none of them.
func Lookup(m Metrics, names string) float64 {
	for _, k := range strings.Split(names, "|") {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return math.NaN()
}
