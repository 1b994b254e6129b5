package throughput

import (
	"context"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// runStep runs a throughput step: one test from its sender's agent to its
// receiver's, kept as the step's figures and samples.
func runStep(ctx context.Context, env kind.Env, t *Step) (*kind.Outcome, error) {
	eps, err := measure.Endpoints(env, t.From, t.To)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	r, err := Measure(ctx, eps[0], eps[1], t.test())
	if r == nil {
		return nil, err
	}
	return &kind.Outcome{Samples: r.Samples(start), Metrics: t.figures(r)}, err
}

// figures are the step's figures of a test's result.
func (t *Step) figures(r *Result) results.Metrics {
	m := results.Metrics{
		results.ThroughputMbps: r.End.SumReceived.BitsPerSecond / 1e6,
		results.Streams:        float64(t.Streams),
		results.WindowBytes:    float64(t.Window),
		results.SenderCPUPct:   r.End.CPU.SenderHost, results.ReceiverCPUPct: r.End.CPU.ReceiverHost,
		results.TestsAlongside: float64(r.Alongside),
	}
	if rt := r.End.SumSent.Retransmits; rt != nil {
		m[results.Retransmits] = float64(*rt)
	}
	if t.Protocol == "udp" {
		m[results.LostPercent] = r.End.SumReceived.LostPercent
		m[results.JitterMs] = r.End.SumReceived.JitterMS
	}
	return m
}
