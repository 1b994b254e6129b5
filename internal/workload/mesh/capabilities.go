package mesh

// What the analysis and the report read of a mesh: its traits, and its
// spec's capabilities (internal/workload/kind).

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// traits: a mesh is judged by where its aggregate throughput saturates and
// where its transfers fail.
var traits = kind.Traits{
	Columns: []results.Column{
		results.Col("TRANSFERS", "%.0f", results.Named(results.Transfers)), results.Col("OK", "%.0f", results.JobsWith("ok")),
		results.Col("CORRUPT", "%.0f", results.JobsWith("corrupt")), results.Col("FAILED", "%.0f", results.JobsWith("failed")),
		results.Col("MBIT/S", "%.1f", results.Named(results.AggregateMbps)), results.Col("MEAN s", "%.1f", results.Named(results.MeanWallclockS)),
	},
	Findings: []kind.Finding{kind.Saturation, kind.Failures},
	Plot:     kind.Plot{Title: "throughput", Unit: "Mbit/s", Figure: results.AggregateMbps, Ceiling: true},
	JobTimes: "transfer time",
}

var _ kind.Peered = (*Spec)(nil)

// Peers are the mesh's hosts, each sending and receiving.
func (m *Spec) Peers() []string { return m.Hosts }
