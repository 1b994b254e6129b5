package run

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/cgroup"
	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/testbed"
)

// SampleInterval is how often a step's test-bed is sampled.
const SampleInterval = 100 * time.Millisecond

// sampler records, while a step runs, every host's CPU and disk traffic
// (from its cgroup), every link direction's bytes, packets and drops, and
// the test-bed's own CPU: the engine's and the machine's.
type sampler struct {
	st      *testbed.State
	engine  *testbed.StatsReader
	cg      *cgroup.Manager
	samples []archive.Sample
	// Totals over the step, for its summary.
	hostCPU   map[string]float64 // mean % of one core
	diskRead  map[string]float64 // mean bytes/s
	diskWrite map[string]float64
	// diskQueued is, per host, the bytes read and written that were counted
	// on submission but are still held back by the host's disk cap.
	diskQueued map[string]*[2]float64
	engineCPU  float64 // mean % of one core
	machine    float64 // mean % of all cores
	dirBytes   map[string]uint64
	dirDrops   map[string]uint64
	outside    uint64 // drops outside the link model
	seconds    float64
	lateP99    float64
}

func newSampler(st *testbed.State) *sampler {
	s := &sampler{st: st, engine: testbed.NewStatsReader(st.Name), diskQueued: map[string]*[2]float64{}}
	if cg, err := cgroup.Detect(); err == nil && cg.Version != cgroup.None {
		s.cg = cg
	}
	return s
}

// mark is the cumulative counters at one moment.
type mark struct {
	t       time.Time
	hostCPU map[string]time.Duration
	disk    map[string][2]int64 // bytes read, written
	engine  *linkemu.Stats
	busy    float64 // machine CPU seconds busy, all cores
	total   float64
}

