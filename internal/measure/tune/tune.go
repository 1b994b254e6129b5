// Package tune advises the streams and window of a path: it measures the
// path's round trip, then a grid of throughput tests, one after another,
// and picks the cheapest cell close to the best rate.
package tune

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// Spec is a sweep of streams by window.
type Spec struct {
	Streams  []int
	Windows  []int // bytes; 0 is the kernel's autotuning
	Duration time.Duration
	// Size, if set, is the transfer the advice is for: the time it would take
	// at each cell's rate is reported.
	Size       int64
	Congestion string
}

// Cell is one combination of streams and window.
type Cell struct {
	Streams       int     `json:"streams"`
	Window        int     `json:"window"` // bytes, 0 = autotuning
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   uint32  `json:"retransmits"`
	// WindowLimitBPS is what theory allows a window-limited path:
	// streams x window / RTT (0 for autotuning).
	WindowLimitBPS float64 `json:"window_limit_bits_per_second,omitempty"`
	// TransferSeconds is how long Size would take at this rate.
	TransferSeconds float64 `json:"transfer_seconds,omitempty"`
	Error           string  `json:"error,omitempty"`
}

// Result is the grid with the path's figures and the advice.
type Result struct {
	From  string  `json:"from"`
	To    string  `json:"to"`
	RTTms float64 `json:"rtt_ms"` // p50 of idle probes
	Cells []Cell  `json:"cells"`
	// BottleneckBPS is the best rate any cell reached; BDPBytes is that rate
	// times the RTT: the window, over all streams, needed to fill the path.
	BottleneckBPS float64 `json:"bottleneck_bits_per_second"`
	BDPBytes      int64   `json:"bdp_bytes"`
	Best          Cell    `json:"best"`
	// GainOverOneStream is the best rate over the best single-stream rate.
	GainOverOneStream float64 `json:"gain_over_one_stream"`
	Partial           bool    `json:"partial"`
	Error             string  `json:"error,omitempty"`
}

// goodEnough is how close to the best rate a cheaper cell may be and still be
// advised: fewer streams and smaller windows are kinder to the path's other users.
const goodEnough = 0.97

// Measure measures the RTT, then every cell of the grid, one after another.
func Measure(ctx context.Context, from, to measure.Endpoint, spec Spec, step func(string)) (*Result, error) {
	res := &Result{From: from.Host, To: to.Host}
	pr, err := probe.Measure(ctx, from, to, probe.Spec{Count: 20, Interval: 20 * time.Millisecond, Size: 64, Timeout: 2 * time.Second})
	if err != nil {
		res.Partial, res.Error = true, err.Error()
		return res, err
	}
	res.RTTms = pr.RTTms.P50
	rtt := res.RTTms / 1000
	var errs []error
	for _, w := range spec.Windows {
		for _, n := range spec.Streams {
			if ctx.Err() != nil {
				break
			}
			if step != nil {
				step(cellName(n, w))
			}
			cell := Cell{Streams: n, Window: w}
			if w > 0 && rtt > 0 {
				cell.WindowLimitBPS = float64(n*w) * 8 / rtt
			}
			t, err := throughput.Measure(ctx, from, to, throughput.Spec{Protocol: throughput.TCP, Streams: n, Window: w, Duration: spec.Duration, Interval: time.Second, Congestion: spec.Congestion})
			if t != nil {
				cell.BitsPerSecond = t.End.SumReceived.BitsPerSecond
				if r := t.End.SumSent.Retransmits; r != nil {
					cell.Retransmits = *r
				}
			}
			if err != nil {
				cell.Error = err.Error()
				errs = append(errs, err)
			}
			if spec.Size > 0 && cell.BitsPerSecond > 0 {
				cell.TransferSeconds = float64(spec.Size) * 8 / cell.BitsPerSecond
			}
			res.Cells = append(res.Cells, cell)
		}
	}
	var bestOne float64
	for _, c := range res.Cells {
		res.BottleneckBPS = max(res.BottleneckBPS, c.BitsPerSecond)
		if c.Streams == 1 {
			bestOne = max(bestOne, c.BitsPerSecond)
		}
	}
	res.BDPBytes = int64(res.BottleneckBPS / 8 * rtt)
	for _, c := range res.Cells {
		if c.BitsPerSecond >= goodEnough*res.BottleneckBPS && (res.Best.Streams == 0 || cheaper(c, res.Best)) {
			res.Best = c
		}
	}
	if bestOne > 0 {
		res.GainOverOneStream = res.Best.BitsPerSecond / bestOne
	}
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		res.Partial, res.Error = true, err.Error()
		return res, err
	}
	return res, nil
}

// cheaper prefers fewer streams, then a smaller (explicit) window.
func cheaper(a, b Cell) bool {
	if a.Streams != b.Streams {
		return a.Streams < b.Streams
	}
	return a.Window != 0 && (b.Window == 0 || a.Window < b.Window)
}

func cellName(n, w int) string {
	ws := "auto"
	if w > 0 {
		ws = units.Size(w).String()
	}
	return "streams " + strconv.Itoa(n) + ", window " + ws
}
