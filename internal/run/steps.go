package run

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/mesh"
	"github.com/wanlab/wanlab/internal/workload/probe"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
	"github.com/wanlab/wanlab/internal/workload/throughput"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// outcome is what one step measured: named figures, jobs and samples of
// its own (the sampler adds the test-bed's).
type outcome struct {
	metrics map[string]float64
	jobs    []job.Record
	samples []archive.Sample
	events  []string // warnings worth keeping
}

// stepEnv is what a step runs with.
type stepEnv struct {
	hosts map[string]measure.Endpoint
	state *testbed.State
	tb    *scenario.Testbed
	seed  uint64
	id    string // unique among the run's steps, for role ids
	// jobs counts jobs for the progress bar: expected, finished, failed.
	expected, finished, failed *counter
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add(n int) {
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// collect gathers the jobs roles report, counting them for the progress bar.
type collect struct {
	env  *stepEnv
	mu   sync.Mutex
	jobs []job.Record
}

func (c *collect) add(r job.Record) {
	c.mu.Lock()
	c.jobs = append(c.jobs, r)
	c.mu.Unlock()
	c.env.finished.add(1)
	if r.Status != job.OK {
		c.env.failed.add(1)
	}
}

// execStep runs one step of a workload.
func execStep(ctx context.Context, env *stepEnv, s scenario.Step) (*outcome, error) {
	switch {
	case s.EventDB != nil:
		return runEventDB(ctx, env, s.EventDB)
	case s.TaskFarm != nil:
		return runTaskFarm(ctx, env, s.TaskFarm)
	case s.Mesh != nil:
		return runMesh(ctx, env, s.Mesh)
	case s.Throughput != nil:
		return runThroughput(ctx, env, s.Throughput)
	case s.Transfer != nil:
		return runTransfer(ctx, env, s.Transfer)
	case s.Probe != nil:
		return runProbe(ctx, env, s.Probe)
	case s.Impact != nil:
		return runImpact(ctx, env, s.Impact)
	}
	return nil, errors.New("a step with no workload")
}

func runEventDB(ctx context.Context, env *stepEnv, e *scenario.EventDB) (*outcome, error) {
	srv, err := startRole(ctx, env.hosts[e.Server], env.id+"-server", agent.RoleEventServer,
		eventdb.ServerSpec{Store: e.Store, Model: e.ServerModel, Threads: e.Threads, CPUPerPage: e.ServerCPUPerPage}, true)
	if err != nil {
		return nil, err
	}
	defer srv.drain()
	env.expected.add(e.Jobs * len(e.Clients))
	c := &collect{env: env}
	errs := make([]error, len(e.Clients))
	var wg sync.WaitGroup
	for i, host := range e.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := eventdb.ClientSpec{Store: e.Store, Address: srv.address(), Jobs: e.Jobs, EventsPerJob: e.EventsPerJob,
				FirstJob: i * e.Jobs, CPUPerEvent: e.ClientCPUPerEvent, Timeout: e.Timeout, Seed: env.seed}
			r, err := startRole(ctx, env.hosts[host], fmt.Sprintf("%s-client%d", env.id, i), agent.RoleEventClient, spec, false)
			if err == nil {
				err = r.summary(c.add, &struct{}{})
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	var totals eventdb.ServerTotals
	stopErr := srv.stop(ctx)
	if stopErr == nil {
		stopErr = srv.summary(c.add, &totals)
	}
	o := &outcome{jobs: c.jobs, metrics: jobMetrics(c.jobs)}
	o.metrics["jobs"] = float64(e.Jobs * len(e.Clients))
	o.metrics["jobs_per_client"] = float64(e.Jobs)
	if span := jobSpan(c.jobs); span > 0 {
		// The seeds' server throughput: user data sent over the step.
		o.metrics["throughput_mbps"] = float64(totals.Bytes) * 8 / span / 1e6
	}
	o.metrics["server_pages"] = float64(totals.Pages)
	return o, errors.Join(append(errs, stopErr)...)
}

// jobMetrics summarises jobs: how many ended how, their wall-clock times,
// and their connections' TCP round trips and retransmissions.
func jobMetrics(jobs []job.Record) map[string]float64 {
	m := map[string]float64{}
	var wct []float64
	rtt, withRTT := 0.0, 0
	for _, j := range jobs {
		m["jobs_"+j.Status]++
		if j.Status == job.OK {
			wct = append(wct, j.Wallclock().Seconds())
		}
		if j.TCPRTTms > 0 {
			rtt += j.TCPRTTms
			withRTT++
		}
		m["tcp_retransmits"] += float64(j.TCPRetransmits)
	}
	if withRTT > 0 {
		m["tcp_rtt_mean_ms"] = rtt / float64(withRTT)
	}
	if len(wct) > 0 {
		slices.Sort(wct)
		sum := 0.0
		for _, w := range wct {
			sum += w
		}
		m["mean_wallclock_s"] = sum / float64(len(wct))
		m["min_wallclock_s"] = wct[0]
		m["max_wallclock_s"] = wct[len(wct)-1]
	}
	return m
}

// jobSpan is the seconds from the first job's start to the last one's end.
func jobSpan(jobs []job.Record) float64 {
	if len(jobs) == 0 {
		return 0
	}
	first, last := jobs[0].Start, jobs[0].End
	for _, j := range jobs {
		if j.Start.Before(first) {
			first = j.Start
		}
		if j.End.After(last) {
			last = j.End
		}
	}
	return last.Sub(first).Seconds()
}

func runTaskFarm(ctx context.Context, env *stepEnv, t *scenario.TaskFarm) (*outcome, error) {
	env.expected.add(t.Tasks)
	master, err := startRole(ctx, env.hosts[t.Master], env.id+"-master", agent.RoleFarmMaster, taskfarm.MasterSpec{
		Tasks: t.Tasks, Duration: t.Duration, Work: t.Work, ResultSize: t.ResultSize, Prefetch: t.Prefetch, Workers: t.Count,
		ConnectTimeout: 30 * time.Second}, true)
	if err != nil {
		return nil, err
	}
	defer master.drain()
	var mu sync.Mutex
	var idle, busy float64
	var errs []error
	var wg sync.WaitGroup
	for i, host := range t.Workers {
		n := t.Count / len(t.Workers)
		if i < t.Count%len(t.Workers) {
			n++
		}
		if n == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res taskfarm.WorkerResult
			r, err := startRole(ctx, env.hosts[host], fmt.Sprintf("%s-workers%d", env.id, i), agent.RoleFarmWorkers,
				taskfarm.WorkerSpec{Address: master.address(), Workers: n}, false)
			if err == nil {
				err = r.summary(func(job.Record) {}, &res)
			}
			mu.Lock()
			defer mu.Unlock()
			idle += res.Idle
			busy += res.Busy
			if err == nil && res.Error != "" {
				err = fmt.Errorf("workers on %s: %s", host, res.Error)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	c := &collect{env: env}
	var res taskfarm.Result
	if err := master.summary(c.add, &res); err != nil {
		errs = append(errs, err)
	}
	wg.Wait()
	if res.Error != "" {
		errs = append([]error{fmt.Errorf("master on %s: %s", t.Master, res.Error)}, errs...)
	}
	o := &outcome{jobs: c.jobs, metrics: map[string]float64{
		"tasks": float64(t.Tasks), "tasks_done": float64(res.Completed), "workers": float64(t.Count),
		"seconds": res.Seconds, "task_rate_hz": res.TaskRate, "message_rate_hz": res.MessageRate,
		"result_bytes": float64(res.ResultBytes),
		// What the farm would take with no network at all.
		"ideal_seconds": math.Ceil(float64(t.Tasks)/float64(t.Count)) * t.Duration.Seconds(),
	}}
	if res.Seconds > 0 && o.metrics["ideal_seconds"] > 0 {
		o.metrics["efficiency"] = o.metrics["ideal_seconds"] / res.Seconds
	}
	if idle+busy > 0 {
		o.metrics["worker_idle_share"] = idle / (idle + busy)
	}
	var rtt []time.Duration
	for _, j := range c.jobs {
		rtt = append(rtt, j.Wallclock())
	}
	st := measure.NewStats(rtt)
	o.metrics["roundtrip_p50_ms"], o.metrics["roundtrip_p99_ms"], o.metrics["roundtrip_mean_ms"] = st.P50, st.P99, st.Avg
	return o, errors.Join(errs...)
}

func runMesh(ctx context.Context, env *stepEnv, m *scenario.Mesh) (*outcome, error) {
	addr := map[string]string{}
	for _, h := range env.state.Hosts {
		addr[h.Name] = h.Addr
	}
	nodes := make([]*role, len(m.Hosts))
	var errs []error
	for i, host := range m.Hosts {
		spec := agent.MeshNodeSpec{Port: m.Port, Disk: m.Disk, NodeSpec: mesh.NodeSpec{
			Peers: meshPeers(env, host, m), Sizes: m.Sizes, Streams: m.Streams, MaxWait: m.MaxWait, Duration: m.Duration,
			Seed: env.seed + uint64(i), FirstJob: i * 1_000_000,
		}}
		r, err := startRole(ctx, env.hosts[host], fmt.Sprintf("%s-node%d", env.id, i), agent.RoleMeshNode, spec, true)
		if err != nil {
			errs = append(errs, err)
			break
		}
		nodes[i] = r
	}
	c := &collect{env: env}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sum mesh.Summary
			if err := n.summary(func(r job.Record) { env.expected.add(1); c.add(r) }, &sum); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Every node serves the others until all have finished their loops.
	for _, n := range nodes {
		if n != nil {
			n.stop(ctx)
			n.drain()
		}
	}
	o := &outcome{jobs: c.jobs, metrics: jobMetrics(c.jobs)}
	var bytes int64
	for _, j := range c.jobs {
		bytes += j.Bytes
	}
	o.metrics["transfers"] = float64(len(c.jobs))
	o.metrics["bytes"] = float64(bytes)
	if span := jobSpan(c.jobs); span > 0 {
		o.metrics["aggregate_mbps"] = float64(bytes) * 8 / span / 1e6
	}
	return o, errors.Join(errs...)
}

// meshPeers weights each peer of host by its site's bandwidth (the lower of
// its access link's two directions), or for a host without a site by the
// bottleneck of the path to it.
func meshPeers(env *stepEnv, host string, m *scenario.Mesh) []mesh.Peer {
	var peers []mesh.Peer
	for _, p := range m.Hosts {
		if p == host {
			continue
		}
		weight := 10e9 // an unlimited path
		if h, _ := env.tb.Host(p); h.Site != "" {
			site, _ := env.tb.Site(h.Site)
			weight = minRate(float64(site.Up.Rate), float64(site.Down.Rate))
		} else {
			for _, pp := range env.state.Paths {
				if pp.From == host && pp.To == p && pp.Bottleneck > 0 {
					weight = pp.Bottleneck
				}
			}
		}
		addr := ""
		for _, h := range env.state.Hosts {
			if h.Name == p {
				addr = fmt.Sprintf("%s:%d", h.Addr, m.Port)
			}
		}
		peers = append(peers, mesh.Peer{Name: p, Address: addr, Weight: weight / 1e6})
	}
	return peers
}

// minRate is the lower of two rates where 0 means unlimited.
func minRate(a, b float64) float64 {
	switch {
	case a == 0 && b == 0:
		return 10e9
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

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
	o := &outcome{samples: r.Samples(start), metrics: map[string]float64{
		"throughput_mbps": r.End.SumReceived.BitsPerSecond / 1e6,
		"streams":         float64(t.Streams),
		"window_bytes":    float64(t.Window),
		"sender_cpu_pct":  r.End.CPU.SenderHost, "receiver_cpu_pct": r.End.CPU.ReceiverHost,
	}}
	if rt := r.End.SumSent.Retransmits; rt != nil {
		o.metrics["retransmits"] = float64(*rt)
	}
	if t.Protocol == "udp" {
		o.metrics["lost_percent"] = r.End.SumReceived.LostPercent
		o.metrics["jitter_ms"] = r.End.SumReceived.JitterMS
	}
	return o, err
}

func runTransfer(ctx context.Context, env *stepEnv, t *scenario.Transfer) (*outcome, error) {
	spec := measure.TransferSpec{Spec: transfer.Spec{Streams: t.Streams, Window: int(t.Window), Block: t.Block, Compress: t.Compress}, Size: t.Size, Roundtrip: t.Roundtrip, CorruptAt: -1}
	r, err := measure.Transfer(ctx, env.hosts[t.From], env.hosts[t.To], spec)
	if r == nil || r.There == nil {
		return nil, err
	}
	o := &outcome{metrics: map[string]float64{"streams": float64(t.Streams), "compress": boolFigure(t.Compress), "checksum_ok": boolFigure(r.ChecksumOK)}}
	for _, leg := range []struct {
		name string
		l    *measure.TransferLeg
	}{{"there", r.There}, {"back", r.Back}} {
		if leg.l == nil {
			continue
		}
		o.metrics[leg.name+"_mbps"] = leg.l.BitsPerSecond / 1e6
		o.metrics[leg.name+"_seconds"] = leg.l.Seconds
		o.metrics[leg.name+"_compression_ratio"] = leg.l.CompressionRatio
		o.metrics[leg.name+"_sender_cpu_pct"] = leg.l.CPU.SenderHost
		end := time.Now()
		status := job.OK
		if !leg.l.ChecksumOK {
			status = job.Corrupt
		}
		o.jobs = append(o.jobs, job.Record{ID: len(o.jobs), Host: leg.l.From, Subject: leg.l.From + "->" + leg.l.To,
			Start: end.Add(-time.Duration(leg.l.Seconds * float64(time.Second))), End: end, Bytes: int64(leg.l.Bytes), Status: status})
	}
	o.metrics["throughput_mbps"] = o.metrics["there_mbps"]
	return o, err
}

func boolFigure(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func runProbe(ctx context.Context, env *stepEnv, p *scenario.Probe) (*outcome, error) {
	r, err := measure.Probe(ctx, env.hosts[p.From], env.hosts[p.To], probe.Spec{Count: p.Count, Interval: p.Interval, Size: probe.HeaderLen, Timeout: 2 * time.Second})
	if r == nil {
		return nil, err
	}
	return &outcome{samples: r.Samples(), metrics: map[string]float64{
		"rtt_p50_ms": r.RTTms.P50, "rtt_p99_ms": r.RTTms.P99, "rtt_avg_ms": r.RTTms.Avg, "jitter_ms": r.JitterMS, "lost_percent": r.LostPercent,
	}}, err
}

func runImpact(ctx context.Context, env *stepEnv, i *scenario.Impact) (*outcome, error) {
	spec := measure.ImpactSpec{Phase: i.Phase, Interval: i.Interval, Size: probe.HeaderLen,
		Load: throughput.Spec{Protocol: throughput.TCP, Streams: i.Streams, Duration: i.Duration, Window: int(i.Window), Interval: time.Second}}
	start := time.Now()
	r, err := measure.Impact(ctx, env.hosts[i.ProbeFrom], env.hosts[i.ProbeTo], env.hosts[i.From], env.hosts[i.To], spec)
	if r == nil {
		return nil, err
	}
	o := &outcome{metrics: map[string]float64{"rtt_inflation_ms": r.RTTInflationMS, "loss_increase_points": r.LossIncreasePoints}}
	for _, phase := range []struct {
		name string
		p    *measure.ProbeResult
	}{{"idle", r.Before}, {"loaded", r.During}, {"after", r.After}} {
		if phase.p == nil {
			continue
		}
		o.metrics[phase.name+"_rtt_p50_ms"] = phase.p.RTTms.P50
		o.metrics[phase.name+"_rtt_max_ms"] = phase.p.RTTms.Max
		o.metrics[phase.name+"_lost_percent"] = phase.p.LostPercent
		o.samples = append(o.samples, phase.p.Samples()...)
	}
	if r.Load != nil {
		o.metrics["load_mbps"] = r.Load.End.SumReceived.BitsPerSecond / 1e6
		o.samples = append(o.samples, r.Load.Samples(start)...)
	}
	return o, err
}
