package command

// What the report reads of a command workload: its traits
// (internal/workload/kind). None of the analysis's findings is a command
// step's own; its steps get verdicts and summary rows.

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// traits: the clients' jobs, as the summary tables show them.
var traits = kind.Traits{
	Columns: append(kind.JobColumns("CLIENTS"),
		results.Col("MEAN WCT s", "%.2f", results.Named(results.MeanWallclockS)),
		kind.CPUColumn("SERVER CPU%", "server"), kind.CPUColumn("CLIENT CPU%", "client")),
}