func (s *sampler) read() mark {
	m := mark{t: time.Now(), hostCPU: map[string]time.Duration{}, disk: map[string][2]int64{}}
	if s.cg != nil {
		for _, h := range s.st.Hosts {
			if u, err := s.cg.Usage(h.Cgroup); err == nil {
				m.hostCPU[h.Name] = u
			}
			if h.DiskDev == "" || !s.cg.HasIO() {
				continue
			}
			if r, w, err := s.cg.IOUsage(h.Cgroup, cgroup.Disk{Dev: h.DiskDev}); err == nil {
				m.disk[h.Name] = [2]int64{r, w}
			}
		}
	}
	m.engine, _ = s.engine.Read()
	m.busy, m.total = machineCPU()
	return m
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
func (s *sampler) interval(a, b mark) {
	dt := b.t.Sub(a.t).Seconds()
	if dt <= 0 {
		return
	}
	add := func(metric, subject string, v float64, unit string) {
		s.samples = append(s.samples, archive.Sample{T: b.t, Metric: metric, Subject: subject, Value: v, Unit: unit})
	}
	for _, h := range s.st.Hosts {
		used, ok := b.hostCPU[h.Name]
		if !ok {
			continue
		}
		pct := 100 * (used - a.hostCPU[h.Name]).Seconds() / dt
		add("cpu.utilization", "host "+h.Name, pct, "%")
		if h.CPUs > 0 {
			add("cpu.quota_utilization", "host "+h.Name, pct/h.CPUs, "%")
		}
		if d, ok := b.disk[h.Name]; ok {
			read, write := s.diskRates(h, float64(d[0]-a.disk[h.Name][0]), float64(d[1]-a.disk[h.Name][1]), dt)
			add("disk.read", "host "+h.Name, read, "B/s")
			add("disk.write", "host "+h.Name, write, "B/s")
		}
	}
	if a.engine != nil && b.engine != nil {
		add("cpu.utilization", "engine", 100*(b.engine.CPUSeconds-a.engine.CPUSeconds)/dt, "%")
		for i, d := range b.engine.Dirs {
			if i >= len(a.engine.Dirs) {
				break
			}
			p := a.engine.Dirs[i]
			add("bandwidth.utilized", "link "+d.Name, float64(d.Bytes-p.Bytes)*8/dt, "bit/s")
			add("link.packets", "link "+d.Name, float64(d.Packets-p.Packets)/dt, "packet/s")
			add("link.drops", "link "+d.Name, float64(d.QueueDrops+d.LossDrops-p.QueueDrops-p.LossDrops), "packet")
		}
	}
	if b.total > a.total {
		add("cpu.utilization", "machine", 100*(b.busy-a.busy)/(b.total-a.total), "%")
	}
}

// diskRates turns the bytes a host's disk counters gained over dt seconds
// into rates. Where the counters count I/O on submission (cgroup v1), a
// capped host's burst is not what reached the disk: the throttle holds what
// exceeds the cap and lets it through at the cap, so that is what is
// reported, and the rest waits for the next intervals.
func (s *sampler) diskRates(h testbed.HostPlan, read, written, dt float64) (float64, float64) {
	if s.cg == nil || !s.cg.IOCountedAtSubmission() || !h.DiskCapped() {
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

func (s *sampler) totals(a, b mark) {
	dt := b.t.Sub(a.t).Seconds()
	s.seconds = dt
	s.hostCPU = map[string]float64{}
	s.diskRead, s.diskWrite = map[string]float64{}, map[string]float64{}
	s.dirBytes, s.dirDrops = map[string]uint64{}, map[string]uint64{}
	if dt <= 0 {
		return
	}
	for h, used := range b.hostCPU {
		s.hostCPU[h] = 100 * (used - a.hostCPU[h]).Seconds() / dt
	}
	for h, d := range b.disk {
		s.diskRead[h] = float64(d[0]-a.disk[h][0]) / dt
		s.diskWrite[h] = float64(d[1]-a.disk[h][1]) / dt
	}
	if a.engine != nil && b.engine != nil {
		s.engineCPU = 100 * (b.engine.CPUSeconds - a.engine.CPUSeconds) / dt
		for i, d := range b.engine.Dirs {
			if i < len(a.engine.Dirs) {
				p := a.engine.Dirs[i]
				s.dirBytes[d.Name] = d.Bytes - p.Bytes
				s.dirDrops[d.Name] = d.QueueDrops + d.LossDrops - p.QueueDrops - p.LossDrops
			}
		}
		s.outside = b.engine.PoolDrops - a.engine.PoolDrops
		for i, p := range b.engine.Ports {
			if i < len(a.engine.Ports) {
				s.outside += p.WriteDrops - a.engine.Ports[i].WriteDrops
			}
		}
		s.lateP99 = b.engine.Lateness.P99us
	}
	if b.total > a.total {
		s.machine = 100 * (b.busy - a.busy) / (b.total - a.total)
	}
}

// Limits past which a step's result says more about the test-bed than
// about the scenario.
const (
	// MachineBusyLimit is the machine's CPU use, over all cores, past which
	// the engine competes with the hosts for CPU.
	MachineBusyLimit = 95.0
	// EngineCPULimit is the engine's CPU use in % of one core past which
	// its packet thread is saturated (it also has a writer thread).
	EngineCPULimit = 160.0
)

// limits says whether the test-bed itself limited the step, and how.
func (s *sampler) limits() []string {
	var why []string
	if s.machine >= MachineBusyLimit {
		why = append(why, fmt.Sprintf("the machine's CPUs were %.0f%% busy (%d cores)", s.machine, runtime.NumCPU()))
	}
	if s.engineCPU >= EngineCPULimit {
		why = append(why, fmt.Sprintf("the packet engine used %.0f%% of a core", s.engineCPU))
	}
	if s.outside > 0 {
		why = append(why, fmt.Sprintf("the engine dropped %d packets outside the link model", s.outside))
	}
	return why
}

// machineCPU returns the machine's busy and total CPU seconds from /proc/stat.
func machineCPU() (busy, total float64) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0
	}
	fields := strings.Fields(sc.Text()) // cpu user nice system idle iowait irq softirq steal
	for i, v := range fields[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
		if i == 7 {
			break
		}
	}
	return busy / 100, total / 100 // USER_HZ
}
