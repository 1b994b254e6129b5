package predict

// Calibration (wanlab predict --calibrate RUN): the models' params fitted
// from the steps of a measured run, each kind's Model.Fit giving
// estimates per step and the median of a param's estimates being its
// value.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// statusDone is the status of a step that ran to its end (the
// archive's StatusDone).
const statusDone = "done"

// ErrNothingToFit is the error of a run none of whose steps calibration
// can use (errors.Is): every step failed, the test-bed limited it, or its
// kind's model fits nothing.
var ErrNothingToFit = errors.New("no step of the run can calibrate the models")

// Calibration is what calibration fitted from a measured run.
type Calibration struct {
	// Run is the measured run's number.
	Run int64
	// Fitted are the params it fitted, by name.
	Fitted []Fitted
	// Skipped say which steps were left out and why, one sentence each.
	Skipped []string
}

// Fitted is one fitted param: the median of its estimates.
type Fitted struct {
	Name  string
	Value float64
	// Steps is how many steps gave an estimate.
	Steps int
}

// Params are the fitted params by name, for Predictor.Params.
func (c *Calibration) Params() map[string]float64 {
	m := map[string]float64{}
	for _, f := range c.Fitted {
		m[f.Name] = f.Value
	}
	return m
}

// String says what was fitted: "calibrated from run 1:
// server_cpu_s_per_page=0.000401 (median of 8 steps), ...".
func (c *Calibration) String() string {
	var fs []string
	for _, f := range c.Fitted {
		fs = append(fs, fmt.Sprintf("%s=%.4g (median of %d %s)", f.Name, f.Value, f.Steps, plural(f.Steps, "step")))
	}
	return fmt.Sprintf("calibrated from run %d: %s", c.Run, strings.Join(fs, ", "))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Calibrate fits the models' params from the workloads of measured run
// id (as analysis.Load reads it): each step that is done and that the
// test-bed did not limit gives its kind's Model.Fit estimates, on the
// run's test-bed uncalibrated; a param's value is the median of its
// estimates. A run with no step that gives one is refused
// (ErrNothingToFit) with why.
func Calibrate(id int64, measured []analysis.Workload) (*Calibration, error) {
	c := &Calibration{Run: id}
	var env *modelEnv
	estimates := map[string][]float64{}
	for _, w := range measured {
		k, ok := kinds.Lookup(w.Kind)
		if !ok || k.Model == nil || k.Model.Fit == nil {
			c.Skipped = append(c.Skipped, fmt.Sprintf("workload %s: the %s kind's model fits nothing", w.Name, w.Kind))
			continue
		}
		if env == nil {
			topo, err := topology.New(w.Testbed)
			if err != nil {
				return nil, fmt.Errorf("run %d: its test-bed: %w", id, err)
			}
			env = &modelEnv{plat: newPlatform(topo, 0), seed: w.Testbed.Seed}
		}
		for _, s := range w.Steps {
			where := fmt.Sprintf("workload %s step %s", w.Name, s.Label)
			switch {
			case s.Status != statusDone:
				c.Skipped = append(c.Skipped, fmt.Sprintf("%s: %s, not done", where, s.Status))
				continue
			case s.TestbedLimited:
				c.Skipped = append(c.Skipped, fmt.Sprintf("%s: the test-bed limited it (%s)", where, strings.Join(s.LimitedBy, ", ")))
				continue
			case s.Config.Spec == nil:
				c.Skipped = append(c.Skipped, fmt.Sprintf("%s: no workload spec", where))
				continue
			}
			est, err := k.Model.Fit(env, kind.Measured{Spec: s.Config.Spec, Metrics: s.Metrics, Seconds: s.Seconds, Jobs: s.Jobs})
			if err != nil {
				return nil, fmt.Errorf("run %d: fitting the %s model to %s: %w", id, w.Kind, where, err)
			}
			if len(est) == 0 {
				c.Skipped = append(c.Skipped, fmt.Sprintf("%s: its figures give no estimate", where))
			}
			for name, v := range est {
				estimates[name] = append(estimates[name], v)
			}
		}
	}
	if len(estimates) == 0 {
		why := "it has no steps"
		if len(c.Skipped) > 0 {
			why = strings.Join(c.Skipped, "; ")
		}
		return nil, fmt.Errorf("run %d: %w: %s", id, ErrNothingToFit, why)
	}
	for _, name := range slices.Sorted(maps.Keys(estimates)) {
		c.Fitted = append(c.Fitted, Fitted{Name: name, Value: median(estimates[name]), Steps: len(estimates[name])})
	}
	return c, nil
}

// median is the middle of v (the mean of the two middle ones when there
// is an even number); v is sorted in place.
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
