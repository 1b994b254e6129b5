package transfer

// What the analysis and the report read of a transfer workload: its
// traits, and its step's capabilities (internal/workload/kind).

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// traits: transfers, grouped by what limited them.
var traits = kind.Traits{
	Columns: []results.Column{
		results.Col("STREAMS", "%.0f", results.Named(results.Streams)),
		results.Col("MBIT/S", "%.2f", results.Named(results.LegMbps).OnLeg(results.There)),
		results.Col("BACK", "%.2f", results.Named(results.LegMbps).OnLeg(results.Back)),
		results.Col("RATIO", "%.2f", results.Named(results.CompressionRatio).OnLeg(results.There)),
		results.Col("SND CPU%", "%.0f", results.CPUPct.OfRole("sender").OnLeg(results.There)),
		results.Col("CHECKSUM", "%.0f", results.Named(results.ChecksumOK)),
	},
	Findings: []kind.Finding{kind.Transfers},
}

var _ interface {
	kind.Ended
	kind.Directed
	kind.Legged
	kind.Measurer
} = (*Step)(nil)

// Ends are the sender and the receiver.
func (t *Step) Ends() (servers, clients []string, singleThreaded bool) {
	return []string{t.From}, []string{t.To}, false
}

// Path is from the sender to the receiver.
func (t *Step) Path() (from, to string) { return t.From, t.To }

// Legs are the way there and the way back (measured when the transfer
// is a round trip).
func (t *Step) Legs() []kind.Leg {
	return []kind.Leg{{Name: results.There, From: t.From, To: t.To}, {Name: results.Back, From: t.To, To: t.From}}
}

// Measures are the rate of the way there.
func (t *Step) Measures() []kind.PathFigures {
	return []kind.PathFigures{{From: t.From, To: t.To, Rate: results.Named(results.LegMbps).OnLeg(results.There)}}
}
