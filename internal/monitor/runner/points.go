package runner

import (
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/binomial"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// ProbePoints are a probe summary's figures.
func ProbePoints(at time.Time, test string, r *probe.Summary) []core.Point {
	p := func(metric core.Name, v float64) core.Point {
		return core.Point{T: at, Src: r.From, Dst: r.To, Test: test, Metric: string(metric), Value: v}
	}
	var out []core.Point
	if r.Sent > 0 {
		out = append(out, p(core.LossRatio, float64(r.Sent-r.Received)/float64(r.Sent)),
			p(core.DuplicatesRatio, float64(r.Duplicates)/float64(r.Sent)))
		if f, b := r.Loss.Forward, r.Loss.Back; f != nil && b != nil {
			out = append(out, p(core.LossForward, f.Ratio), p(core.LossBack, b.Ratio))
		}
	}
	if r.Received > 0 {
		out = append(out, p(core.RTTMin, r.RTTms.Min/1e3), p(core.RTTMedian, r.RTTms.P50/1e3),
			p(core.RTTMax, r.RTTms.Max/1e3), p(core.Jitter, r.JitterMS/1e3),
			p(core.ReorderedRatio, Reordered(r)))
		if r.OneWay.Reliable {
			out = append(out, p(core.OWDForward, r.OneWay.Forward.P50/1e3), p(core.OWDBack, r.OneWay.Back.P50/1e3))
		}
	}
	return out
}

// ProbeLoss are a probe summary's loss counts, which the loss rule
// judges: round trip, and each way when they are known.
func ProbeLoss(r *probe.Summary) map[core.Name]core.LossCount {
	count := func(x binomial.Ratio) core.LossCount {
		return core.LossCount{Lost: x.Lost, Of: x.Of, Low: x.Low, High: x.High}
	}
	out := map[core.Name]core.LossCount{core.LossRatio: count(r.Loss.Roundtrip)}
	if f, b := r.Loss.Forward, r.Loss.Back; f != nil && b != nil {
		out[core.LossForward], out[core.LossBack] = count(*f), count(*b)
	}
	return out
}

// Reordered is the share of received probes that reached the reflector
// after a probe sent later (RFC 4737's reordered packets, on the way out).
func Reordered(r *probe.Summary) float64 {
	var got []int
	for i, p := range r.Probes {
		if !p.Lost() {
			got = append(got, i)
		}
	}
	if len(got) == 0 {
		return 0
	}
	slices.SortStableFunc(got, func(a, b int) int {
		x, y := r.Probes[a].ReflectRx, r.Probes[b].ReflectRx
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	late, top := 0, -1
	for _, i := range got {
		if s := r.Probes[i].Seq; s < top {
			late++
		} else {
			top = s
		}
	}
	return float64(late) / float64(len(got))
}

// ThroughputPoints are a throughput test's figures.
func ThroughputPoints(at time.Time, test string, r *throughput.Result) []core.Point {
	p := func(metric core.Name, v float64) core.Point {
		return core.Point{T: at, Src: r.Start.From, Dst: r.Start.To, Test: test, Metric: string(metric), Value: v}
	}
	out := []core.Point{
		p(core.ThroughputRate, r.End.SumReceived.BitsPerSecond),
		p(core.SrcCPU, r.End.CPU.SenderHost),
		p(core.DstCPU, r.End.CPU.ReceiverHost),
	}
	if rt := r.End.SumSent.Retransmits; rt != nil {
		out = append(out, p(core.Retransmits, float64(*rt)))
	}
	return out
}

// TransferPoints are a disk-to-disk transfer's figures.
func TransferPoints(at time.Time, test string, r *transfer.Summary) []core.Point {
	l := r.There
	if l == nil {
		return nil
	}
	p := func(metric core.Name, v float64) core.Point {
		return core.Point{T: at, Src: l.From, Dst: l.To, Test: test, Metric: string(metric), Value: v}
	}
	return []core.Point{
		p(core.ThroughputRate, l.BitsPerSecond),
		p(core.SrcCPU, l.CPU.SenderHost),
		p(core.DstCPU, l.CPU.ReceiverHost),
	}
}

// DiskPoints are a host's disk test's figures, as a path from the host to
// itself.
func DiskPoints(at time.Time, test, host string, r *agentpb.DiskResult) []core.Point {
	p := func(metric core.Name, v float64) core.Point {
		return core.Point{T: at, Src: host, Dst: host, Test: test, Metric: string(metric), Value: v}
	}
	return []core.Point{p(core.DiskRead, r.ReadBytesPerSecond*8), p(core.DiskWrite, r.WriteBytesPerSecond*8)}
}
