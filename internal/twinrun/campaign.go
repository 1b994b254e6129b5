package twinrun

import (
	"time"

	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/twin"
	"github.com/wanlab/wanlab/internal/workload/impact"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// The measure results as a twin.Campaign holds them
// (/work/notes/design35.md's table). Each takes a result that may be nil
// (a step that failed before measuring anything) or partial.

// Round is a round of probes as the campaign holds it.
func Round(s *probe.Summary) twin.ProbeRound {
	r := twin.ProbeRound{From: s.From, To: s.To, Size: s.Size, Synchronised: s.OneWay.Reliable}
	if s.OneWay.ErrorBoundMS > 0 {
		r.Bound = time.Duration(s.OneWay.ErrorBoundMS * float64(time.Millisecond))
	}
	r.Probes = make([]twin.Probe, len(s.Probes))
	for i, p := range s.Probes {
		r.Probes[i] = twin.Probe{Sent: time.Unix(0, p.Sent), Lost: p.Lost(), ReflectorCount: p.ReflectorCount}
		if !p.Lost() {
			r.Probes[i].RTT, r.Probes[i].Forward, r.Probes[i].Back = p.RTT(), p.Forward(), p.Back()
		}
	}
	return r
}

func addProbes(c *twin.Campaign, s *probe.Summary) {
	if s != nil && len(s.Probes) > 0 {
		c.Probes = append(c.Probes, Round(s))
	}
}

func addTrace(c *twin.Campaign, at time.Time, r *probe.TraceResult) {
	if r != nil && len(r.Hops) > 0 {
		c.Traces = append(c.Traces, twin.Trace{From: r.From, To: r.To, At: at, Hops: r.Addrs(), Reached: r.Reached})
	}
}

func addCapacity(c *twin.Campaign, at time.Time, r *measure.CapacityResult) {
	if r != nil && r.CapacityBPS > 0 {
		c.Capacity = append(c.Capacity, twin.RateSample{From: r.From, To: r.To, At: at, BPS: r.CapacityBPS, Low: r.LowBPS, High: r.HighBPS, N: r.Trains})
	}
}

// addAvailable adds the estimate, and the capacity the verb measured
// first as a capacity sample (more points for the rate-step detector).
func addAvailable(c *twin.Campaign, at time.Time, r *measure.AvailableResult) {
	if r == nil || r.CapacityBPS <= 0 {
		return
	}
	c.Capacity = append(c.Capacity, twin.RateSample{From: r.From, To: r.To, At: at, BPS: r.CapacityBPS, Low: r.CapacityBPS, High: r.CapacityBPS, N: 1})
	if len(r.Fleets) > 0 {
		c.Available = append(c.Available, twin.RateSample{From: r.From, To: r.To, At: at, BPS: r.AvailableBPS, Low: r.LowBPS, High: r.HighBPS, N: len(r.Fleets)})
	}
}

// addImpact adds a load test whose probes before and during it came
// back: a UDP load (udpRate above 0) with what it sent and got through,
// a TCP one also as a throughput sample (of its streams).
//
// A load that did not run (refused: a policy's rate under the overload's)
// or a UDP one cut short leaves its probes unloaded, or loaded for an
// unknown part: it is no load test.
func addImpact(c *twin.Campaign, from, to string, udpRate float64, r *impact.Result) {
	if r == nil || r.Before == nil || r.During == nil || len(r.Before.Probes) == 0 || len(r.During.Probes) == 0 ||
		r.Load == nil || udpRate > 0 && r.Load.Partial {
		return
	}
	l := twin.LoadTest{LoadFrom: from, LoadTo: to, Start: r.LoadStart, Before: Round(r.Before), During: Round(r.During), UDP: udpRate > 0, TargetBPS: udpRate}
	l.Streams = r.Load.Start.Streams
	l.Retransmits = int(retransmits(r.Load))
	if !r.Load.Partial {
		l.SentBPS, l.ThroughputBPS = r.Load.End.SumSent.BitsPerSecond, r.Load.End.SumReceived.BitsPerSecond
	}
	if s, ok := throughputSample(r.LoadStart, r.Load); ok && !l.UDP {
		c.Throughput = append(c.Throughput, s)
	}
	c.Loads = append(c.Loads, l)
}

func addThroughput(c *twin.Campaign, at time.Time, r *throughput.Result) {
	if s, ok := throughputSample(at, r); ok {
		c.Throughput = append(c.Throughput, s)
	}
}

// throughputSample is a TCP test that moved data; a partial one is not a
// figure of the path.
func throughputSample(at time.Time, r *throughput.Result) (twin.ThroughputSample, bool) {
	if r == nil || r.Partial || r.End.SumReceived.BitsPerSecond <= 0 {
		return twin.ThroughputSample{}, false
	}
	return twin.ThroughputSample{From: r.Start.From, To: r.Start.To, At: at, Streams: r.Start.Streams,
		BPS: r.End.SumReceived.BitsPerSecond, Retransmits: int(retransmits(r)), Seconds: r.End.SumReceived.Seconds}, true
}

func retransmits(r *throughput.Result) uint32 {
	if p := r.End.SumSent.Retransmits; p != nil {
		return *p
	}
	return 0
}
