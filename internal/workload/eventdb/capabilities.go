package eventdb

// What the analysis and the report read of an event-store workload: its
// traits, and its spec's capabilities (internal/workload/kind).

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// traits: a ramp of client jobs against a server, judged by where its
// throughput saturates, how long jobs stay efficient and where they fail.
var traits = kind.Traits{
	Columns: append(kind.JobColumns("JOBS"),
		results.Col("MBIT/S", "%.1f", results.Named(results.ThroughputMbps)),
		kind.CPUColumn("SERVER CPU%", "server"), kind.CPUColumn("CLIENT CPU%", "client"),
		results.Col("MEAN WCT s", "%.1f", results.Named(results.MeanWallclockS))),
	Findings:    []kind.Finding{kind.Saturation, kind.EfficientRunning, kind.Failures},
	Concurrency: "job",
	Plot:        kind.Plot{Title: "throughput", Unit: "Mbit/s", Figure: results.ThroughputMbps, Ceiling: true},
	JobPlots:    true,
	JobTimes:    "job wall-clock",
}

var _ interface {
	kind.Concurrent
	kind.Ended
} = (*Spec)(nil)

// Concurrency is the jobs of all the clients.
func (e *Spec) Concurrency() float64 { return float64(e.Jobs * len(e.Clients)) }

// Ends are the servers and the clients; a server of the single model uses
// one core.
func (e *Spec) Ends() (servers, clients []string, singleThreaded bool) {
	return e.servers(), e.Clients, e.ServerModel == ModelSingle
}
