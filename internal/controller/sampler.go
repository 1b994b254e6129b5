package controller

import (
	"context"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/topology"
)

// SampleInterval is how often a step's test-bed is sampled.
const SampleInterval = 100 * time.Millisecond

// sampler records, while a step runs, every host's CPU and disk traffic,
// every link direction's bytes, packets and drops, and the test-bed's own
// CPU: the engine's and the machine's, as the bed's counters give them.
type sampler struct {
	bed     backend.Bed
	topo    *topology.Topology
	samples []archive.Sample
	// Totals are the step's, for its figures, once run returned.
	Totals
	// diskQueued is, per host, the bytes read and written that were counted
	// on submission but are still held back by the host's disk cap.
	diskQueued map[string]*[2]float64
	// cpuMarks are the hosts' CPU counters of the last MinQuotaWindow and
	// more, for the samples of their shares of quotas.
	cpuMarks []backend.Counters
	// full counts, per direction, the intervals it was full in, of
	// intervals.
	full      map[string]int
	intervals int
}

// Totals are what a step used of its hosts and links, over the whole
// step: what the sampler saw on a test-bed, or what a simulation gave
// (Simulated). figures makes the step's figures of them.
type Totals struct {
	// Seconds is how long the step lasted.
	Seconds float64
	// HostCPU is each host's mean CPU, in % of one core.
	HostCPU map[string]float64
	// DiskRead and DiskWrite are each host's mean disk rates in bytes/s;
	// a host missing has no disk figures.
	DiskRead, DiskWrite map[string]float64
	// DirBytes is what each link direction carried; a direction missing
	// has no link figures. DirDrops are the packets each dropped; nil when
	// not known (a simulation), and the step then has no drop figures.
	DirBytes, DirDrops map[string]uint64
	// DirFull is the share (%) of the step's sampling intervals in which
	// each direction was at least results.FullUtilizationPct busy; nil
	// when not known (a simulation: its flows have no intervals).
	DirFull map[string]float64
	// Testbed is the test-bed's own load; nil when there was no test-bed
	// (a simulation): the step then has no engine or machine figures and
	// is never limited by the test-bed.
	Testbed *TestbedLoad
}

// TestbedLoad is the load of the machine that emulates a step.
type TestbedLoad struct {
	EngineCPU float64 // mean % of one core
	Machine   float64 // mean % of all cores
	Outside   uint64  // drops outside the link model
	Rcvbuf    uint64  // datagrams the hosts' full UDP sockets refused
}

func newSampler(bed backend.Bed) *sampler {
	return &sampler{bed: bed, topo: bed.Topology(), diskQueued: map[string]*[2]float64{}}
}

func (s *sampler) read() backend.Counters {
	c, err := s.bed.Counters()
	if err != nil {
		return backend.Counters{At: time.Now()}
	}
	return c
}

// run samples until ctx ends, then fills in the step's totals.
func (s *sampler) run(ctx context.Context) {
	first := s.read()
	prev := first
	tick := time.NewTicker(SampleInterval)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
		}
		cur := s.read()
		s.interval(prev, cur)
		prev = cur
	}
	s.totals(first, prev)
}

// interval turns the counters of two moments into samples.
func (s *sampler) interval(a, b backend.Counters) {
	dt := b.At.Sub(a.At).Seconds()
	if dt <= 0 {
		return
	}
	add := func(metric, subject string, v float64, unit string) {
		s.samples = append(s.samples, archive.Sample{T: b.At, Metric: metric, Subject: subject, Value: v, Unit: unit})
	}
	// A share of a quota is taken over the last MinQuotaWindow, from the
	// latest counters at least that old.
	if len(s.cpuMarks) == 0 {
		s.cpuMarks = append(s.cpuMarks, a)
	}
	s.cpuMarks = append(s.cpuMarks, b)
	var since *backend.Counters
	for i := len(s.cpuMarks) - 1; i >= 0; i-- {
		if b.At.Sub(s.cpuMarks[i].At) >= results.MinQuotaWindow {
			since = &s.cpuMarks[i]
			s.cpuMarks = s.cpuMarks[i:]
			break
		}
	}
	for _, h := range s.topo.Hosts {
		used, ok := b.HostCPU[h.Name]
		if !ok {
			continue
		}
		subject := results.HostSubject(h.Name)
		pct := 100 * (used - a.HostCPU[h.Name]).Seconds() / dt
		add(results.CPUUtilization, subject, pct, "%")
		if since != nil && h.CPUs > 0 {
			if before, ok := since.HostCPU[h.Name]; ok {
				window := b.At.Sub(since.At)
				if share, ok := results.QuotaShare(100*(used-before).Seconds()/window.Seconds(), window, h.CPUs); ok {
					add(results.CPUQuotaUtilization, subject, share, "%")
				}
			}
		}
		if d, ok := b.HostDisk[h.Name]; ok {
			read, write := s.diskRates(h, float64(d.Read-a.HostDisk[h.Name].Read), float64(d.Written-a.HostDisk[h.Name].Written), dt, b.DiskAtSubmission)
			add(results.DiskRead, subject, read, "B/s")
			add(results.DiskWrite, subject, write, "B/s")
		}
	}
	if a.Engine != nil && b.Engine != nil {
		add(results.CPUUtilization, results.Engine, 100*(b.Engine.CPUSeconds-a.Engine.CPUSeconds)/dt, "%")
	}
	for i, d := range b.Links {
		if i >= len(a.Links) {
			break
		}
		p := a.Links[i]
		subject := results.LinkSubject(d.Name)
		bps := float64(d.Bytes-p.Bytes) * 8 / dt
		add(results.BandwidthUtilized, subject, bps, "bit/s")
		if dir, ok := s.topo.Direction(d.Name); ok && dir.Config.Rate > 0 && 100*bps >= results.FullUtilizationPct*float64(dir.Config.Rate) {
			if s.full == nil {
				s.full = map[string]int{}
			}
			s.full[d.Name]++
		}
		add(results.LinkPackets, subject, float64(d.Packets-p.Packets)/dt, "packet/s")
		add(results.LinkDropped, subject, float64(d.Drops-p.Drops), "packet")
	}
	if b.MachineTotal > a.MachineTotal {
		add(results.CPUUtilization, results.Machine, 100*(b.MachineBusy-a.MachineBusy)/(b.MachineTotal-a.MachineTotal), "%")
	}
	if len(b.Links) > 0 {
		s.intervals++
	}
}

