// Package impact is the impact workload kind: what a load does to others'
// round trips and loss, measured by probes between two hosts before,
// during and after a throughput test between two others (Measure), and
// the kind whose steps run it (Kind).
package impact

import (
	"context"
	"errors"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// Result is what a load did to others' round trips and loss: probes
// before, during and after it.
type Result struct {
	Before *probe.Summary     `json:"before"`
	During *probe.Summary     `json:"during"`
	After  *probe.Summary     `json:"after"`
	Load   *throughput.Result `json:"load"`
	// LoadStart is when the load began, which its intervals count from.
	LoadStart time.Time `json:"load_start"`
	// Inflation during the load against before it.
	RTTInflationMS     float64 `json:"rtt_inflation_ms"` // p50 during - p50 before
	LossIncreasePoints float64 `json:"loss_increase_percent_points"`
	Partial            bool    `json:"partial"`
	Error              string  `json:"error,omitempty"`
}

// Spec is an impact test: probes every Interval for Phase before and
// after the load, and all through the load.
type Spec struct {
	Phase    time.Duration
	Interval time.Duration
	Size     int
	Load     throughput.Spec
}

// settle lets a path drain its queue between phases.
const settle = time.Second

// Measure runs probes from pFrom to pTo before, during and after a load from lFrom to lTo.
func Measure(ctx context.Context, pFrom, pTo, lFrom, lTo measure.Endpoint, spec Spec) (*Result, error) {
	res := &Result{}
	probes := func(d time.Duration) probe.Spec {
		return probe.Spec{Count: max(1, int(d/spec.Interval)), Interval: spec.Interval, Size: spec.Size, Timeout: 2 * time.Second}
	}
	var errs []error
	fail := func(err error) *Result {
		res.Partial, res.Error = true, err.Error()
		return res
	}
	var err error
	if res.Before, err = probe.Measure(ctx, pFrom, pTo, probes(spec.Phase)); err != nil {
		return fail(err), err
	}
	loadDone := make(chan error, 1)
	res.LoadStart = time.Now()
	go func() {
		var lerr error
		res.Load, lerr = throughput.Measure(ctx, lFrom, lTo, spec.Load)
		loadDone <- lerr
	}()
	// Probe through the load, leaving its first second for the streams to ramp up.
	ramp := min(settle, spec.Load.Duration/4)
	select {
	case <-time.After(ramp):
	case <-ctx.Done():
	}
	res.During, err = probe.Measure(ctx, pFrom, pTo, probes(spec.Load.Duration-ramp-settle/2))
	errs = append(errs, err, <-loadDone)
	select {
	case <-time.After(settle):
	case <-ctx.Done():
	}
	if ctx.Err() == nil {
		res.After, err = probe.Measure(ctx, pFrom, pTo, probes(spec.Phase))
		errs = append(errs, err)
	}
	if res.Before != nil && res.During != nil {
		res.RTTInflationMS = res.During.RTTms.P50 - res.Before.RTTms.P50
		res.LossIncreasePoints = res.During.LostPercent - res.Before.LostPercent
	}
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return fail(err), err
	}
	return res, nil
}
