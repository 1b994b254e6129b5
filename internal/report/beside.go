package report

// A measured run's prediction set beside it (issue 34): the section
// "Predicted beside measured", from a comparison the caller made
// (wanlab predict's Compare: the report reads the archive and the
// analysis only), and the findings on the steps the test-bed limited.

import (
	"fmt"
	"strconv"

	"github.com/wanlab/wanlab/internal/analysis"
)

// Options are what a report shows beyond the run itself.
type Options struct {
	// Beside is a prediction of the run to show beside it, nil for none.
	Beside *Beside
	// Findings are added to the run's own, each after the finding that
	// says the test-bed limited its workload (analysis.Unlimited).
	Findings []analysis.Finding
}

// Beside is a prediction set against the measured run, step by step: the
// fields of predict.Check that the report shows, and what the prediction
// assumed.
type Beside struct {
	// Run is the prediction's number.
	Run int64
	// Steps are the figures of each step, predicted and measured.
	Steps []BesideRow
	// MedianError and WorstError are over the rows of steps the test-bed
	// did not limit; nil when none has an error.
	MedianError, WorstError *float64
	// Agreeing of Sweeps sweeps have the same findings (the bottleneck
	// where the measured sweep peaks, the efficient-running boundary);
	// Differences say what differs in the others.
	Agreeing, Sweeps int
	Differences      []string
	// Calibration says what the prediction was calibrated from, or that
	// it was not; Assumptions are what it assumes and leaves out.
	Calibration string
	Assumptions []string
}

// BesideRow is one figure of one step, predicted and measured, as
// predict.Row (a conversion makes one of the other).
type BesideRow struct {
	Workload  string
	Step      string
	Figure    string
	Predicted float64
	Measured  float64
	// Error is |predicted - measured| / measured, nil when not known.
	Error *float64
	// LimitedByTestbed says the test-bed limited the measured step: shown,
	// and left out of the errors.
	LimitedByTestbed bool
}

// ErrorText is the row's error in %, in brackets for a step the test-bed
// limited, "-" when not known.
func (r BesideRow) ErrorText() string {
	e := "-"
	if r.Error != nil {
		e = percent(*r.Error)
	}
	if r.LimitedByTestbed {
		e = "(" + e + ")"
	}
	return e
}

// Limited says whether any row is of a step the test-bed limited.
func (b *Beside) Limited() bool {
	for _, r := range b.Steps {
		if r.LimitedByTestbed {
			return true
		}
	}
	return false
}

// ErrorsText says the median and worst error, or that there are none.
func (b *Beside) ErrorsText() string {
	if b.MedianError == nil || b.WorstError == nil {
		return "no step the test-bed did not limit has a figure to set against its prediction"
	}
	return fmt.Sprintf("median %s, worst %s", percent(*b.MedianError), percent(*b.WorstError))
}

func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }
