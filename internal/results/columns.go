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

// Col is a column headed head that shows the first of figures a step
// has, formatted with format. Each kind lists its own columns (its
// kind.Traits), in its package under internal/workload.
func Col(head, format string, figures ...Figure) Column {
	return Column{Head: head, Figures: figures, Format: format}
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
