package throughput

// What the analysis and the report read of a throughput workload: its
// traits, and its step's capabilities (internal/workload/kind).

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// traits: tests of one path, judged by their tuning, the TCP model's fit,
// what limited them and how the path's two directions compare.
var traits = kind.Traits{
	Columns: []results.Column{
		results.Col("STREAMS", "%.0f", results.Named(results.Streams)), results.Col("MBIT/S", "%.2f", results.Named(results.ThroughputMbps)),
		results.Col("RETRANS", "%.0f", results.Named(results.Retransmits)),
		results.Col("SND CPU%", "%.0f", results.CPUPct.OfRole("sender")), results.Col("RCV CPU%", "%.0f", results.CPUPct.OfRole("receiver")),
	},
	Findings: []kind.Finding{kind.Tuning, kind.ModelFit, kind.LimitingFactor, kind.Asymmetry},
	Plot:     kind.Plot{Title: "throughput", Unit: "Mbit/s", Figure: results.ThroughputMbps, Ceiling: true},
	Heat:     true,
	TCPModel: true,
}

var _ interface {
	kind.Ended
	kind.Reversible
	kind.Sender
	kind.Measurer
} = (*Step)(nil)

// Ends are the sender and the receiver.
func (t *Step) Ends() (servers, clients []string, singleThreaded bool) {
	return []string{t.From}, []string{t.To}, false
}

// Path is from the sender to the receiver.
func (t *Step) Path() (from, to string) { return t.From, t.To }

// Setting is the test without its hosts.
func (t *Step) Setting() any {
	s := *t
	s.From, s.To = "", ""
	return s
}

// Sending is the test's protocol, streams and window.
func (t *Step) Sending() kind.Sending {
	return kind.Sending{Protocol: t.Protocol, Streams: t.Streams, Window: t.Window}
}

// Measures are the test's throughput of its path.
func (t *Step) Measures() []kind.PathFigures {
	return []kind.PathFigures{{From: t.From, To: t.To, Rate: results.Named(results.ThroughputMbps)}}
}
