package controller

import (
	"context"
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// The steps of the measure kinds: each runs the measurement that the
// measure verb of its name runs, and keeps its figures and samples.

func runThroughput(ctx context.Context, env *stepEnv, t *scenario.Throughput) (*outcome, error) {
	spec := throughput.Spec{Protocol: throughput.TCP, Streams: t.Streams, Duration: t.Duration, Window: int(t.Window), Congestion: t.Congestion, Interval: time.Second}
	if t.Protocol == "udp" {
		spec.Protocol, spec.UDPRate = throughput.UDP, float64(t.UDPRate)
	}
	start := time.Now()
	r, err := measure.Throughput(ctx, env.hosts[t.From], env.hosts[t.To], spec)
	if r == nil {
		return nil, err
	}
	o := &outcome{samples: r.Samples(start), metrics: results.Metrics{
		results.ThroughputMbps: r.End.SumReceived.BitsPerSecond / 1e6,
		results.Streams:        float64(t.Streams),
		results.WindowBytes:    float64(t.Window),
		results.SenderCPUPct:   r.End.CPU.SenderHost, results.ReceiverCPUPct: r.End.CPU.ReceiverHost,
		results.TestsAlongside: float64(r.Alongside),
	}}
	if rt := r.End.SumSent.Retransmits; rt != nil {
		o.metrics[results.Retransmits] = float64(*rt)
	}
	if t.Protocol == "udp" {
		o.metrics[results.LostPercent] = r.End.SumReceived.LostPercent
		o.metrics[results.JitterMs] = r.End.SumReceived.JitterMS
	}
	return o, err
}

func runTransfer(ctx context.Context, env *stepEnv, t *scenario.Transfer) (*outcome, error) {
	spec := measure.TransferSpec{Spec: transfer.Spec{Streams: t.Streams, Window: int(t.Window), Block: t.Block, Compress: t.Compress, Serial: t.Serial}, Size: t.Size, Roundtrip: t.Roundtrip, CorruptAt: -1}
	r, err := measure.Transfer(ctx, env.hosts[t.From], env.hosts[t.To], spec)
	if r == nil || r.There == nil {
		return nil, err
	}
	o := &outcome{metrics: results.Metrics{results.Streams: float64(t.Streams), results.Compress: boolFigure(t.Compress), results.ChecksumOK: boolFigure(r.ChecksumOK)}}
	for _, leg := range []struct {
		name string
		l    *measure.TransferLeg
	}{{results.There, r.There}, {results.Back, r.Back}} {
		if leg.l == nil {
			continue
		}
		o.metrics[results.Leg(leg.name, "mbps")] = leg.l.BitsPerSecond / 1e6
		o.metrics[results.Leg(leg.name, "seconds")] = leg.l.Seconds
		o.metrics[results.Leg(leg.name, "compression_ratio")] = leg.l.CompressionRatio
		o.metrics[results.Leg(leg.name, results.SenderCPUPct)] = leg.l.CPU.SenderHost
		o.metrics[results.TestsAlongside] = max(o.metrics[results.TestsAlongside], float64(leg.l.Alongside))
		end := time.Now()
		status := job.OK
		if !leg.l.ChecksumOK {
			status = job.Corrupt
		}
		o.jobs = append(o.jobs, job.Record{ID: len(o.jobs), Host: leg.l.From, Subject: results.PathSubject(leg.l.From, leg.l.To),
			Start: end.Add(-time.Duration(leg.l.Seconds * float64(time.Second))), End: end, Bytes: int64(leg.l.Bytes), Status: status})
	}
	o.metrics[results.ThroughputMbps] = o.metrics[results.Leg(results.There, "mbps")]
	return o, err
}

func runProbe(ctx context.Context, env *stepEnv, p *scenario.Probe) (*outcome, error) {
	r, err := measure.Probe(ctx, env.hosts[p.From], env.hosts[p.To], probe.Spec{Count: p.Count, Interval: p.Interval, Size: probe.HeaderLen, Timeout: 2 * time.Second})
	if r == nil {
		return nil, err
	}
	return &outcome{samples: r.Samples(), metrics: results.Metrics{
		results.RTTP50Ms: r.RTTms.P50, results.RTTP99Ms: r.RTTms.P99, results.RTTAvgMs: r.RTTms.Avg, results.JitterMs: r.JitterMS, results.LostPercent: r.LostPercent,
		results.TestsAlongside: float64(r.Alongside),
	}}, err
}

func runImpact(ctx context.Context, env *stepEnv, i *scenario.Impact) (*outcome, error) {
	spec := measure.ImpactSpec{Phase: i.Phase, Interval: i.Interval, Size: probe.HeaderLen,
		Load: throughput.Spec{Protocol: throughput.TCP, Streams: i.Streams, Duration: i.Duration, Window: int(i.Window), Interval: time.Second}}
	r, err := measure.Impact(ctx, env.hosts[i.ProbeFrom], env.hosts[i.ProbeTo], env.hosts[i.From], env.hosts[i.To], spec)
	if r == nil {
		return nil, err
	}
	o := &outcome{metrics: results.Metrics{results.RTTInflationMs: r.RTTInflationMS, results.LossIncreasePts: r.LossIncreasePoints}}
	for _, phase := range []struct {
		name string
		p    *measure.ProbeResult
	}{{"idle", r.Before}, {"loaded", r.During}, {"after", r.After}} {
		if phase.p == nil {
			continue
		}
		o.metrics[results.Phase(phase.name, results.RTTP50Ms)] = phase.p.RTTms.P50
		o.metrics[results.Phase(phase.name, "rtt_max_ms")] = phase.p.RTTms.Max
		o.metrics[results.Phase(phase.name, results.LostPercent)] = phase.p.LostPercent
		o.samples = append(o.samples, phase.p.Samples()...)
	}
	if r.Load != nil {
		o.metrics[results.LoadMbps] = r.Load.End.SumReceived.BitsPerSecond / 1e6
		o.samples = append(o.samples, r.Load.Samples(r.LoadStart)...)
	}
	return o, err
}
