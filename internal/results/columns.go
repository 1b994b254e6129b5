package results

import (
	"math"
	"strings"
)

// Column is one figure of a run's summary table.
type Column struct {
	Head string
	// Figures are what the column shows: the first of them the step has
	// (a host's CPU as a share of its quota, or of one core when it has
	// none).
	Figures []Figure
	Format  string // for fmt
}

// Value is the column's figure of a step: the first of its Figures that m
// has.
func (c Column) Value(m Metrics) (float64, bool) { return m.First(c.Figures...) }

// Shows says whether the column shows a figure of the family.
func (c Column) Shows(f Family) bool {
	for _, fig := range c.Figures {
		if fig.Family == f {
			return true
		}
	}
	return false
}

// col is a column of one figure.
func col(head string, f Figure, format string) Column {
	return Column{Head: head, Figures: []Figure{f}, Format: format}
}

// Columns are the figures the summary tables (wanlab run, the report) show
// for each kind of workload.
var Columns = map[Kind][]Column{
	EventDB: {
		col("JOBS", Named(Jobs), "%.0f"), col("OK", JobsWith("ok"), "%.0f"), col("TIMEOUT", JobsWith("timeout"), "%.0f"), col("FAILED", JobsWith("failed"), "%.0f"),
		col("MBIT/S", Named(ThroughputMbps), "%.1f"), {"SERVER CPU%", RoleCPUFigures("server"), "%.0f"},
		{"CLIENT CPU%", RoleCPUFigures("client"), "%.0f"},
		col("MEAN WCT s", Named(MeanWallclockS), "%.1f"),
	},
	TaskFarm: {
		col("WORKERS", Named(Workers), "%.0f"), col("TASKS", Named(TasksDone), "%.0f"), col("TIME s", Named(Seconds), "%.1f"), col("IDEAL s", Named(IdealSeconds), "%.1f"),
		col("TASKS/s", Named(TaskRateHz), "%.1f"), col("RTT p50 ms", Named(RoundtripP50Ms), "%.1f"), col("IDLE", Named(WorkerIdleShare), "%.2f"),
		{"MASTER CPU%", RoleCPUFigures("master"), "%.0f"},
	},
	Mesh: {
		col("TRANSFERS", Named(Transfers), "%.0f"), col("OK", JobsWith("ok"), "%.0f"), col("CORRUPT", JobsWith("corrupt"), "%.0f"), col("FAILED", JobsWith("failed"), "%.0f"),
		col("MBIT/S", Named(AggregateMbps), "%.1f"), col("MEAN s", Named(MeanWallclockS), "%.1f"),
	},
	Throughput: {
		col("STREAMS", Named(Streams), "%.0f"), col("MBIT/S", Named(ThroughputMbps), "%.2f"), col("RETRANS", Named(Retransmits), "%.0f"),
		col("SND CPU%", CPUPct.OfRole("sender"), "%.0f"), col("RCV CPU%", CPUPct.OfRole("receiver"), "%.0f"),
	},
	Transfer: {
		col("STREAMS", Named(Streams), "%.0f"), col("MBIT/S", Named(LegMbps).OnLeg(There), "%.2f"), col("BACK", Named(LegMbps).OnLeg(Back), "%.2f"),
		col("RATIO", Named(CompressionRatio).OnLeg(There), "%.2f"), col("SND CPU%", CPUPct.OfRole("sender").OnLeg(There), "%.0f"), col("CHECKSUM", Named(ChecksumOK), "%.0f"),
	},
	Probe: {
		col("RTT p50 ms", Named(RTTP50Ms), "%.2f"), col("RTT p99 ms", Named(RTTP99Ms), "%.2f"), col("JITTER ms", Named(JitterMs), "%.3f"), col("LOSS%", Named(LostPercent), "%.2f"),
	},
	Command: {
		col("CLIENTS", Named(Jobs), "%.0f"), col("OK", JobsWith("ok"), "%.0f"), col("TIMEOUT", JobsWith("timeout"), "%.0f"), col("FAILED", JobsWith("failed"), "%.0f"),
		col("MEAN WCT s", Named(MeanWallclockS), "%.2f"), {"SERVER CPU%", RoleCPUFigures("server"), "%.0f"}, {"CLIENT CPU%", RoleCPUFigures("client"), "%.0f"},
	},
	Impact: {
		col("IDLE RTT ms", Named(RTTP50Ms).InPhase(Idle), "%.1f"), col("LOADED RTT ms", Named(RTTP50Ms).InPhase(Loaded), "%.1f"), col("LOSS pts", Named(LossIncreasePts), "%.2f"),
		col("LOAD MBIT/S", Named(LoadMbps), "%.2f"),
	},
}

// RoleCPUFigures are a role's CPU as a share of its hosts' quota, then as
// a share of one core (for hosts with no quota): read the first a step has.
func RoleCPUFigures(role string) []Figure {
	return []Figure{CPUQuotaPct.OfRole(role), CPUPct.OfRole(role)}
}

// RoleCPU looks up a role's CPU as a share of its hosts' quota, or of one
// core where they have none ("a|b", for Lookup).
//
// Deprecated: read RoleCPUFigures with Metrics.First.
func RoleCPU(role string) string {
	var names []string
	for _, f := range RoleCPUFigures(role) {
		names = append(names, f.String())
	}
	return strings.Join(names, "|")
}

// Lookup returns metric names ("a|b": a, else b) of a step's metrics, or
// NaN when the step has none of them.
//
// Deprecated: read a Column's Value, or Metrics.First.
func Lookup(m Metrics, names string) float64 {
	var fs []Figure
	for _, k := range strings.Split(names, "|") {
		f, _ := ParseFigure(k)
		fs = append(fs, f)
	}
	if v, ok := m.First(fs...); ok {
		return v
	}
	return math.NaN()
}
