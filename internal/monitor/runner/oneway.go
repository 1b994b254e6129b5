package runner

import (
	"errors"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

// OneWayService is a Service that follows each probed path's one-way
// delays per direction (issue 37): it takes a summary's samples before the
// summary is observed and gives back its one-way figures (core.Point:
// core.OWDForwardChange and the rest), which are stored with the summary.
type OneWayService interface {
	OneWay(k core.PathKey, at time.Time, in core.OneWaySamples) []core.Point
}

// oneWay hands a probe summary's one-way delays to the service, if it
// follows them, and returns the figures to store with the summary.
func (r *Runners) oneWay(k core.PathKey, at time.Time, res *probe.Summary, err error) []core.Point {
	ow, ok := r.opts.Service.(OneWayService)
	if !ok {
		return nil
	}
	return ow.OneWay(k, at, OneWaySamples(res, err))
}

// OneWaySamples are a probe summary's one-way delays each way, of the
// probes that came back, for the service's one-way tracking; err is the
// summary's error (probe.ErrClockStep: the clocks stepped, said so).
func OneWaySamples(res *probe.Summary, err error) core.OneWaySamples {
	var out core.OneWaySamples
	if errors.Is(err, probe.ErrClockStep) {
		out.ClockStep = err.Error()
		return out
	}
	if err != nil || res == nil {
		return out
	}
	out.Synchronised = res.OneWay.Reliable
	out.ClockBound = time.Duration(max(res.OneWay.ErrorBoundMS, 0) * float64(time.Millisecond))
	for _, p := range res.Probes {
		if !p.Lost() {
			out.Add(p.Sent, p.ReflectRx, p.ReflectTx, p.Received)
		}
	}
	return out
}
