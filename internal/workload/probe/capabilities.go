package probe

// What the analysis and the report read of a probe workload: its traits,
// and its step's capabilities (internal/workload/kind).

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// traits: none of the analysis's findings is a probe step's own; its
// steps still get verdicts and summary rows.
var traits = kind.Traits{
	Columns: []results.Column{
		results.Col("RTT p50 ms", "%.2f", results.Named(results.RTTP50Ms)), results.Col("RTT p99 ms", "%.2f", results.Named(results.RTTP99Ms)),
		results.Col("JITTER ms", "%.3f", results.Named(results.JitterMs)), results.Col("LOSS%", "%.2f", results.Named(results.LostPercent)),
	},
}

var _ interface {
	kind.Directed
	kind.Measurer
} = (*Step)(nil)

// Path is from the prober to its reflector.
func (p *Step) Path() (from, to string) { return p.From, p.To }

// Measures are the probes' round trip and loss.
func (p *Step) Measures() []kind.PathFigures {
	return []kind.PathFigures{{From: p.From, To: p.To, RTT: results.Named(results.RTTP50Ms), Loss: results.Named(results.LostPercent)}}
}
