package measure

import (
	"context"
	"errors"
	"time"

	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// ImpactResult is what a load did to others' round trips and loss: probes
// before, during and after it.
type ImpactResult struct {
	Before *ProbeResult      `json:"before"`
	During *ProbeResult      `json:"during"`
	After  *ProbeResult      `json:"after"`
	Load   *ThroughputResult `json:"load"`
	// LoadStart is when the load began, which its intervals count from.
	LoadStart time.Time `json:"load_start"`
	// Inflation during the load against before it.
	RTTInflationMS     float64 `json:"rtt_inflation_ms"` // p50 during - p50 before
	LossIncreasePoints float64 `json:"loss_increase_percent_points"`
	Partial            bool    `json:"partial"`
	Error              string  `json:"error,omitempty"`
}

// ImpactSpec is an impact test: probes every Interval for Phase before and
// after the load, and all through the load.
type ImpactSpec struct {
	Phase    time.Duration
	Interval time.Duration
	Size     int
	Load     throughput.Spec
}

// settle lets a path drain its queue between phases.
const settle = time.Second

// Impact runs probes from pFrom to pTo before, during and after a load from lFrom to lTo.
func Impact(ctx context.Context, pFrom, pTo, lFrom, lTo Endpoint, spec ImpactSpec) (*ImpactResult, error) {
	res := &ImpactResult{}
	probes := func(d time.Duration) probe.Spec {
		return probe.Spec{Count: max(1, int(d/spec.Interval)), Interval: spec.Interval, Size: spec.Size, Timeout: 2 * time.Second}
	}
	var errs []error
	fail := func(err error) *ImpactResult {
		res.Partial, res.Error = true, err.Error()
		return res
	}
	var err error
	if res.Before, err = Probe(ctx, pFrom, pTo, probes(spec.Phase)); err != nil {
		return fail(err), err
	}
	loadDone := make(chan error, 1)
	res.LoadStart = time.Now()
	go func() {
		var lerr error
		res.Load, lerr = Throughput(ctx, lFrom, lTo, spec.Load)
		loadDone <- lerr
	}()
	// Probe through the load, leaving its first second for the streams to ramp up.
	ramp := min(settle, spec.Load.Duration/4)
	select {
	case <-time.After(ramp):
	case <-ctx.Done():
	}
	res.During, err = Probe(ctx, pFrom, pTo, probes(spec.Load.Duration-ramp-settle/2))
	errs = append(errs, err, <-loadDone)
	select {
	case <-time.After(settle):
	case <-ctx.Done():
	}
	if ctx.Err() == nil {
		res.After, err = Probe(ctx, pFrom, pTo, probes(spec.Phase))
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