// diskRates turns the bytes a host's disk counters gained over dt seconds
// into rates. Where the counters count I/O on submission (cgroup v1), a
// capped host's burst is not what reached the disk: the throttle holds what
// exceeds the cap and lets it through at the cap, so that is what is
// reported, and the rest waits for the next intervals.
func (s *sampler) diskRates(h topology.Host, read, written, dt float64, atSubmission bool) (float64, float64) {
	if !atSubmission || !h.DiskCapped() {
		return read / dt, written / dt
	}
	q := s.diskQueued[h.Name]
	if q == nil {
		q = &[2]float64{}
		s.diskQueued[h.Name] = q
	}
	out := [2]float64{read, written}
	for i, capBps := range []int64{h.DiskReadBps, h.DiskWriteBps} {
		if capBps <= 0 {
			continue
		}
		q[i] += out[i]
		out[i] = min(q[i], float64(capBps)*dt)
		q[i] -= out[i]
	}
	return out[0] / dt, out[1] / dt
}

// totals sets the step's Totals from the counters at its start and end.
func (s *sampler) totals(a, b backend.Counters) {
	dt := b.At.Sub(a.At).Seconds()
	t := Totals{Seconds: dt, HostCPU: map[string]float64{}, DiskRead: map[string]float64{}, DiskWrite: map[string]float64{},
		DirBytes: map[string]uint64{}, DirDrops: map[string]uint64{}, DirFull: map[string]float64{}, Testbed: &TestbedLoad{}}
	s.Totals = t
	if dt <= 0 {
		return
	}
	for h, used := range b.HostCPU {
		t.HostCPU[h] = 100 * (used - a.HostCPU[h]).Seconds() / dt
	}
	for h, d := range b.HostDisk {
		t.DiskRead[h] = float64(d.Read-a.HostDisk[h].Read) / dt
		t.DiskWrite[h] = float64(d.Written-a.HostDisk[h].Written) / dt
	}
	if a.Engine != nil && b.Engine != nil {
		t.Testbed.EngineCPU = 100 * (b.Engine.CPUSeconds - a.Engine.CPUSeconds) / dt
		t.Testbed.Outside = b.Engine.OutsideModel - a.Engine.OutsideModel
	}
	if b.HostRcvbufErrors >= a.HostRcvbufErrors {
		t.Testbed.Rcvbuf = b.HostRcvbufErrors - a.HostRcvbufErrors
	}
	for i, d := range b.Links {
		if i < len(a.Links) {
			t.DirBytes[d.Name] = d.Bytes - a.Links[i].Bytes
			t.DirDrops[d.Name] = d.Drops - a.Links[i].Drops
			if s.intervals > 0 {
				t.DirFull[d.Name] = 100 * float64(s.full[d.Name]) / float64(s.intervals)
			}
		}
	}
	if b.MachineTotal > a.MachineTotal {
		t.Testbed.Machine = 100 * (b.MachineBusy - a.MachineBusy) / (b.MachineTotal - a.MachineTotal)
	}
}

// limits says whether the test-bed itself limited the step, and how: the
// one rule of results.Signs, on what a step's samples tell. A step with
// no test-bed (simulated) is never limited by one.
func (t Totals) limits() []string {
	if t.Testbed == nil {
		return nil
	}
	l := t.Testbed
	return results.Signs{MachineBusyPct: l.Machine, EngineCPUPct: l.EngineCPU, OutsideModel: l.Outside, HostRcvbuf: l.Rcvbuf, LatenessP99us: -1}.Limits()
}
