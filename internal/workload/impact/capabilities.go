package impact

// What the analysis and the report read of an impact workload: its
// traits, and its step's capabilities (internal/workload/kind).

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// traits: a load's effect on others' round trips and loss.
var traits = kind.Traits{
	Columns: []results.Column{
		results.Col("IDLE RTT ms", "%.1f", results.Named(results.RTTP50Ms).InPhase(results.Idle)),
		results.Col("LOADED RTT ms", "%.1f", results.Named(results.RTTP50Ms).InPhase(results.Loaded)),
		results.Col("LOSS pts", "%.2f", results.Named(results.LossIncreasePts)), results.Col("LOAD MBIT/S", "%.2f", results.Named(results.LoadMbps)),
	},
	Findings: []kind.Finding{kind.Impact},
}

var _ interface {
	kind.Directed
	kind.Prober
	kind.Sender
	kind.Measurer
} = (*Step)(nil)

// Path is the load's, from its sender to its receiver.
func (i *Step) Path() (from, to string) { return i.From, i.To }

// Probes are the probes' path.
func (i *Step) Probes() (from, to string) { return i.ProbeFrom, i.ProbeTo }

// Sending is the load's streams and window, over TCP.
func (i *Step) Sending() kind.Sending {
	return kind.Sending{Protocol: "tcp", Streams: i.Streams, Window: i.Window}
}

// Measures are the probes' round trip and loss before the load, and the
// load's rate.
func (i *Step) Measures() []kind.PathFigures {
	return []kind.PathFigures{
		{From: i.ProbeFrom, To: i.ProbeTo, RTT: results.Named(results.RTTP50Ms).InPhase(results.Idle), Loss: results.Named(results.LostPercent).InPhase(results.Idle)},
		{From: i.From, To: i.To, Rate: results.Named(results.LoadMbps)},
	}
}
