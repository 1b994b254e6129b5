package runner

import (
	"errors"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/workload/probe"
)

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
